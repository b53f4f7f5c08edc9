package store

import (
	"context"
	"fmt"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

const (
	insertTripwireTokenQuery = `INSERT INTO tripwire_token (id, citizen, hash, label, created_at) VALUES ($1, $2, $3, $4, $5)`
	deleteTripwireTokenQuery = `DELETE FROM tripwire_token WHERE citizen = $1 AND id = $2`
	tripwireTokenOwnerQuery  = `SELECT citizen FROM tripwire_token WHERE hash = $1`
	listTripwireTokensQuery  = `SELECT id, citizen, label, created_at FROM tripwire_token WHERE citizen = $1 ORDER BY created_at, id`
	moveTripwireTokensQuery  = `UPDATE tripwire_token SET citizen = $2 WHERE citizen = $1`
)

// TripwireTokenQuery keeps citizens' personal API tokens, by hash.
type TripwireTokenQuery struct {
	db *dbutil.Database
}

var _ tripwire.TokenStore = (*TripwireTokenQuery)(nil)

// TripwireTokens returns the personal API token queries.
func (s *Store) TripwireTokens() *TripwireTokenQuery { return &TripwireTokenQuery{db: s.DB} }

// InsertToken stores a token under its hash.
func (q *TripwireTokenQuery) InsertToken(ctx context.Context, tok tripwire.Token, hash string) error {
	_, err := q.db.Exec(ctx, insertTripwireTokenQuery, tok.ID, tok.Citizen, hash, tok.Label, tok.CreatedAt.UnixMilli())
	return err
}

// MoveTokens gives every token of from to to.
func (q *TripwireTokenQuery) MoveTokens(ctx context.Context, from, to string) (int, error) {
	res, err := q.db.Exec(ctx, moveTripwireTokensQuery, from, to)
	if err != nil {
		return 0, fmt.Errorf("move the tokens of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// DeleteToken deletes one of citizen's tokens.
func (q *TripwireTokenQuery) DeleteToken(ctx context.Context, citizen, id string) error {
	res, err := q.db.Exec(ctx, deleteTripwireTokenQuery, citizen, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("token %s: %w", id, core.ErrNotFound)
	}
	return nil
}

// TokenCitizen returns whose token a hash is.
func (q *TripwireTokenQuery) TokenCitizen(ctx context.Context, hash string) (string, error) {
	var citizen string
	err := q.db.QueryRow(ctx, tripwireTokenOwnerQuery, hash).Scan(&citizen)
	return citizen, notFound(err, "token")
}

// ListTokens lists citizen's tokens, oldest first.
func (q *TripwireTokenQuery) ListTokens(ctx context.Context, citizen string) ([]tripwire.Token, error) {
	rows, err := q.db.Query(ctx, listTripwireTokensQuery, citizen)
	return dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (tok tripwire.Token, err error) {
		var created int64
		err = row.Scan(&tok.ID, &tok.Citizen, &tok.Label, &created)
		tok.CreatedAt = timeOf(created)
		return
	}, err).AsList()
}
