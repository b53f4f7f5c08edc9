package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	linkedAccountQuery = `SELECT account FROM identity_link WHERE puppet = $1`
	addLinkCodeQuery   = `INSERT INTO link_code (code, from_user, network, redeemer, expires_at) VALUES ($1, $2, $3, $4, $5)`
	getLinkCodeQuery   = `SELECT code, from_user, network, redeemer, tries, expires_at FROM link_code WHERE code = $1`
	takeLinkCodeQuery  = `DELETE FROM link_code WHERE code = $1 RETURNING code, from_user, network, redeemer, tries, expires_at`
	missLinkCodeQuery  = `UPDATE link_code SET tries = tries + 1 WHERE code = $1 RETURNING tries`
	addLinkFailQuery   = `INSERT INTO link_failure (account, at) VALUES ($1, $2)`
	countLinkFailQuery = `SELECT COUNT(*) FROM link_failure WHERE account = $1 AND at > $2`
	putLinkQuery       = `INSERT INTO identity_link (puppet, account, network, linked_at) VALUES ($1, $2, $3, $4) ON CONFLICT (puppet) DO NOTHING`
	deleteLinkQuery    = `DELETE FROM identity_link WHERE puppet = $1 AND account = $2`
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
	_, err := s.DB.Exec(ctx, addLinkCodeQuery, c.Code, c.From, c.Network, c.Redeemer, c.ExpiresAt.UnixMilli())
	return err
}

// GetLinkCode returns a link code without using it up.
func (s *Store) GetLinkCode(ctx context.Context, code string) (core.LinkCode, error) {
	return scanLinkCode(s.DB.QueryRow(ctx, getLinkCodeQuery, code))
}

// TakeLinkCode returns and deletes a link code.
func (s *Store) TakeLinkCode(ctx context.Context, code string) (core.LinkCode, error) {
	return scanLinkCode(s.DB.QueryRow(ctx, takeLinkCodeQuery, code))
}

func scanLinkCode(row interface{ Scan(...any) error }) (core.LinkCode, error) {
	var c core.LinkCode
	var expires int64
	err := row.Scan(&c.Code, &c.From, &c.Network, &c.Redeemer, &c.Tries, &expires)
	c.ExpiresAt = time.UnixMilli(expires)
	return c, notFound(err, "link code")
}

// MissLinkCode counts a wrong try on a code and returns the tries so far.
func (s *Store) MissLinkCode(ctx context.Context, code string) (int, error) {
	var tries int
	err := s.DB.QueryRow(ctx, missLinkCodeQuery, code).Scan(&tries)
	return tries, notFound(err, "link code")
}

// AddLinkFailure records a wrong link code sent from an account.
func (s *Store) AddLinkFailure(ctx context.Context, account string, at time.Time) error {
	_, err := s.DB.Exec(ctx, addLinkFailQuery, account, at.UnixMilli())
	return err
}

// LinkFailures counts the wrong link codes an account sent after since.
func (s *Store) LinkFailures(ctx context.Context, account string, since time.Time) (int, error) {
	var n int
	err := s.DB.QueryRow(ctx, countLinkFailQuery, account, since.UnixMilli()).Scan(&n)
	return n, err
}

// PutLink records an identity link; a puppet already linked is never
// relinked (core.ErrDuplicate).
func (s *Store) PutLink(ctx context.Context, l core.IdentityLink) error {
	res, err := s.DB.Exec(ctx, putLinkQuery, l.Puppet, l.Account, l.Network, l.LinkedAt.UnixMilli())
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("link of %s: %w", l.Puppet, core.ErrDuplicate)
	}
	return nil
}

// DeleteLink removes the link of a puppet to account.
func (s *Store) DeleteLink(ctx context.Context, puppet, account string) error {
	res, err := s.DB.Exec(ctx, deleteLinkQuery, puppet, account)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("link of %s: %w", puppet, core.ErrNotFound)
	}
	return nil
}

// DirectRoom returns the direct room Jarvis shares with a user.
func (s *Store) DirectRoom(ctx context.Context, userID string) (string, error) {
	return s.Outbox().DirectRoom(ctx, userID)
}
