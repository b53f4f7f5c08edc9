package store

import (
	"context"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	linkedAccountQuery = `SELECT account FROM identity_link WHERE puppet = $1`
	addLinkCodeQuery   = `INSERT INTO link_code (code, from_user, network, expires_at) VALUES ($1, $2, $3, $4)`
	takeLinkCodeQuery  = `DELETE FROM link_code WHERE code = $1 RETURNING code, from_user, network, expires_at`
	putLinkQuery       = `
		INSERT INTO identity_link (puppet, account, network, linked_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (puppet) DO UPDATE SET account = excluded.account, network = excluded.network, linked_at = excluded.linked_at`
)

var _ core.IdentityStore = (*Store)(nil)

// LinkedAccount returns the Matrix account a puppet is linked to.
func (s *Store) LinkedAccount(ctx context.Context, puppet string) (string, error) {
	var account string
	err := s.DB.QueryRow(ctx, linkedAccountQuery, puppet).Scan(&account)
	return account, notFound(err, "link of "+puppet)
}

// AddLinkCode stores a one-time link code.
func (s *Store) AddLinkCode(ctx context.Context, c core.LinkCode) error {
	_, err := s.DB.Exec(ctx, addLinkCodeQuery, c.Code, c.From, c.Network, c.ExpiresAt.UnixMilli())
	return err
}

// TakeLinkCode returns and deletes a link code.
func (s *Store) TakeLinkCode(ctx context.Context, code string) (core.LinkCode, error) {
	var c core.LinkCode
	var expires int64
	err := s.DB.QueryRow(ctx, takeLinkCodeQuery, code).Scan(&c.Code, &c.From, &c.Network, &expires)
	c.ExpiresAt = time.UnixMilli(expires)
	return c, notFound(err, "link code")
}

// PutLink records an identity link.
func (s *Store) PutLink(ctx context.Context, l core.IdentityLink) error {
	_, err := s.DB.Exec(ctx, putLinkQuery, l.Puppet, l.Account, l.Network, l.LinkedAt.UnixMilli())
	return err
}
