package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	addPendingQuery = `
		INSERT INTO pending_action (key, kind, room_id, requester, payload, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)`
	getPendingQuery = `
		SELECT key, kind, room_id, requester, payload, created_at, expires_at, resolved_at, resolution
		FROM pending_action WHERE key = $1`
	resolvePendingQuery = `
		UPDATE pending_action SET resolved_at = $1, resolution = $2 WHERE key = $3 AND resolved_at = 0`
	clearPendingQuery = `
		UPDATE pending_action SET resolved_at = $1, resolution = 'cleared'
		WHERE room_id = $2 AND resolved_at = 0 AND expires_at > $1
		RETURNING kind`
	movePendingQuery = `
		UPDATE pending_action SET requester = $3 WHERE requester = $2 AND resolved_at = 0 AND expires_at > $1`
)

var _ core.PendingStore = (*Store)(nil)

// AddPending records a new pending action.
func (s *Store) AddPending(ctx context.Context, p core.Pending) error {
	_, err := s.DB.Exec(ctx, addPendingQuery, p.Key, p.Kind, p.RoomID, p.Requester, p.Payload,
		p.CreatedAt.UnixMilli(), p.ExpiresAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("add pending %q: %w", p.Key, err)
	}
	return nil
}

// GetPending returns the pending action asked by the notice key.
func (s *Store) GetPending(ctx context.Context, key string) (core.Pending, error) {
	var p core.Pending
	var created, expires, resolved int64
	err := s.DB.QueryRow(ctx, getPendingQuery, key).Scan(&p.Key, &p.Kind, &p.RoomID, &p.Requester, &p.Payload,
		&created, &expires, &resolved, &p.Resolution)
	if err != nil {
		return p, notFound(err, "pending action "+key)
	}
	p.CreatedAt, p.ExpiresAt = time.UnixMilli(created), time.UnixMilli(expires)
	if resolved > 0 {
		p.ResolvedAt = time.UnixMilli(resolved)
	}
	return p, nil
}

// ResolvePending marks a pending action resolved unless it already was.
func (s *Store) ResolvePending(ctx context.Context, key, resolution string, at time.Time) (bool, error) {
	res, err := s.DB.Exec(ctx, resolvePendingQuery, at.UnixMilli(), resolution, key)
	if err != nil {
		return false, fmt.Errorf("resolve pending %q: %w", key, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// MovePending gives the unresolved, unexpired pending actions from asked
// for to to.
func (s *Store) MovePending(ctx context.Context, from, to string, at time.Time) (int, error) {
	res, err := s.DB.Exec(ctx, movePendingQuery, at.UnixMilli(), from, to)
	if err != nil {
		return 0, fmt.Errorf("move the pending actions of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// ClearPending drops the unresolved, unexpired pending actions of a room.
func (s *Store) ClearPending(ctx context.Context, roomID string, at time.Time) (map[string]int, error) {
	rows, err := s.DB.Query(ctx, clearPendingQuery, at.UnixMilli(), roomID)
	kinds, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], err).AsList()
	if err != nil {
		return nil, fmt.Errorf("clear pending in %s: %w", roomID, err)
	}
	counts := map[string]int{}
	for _, k := range kinds {
		counts[k]++
	}
	return counts, nil
}
