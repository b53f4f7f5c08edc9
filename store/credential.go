package store

import (
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

const (
	insertCredentialQuery = `
		INSERT INTO api_credential (id, role, agent, hash, signing_key, created_at) VALUES ($1, $2, $3, $4, $5, $6)`
	credentialByHashQuery = `
		SELECT id, role, agent, created_at, last_used_at, signing_key FROM api_credential WHERE hash = $1`
	listCredentialsQuery = `
		SELECT id, role, agent, created_at, last_used_at FROM api_credential ORDER BY created_at, id`
	deleteCredentialQuery = `DELETE FROM api_credential WHERE id = $1`
	touchCredentialQuery  = `UPDATE api_credential SET last_used_at = $2 WHERE id = $1 AND last_used_at < $2`
	// touchCredentialsPGQuery is touchCredentialQuery for any number of
	// credentials in one statement.
	touchCredentialsPGQuery = `
		UPDATE api_credential AS c SET last_used_at = u.at
		FROM unnest($1::text[], $2::bigint[]) AS u (id, at)
		WHERE c.id = u.id AND c.last_used_at < u.at`
)

// CredentialQuery keeps the HTTP API's credentials, by token hash.
type CredentialQuery struct {
	db *dbutil.Database
	// st runs its write transactions, fenced by the lease: a standby's API
	// authenticates requests too, and must not record their use.
	st *Store
}

var _ credential.Store = (*CredentialQuery)(nil)

// Credentials returns the API credential queries.
func (s *Store) Credentials() *CredentialQuery { return &CredentialQuery{db: s.DB, st: s} }

// InsertCredential stores a credential under its token hash.
func (q *CredentialQuery) InsertCredential(ctx context.Context, c credential.Credential, hash string, key []byte) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		_, err := q.db.Exec(ctx, insertCredentialQuery, c.ID, string(c.Role), c.Agent, hash, hex.EncodeToString(key),
			c.CreatedAt.UnixMilli())
		return err
	})
}

// CredentialByHash returns the credential of a token hash and its signing
// key; core.ErrNotFound when there is none.
func (q *CredentialQuery) CredentialByHash(ctx context.Context, hash string) (credential.Credential, []byte, error) {
	var keyHex string
	c, err := scanCredential(q.db.QueryRow(ctx, credentialByHashQuery, hash), &keyHex)
	if err != nil {
		return c, nil, notFound(err, "credential")
	}
	if keyHex == "" {
		return c, nil, nil
	}
	key, err := hex.DecodeString(keyHex)
	if err != nil {
		return c, nil, fmt.Errorf("credential %s: signing key: %w", c.ID, err)
	}
	return c, key, nil
}

// ListCredentials lists every credential, oldest first.
func (q *CredentialQuery) ListCredentials(ctx context.Context) ([]credential.Credential, error) {
	rows, err := q.db.Query(ctx, listCredentialsQuery)
	return dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (credential.Credential, error) {
		return scanCredential(row)
	}, err).AsList()
}

// DeleteCredential deletes a credential; core.ErrNotFound when there is none.
func (q *CredentialQuery) DeleteCredential(ctx context.Context, id string) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		res, err := q.db.Exec(ctx, deleteCredentialQuery, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("credential %s: %w", id, core.ErrNotFound)
		}
		return nil
	})
}

// TouchCredentials records credentials' last use, in one transaction (on
// PostgreSQL one statement).
func (q *CredentialQuery) TouchCredentials(ctx context.Context, uses map[string]time.Time) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		if q.db.Dialect == dbutil.Postgres {
			ids, at := make([]string, 0, len(uses)), make([]int64, 0, len(uses))
			for id, t := range uses {
				ids, at = append(ids, id), append(at, t.UnixMilli())
			}
			_, err := q.db.Exec(ctx, touchCredentialsPGQuery, ids, at)
			return err
		}
		for id, t := range uses {
			if _, err := q.db.Exec(ctx, touchCredentialQuery, id, t.UnixMilli()); err != nil {
				return err
			}
		}
		return nil
	})
}

// scanCredential reads a credential row; extra receives the columns after
// last_used_at.
func scanCredential(row dbutil.Scannable, extra ...any) (credential.Credential, error) {
	var c credential.Credential
	var role string
	var created, used int64
	if err := row.Scan(append([]any{&c.ID, &role, &c.Agent, &created, &used}, extra...)...); err != nil {
		return c, err
	}
	c.Role = credential.Role(role)
	c.CreatedAt = time.UnixMilli(created).UTC()
	if used > 0 {
		c.LastUsedAt = time.UnixMilli(used).UTC()
	}
	return c, nil
}
