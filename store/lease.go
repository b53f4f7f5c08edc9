package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/lease"
)

const (
	// acquireLeaseQuery is the whole compare-and-swap of Acquire: insert the
	// first lease, or take over a lease whose holder is us or whose expiry
	// has passed. Every SET expression reads the row as it was.
	acquireLeaseQuery = `
		INSERT INTO workspace_lease (workspace_id, holder, epoch, acquired_at, expires_at)
		VALUES ($1, $2, 1, $3, $4)
		ON CONFLICT (workspace_id) DO UPDATE SET
			epoch = CASE WHEN workspace_lease.holder = excluded.holder AND workspace_lease.expires_at > excluded.acquired_at
				THEN workspace_lease.epoch ELSE workspace_lease.epoch + 1 END,
			acquired_at = CASE WHEN workspace_lease.holder = excluded.holder AND workspace_lease.expires_at > excluded.acquired_at
				THEN workspace_lease.acquired_at ELSE excluded.acquired_at END,
			holder = excluded.holder,
			expires_at = excluded.expires_at
		WHERE workspace_lease.holder = excluded.holder OR workspace_lease.expires_at <= excluded.acquired_at
		RETURNING workspace_id, holder, epoch, acquired_at, expires_at`
	getLeaseQuery = `
		SELECT workspace_id, holder, epoch, acquired_at, expires_at FROM workspace_lease WHERE workspace_id = $1`
	renewLeaseQuery = `
		UPDATE workspace_lease SET expires_at = $5
		WHERE workspace_id = $1 AND holder = $2 AND epoch = $3 AND expires_at > $4`
	releaseLeaseQuery = `
		UPDATE workspace_lease SET expires_at = $4
		WHERE workspace_id = $1 AND holder = $2 AND epoch = $3 AND expires_at > $4`
	// fenceLeaseQuery changes nothing, but as an UPDATE it locks the row on
	// PostgreSQL until the transaction ends (SQLite's immediate transactions
	// hold the write lock already), so no takeover can slip in before commit.
	fenceLeaseQuery = `
		UPDATE workspace_lease SET epoch = epoch
		WHERE workspace_id = $1 AND holder = $2 AND epoch = $3 AND expires_at > $4`
)

// LeaseQuery keeps the workspace lease.
type LeaseQuery struct {
	db *dbutil.Database
}

var _ lease.Store = (*LeaseQuery)(nil)

// Leases returns the workspace lease queries.
func (s *Store) Leases() *LeaseQuery { return &LeaseQuery{db: s.DB} }

// Acquire takes the lease for holder when it is free, expired or holder's.
func (q *LeaseQuery) Acquire(ctx context.Context, workspaceID, holder string, now, expires time.Time) (lease.Record, bool, error) {
	rec, err := scanLease(q.db.QueryRow(ctx, acquireLeaseQuery, workspaceID, holder, now.UnixMilli(), expires.UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		rec, err = q.Get(ctx, workspaceID)
		return rec, false, err
	}
	if err != nil {
		return rec, false, fmt.Errorf("acquire lease: %w", err)
	}
	return rec, true, nil
}

// Renew extends holder's lease if it still holds it with epoch.
func (q *LeaseQuery) Renew(ctx context.Context, workspaceID, holder string, epoch int64, now, expires time.Time) error {
	return q.exec(ctx, renewLeaseQuery, workspaceID, holder, epoch, now.UnixMilli(), expires.UnixMilli())
}

// Release ends holder's lease now if it still holds it with epoch.
func (q *LeaseQuery) Release(ctx context.Context, workspaceID, holder string, epoch int64, now time.Time) error {
	err := q.exec(ctx, releaseLeaseQuery, workspaceID, holder, epoch, now.UnixMilli())
	if errors.Is(err, core.ErrStaleEpoch) {
		return nil
	}
	return err
}

// Get returns the lease of a workspace.
func (q *LeaseQuery) Get(ctx context.Context, workspaceID string) (lease.Record, error) {
	rec, err := scanLease(q.db.QueryRow(ctx, getLeaseQuery, workspaceID))
	return rec, notFound(err, "lease of workspace "+workspaceID)
}

// Fence checks, and inside a transaction keeps, holder's live lease with epoch.
func (q *LeaseQuery) Fence(ctx context.Context, workspaceID, holder string, epoch int64, now time.Time) error {
	return q.exec(ctx, fenceLeaseQuery, workspaceID, holder, epoch, now.UnixMilli())
}

// exec runs a conditional update of the lease row; no row changed means
// the caller's epoch is stale.
func (q *LeaseQuery) exec(ctx context.Context, query string, args ...any) error {
	res, err := q.db.Exec(ctx, query, args...)
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return core.ErrStaleEpoch
	}
	return nil
}

func scanLease(row dbutil.Scannable) (lease.Record, error) {
	var rec lease.Record
	var acquiredAt, expiresAt int64
	if err := row.Scan(&rec.WorkspaceID, &rec.Holder, &rec.Epoch, &acquiredAt, &expiresAt); err != nil {
		return rec, err
	}
	rec.AcquiredAt = time.UnixMilli(acquiredAt)
	rec.ExpiresAt = time.UnixMilli(expiresAt)
	return rec, nil
}
