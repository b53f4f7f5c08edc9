package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/lease"
)

// The lease queries write NOW where they judge time; LeaseQuery.query
// puts in the clock that judges it (see leaseClock).
const (
	// acquireLeaseQuery is the whole compare-and-swap of Acquire: insert the
	// first lease, or take over a lease whose holder is us or whose expiry
	// has passed. Every SET expression reads the row as it was. $3 is the
	// lease's length in milliseconds.
	acquireLeaseQuery = `
		INSERT INTO workspace_lease (workspace_id, holder, epoch, acquired_at, expires_at)
		VALUES ($1, $2, 1, NOW, NOW + CAST($3 AS BIGINT))
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
	getLiveLeaseQuery = `
		SELECT workspace_id, holder, epoch, acquired_at, expires_at FROM workspace_lease
		WHERE workspace_id = $1 AND expires_at > NOW`
	renewLeaseQuery = `
		UPDATE workspace_lease SET expires_at = NOW + CAST($4 AS BIGINT)
		WHERE workspace_id = $1 AND holder = $2 AND epoch = $3 AND expires_at > NOW`
	releaseLeaseQuery = `
		UPDATE workspace_lease SET expires_at = NOW
		WHERE workspace_id = $1 AND holder = $2 AND epoch = $3 AND expires_at > NOW`
	// fenceLeaseQuery reads the row. Inside a transaction on PostgreSQL,
	// FOR SHARE keeps it locked until the transaction ends (SQLite's
	// immediate transactions hold the write lock already, and know no FOR
	// SHARE), so no takeover can slip in before commit; outside one (the
	// sender's check) a lock would only cost a write.
	fenceLeaseQuery = `
		SELECT 1 FROM workspace_lease
		WHERE workspace_id = $1 AND holder = $2 AND epoch = $3 AND expires_at > NOW`
)

// postgresNow is the database's clock in Unix milliseconds: the start of
// the statement, one value however often a statement reads it.
const postgresNow = "(extract(epoch from statement_timestamp()) * 1000)::bigint"

// LeaseQuery keeps the workspace lease.
type LeaseQuery struct {
	db *dbutil.Database
	// dbClock says that the database's clock judges the lease, not the
	// now the caller passes.
	dbClock bool
	// instance names the store in the notification of a release.
	instance string
}

var _ lease.Store = (*LeaseQuery)(nil)

// Leases returns the workspace lease queries.
//
// Whose clock judges the lease matters once two hosts share it. On
// PostgreSQL the Jarvis processes may run on several hosts, and each
// host's clock may be off: a standby whose clock runs ahead by more than
// the lease's length would find a live lease expired and take it over.
// So there the database's clock judges every expiry, and the caller's now
// only says how long a lease lasts (expires minus now). SQLite is one
// file on one host, whose clock every process reads alike, so the
// caller's now judges there. Tests that set the clock by hand ask for
// the caller's clock on PostgreSQL as well (JudgeLeasesByCallerClock).
func (s *Store) Leases() *LeaseQuery {
	return &LeaseQuery{db: s.DB, dbClock: s.DB.Dialect == dbutil.Postgres && !s.callerClock, instance: s.instance}
}

// JudgeLeasesByCallerClock makes the lease queries judge time by the now
// their callers pass on PostgreSQL too, for tests that drive a settable
// clock. Call it before the store is used.
func (s *Store) JudgeLeasesByCallerClock() { s.callerClock = true }

// query puts the judging clock into a lease query: the database's, or
// the caller's now as one more parameter after args. Times and lengths
// are Unix milliseconds.
func (q *LeaseQuery) query(query string, now time.Time, args ...any) (string, []any) {
	if q.dbClock {
		return strings.ReplaceAll(query, "NOW", postgresNow), args
	}
	return strings.ReplaceAll(query, "NOW", fmt.Sprintf("CAST($%d AS BIGINT)", len(args)+1)), append(args, now.UnixMilli())
}

// Acquire takes the lease for holder when it is free, expired or holder's.
func (q *LeaseQuery) Acquire(ctx context.Context, workspaceID, holder string, now, expires time.Time) (lease.Record, bool, error) {
	query, args := q.query(acquireLeaseQuery, now, workspaceID, holder, expires.Sub(now).Milliseconds())
	rec, err := scanLease(q.db.QueryRow(ctx, query, args...))
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
	query, args := q.query(renewLeaseQuery, now, workspaceID, holder, epoch, expires.Sub(now).Milliseconds())
	return q.exec(ctx, query, args...)
}

// Release ends holder's lease now if it still holds it with epoch, and
// tells the standbys listening on LeaseReleased.
func (q *LeaseQuery) Release(ctx context.Context, workspaceID, holder string, epoch int64, now time.Time) error {
	query, args := q.query(releaseLeaseQuery, now, workspaceID, holder, epoch)
	err := q.exec(ctx, query, args...)
	if errors.Is(err, core.ErrStaleEpoch) {
		return nil
	}
	if err != nil {
		return err
	}
	return notify(ctx, q.db, LeaseReleased, q.instance)
}

// Get returns the lease of a workspace.
func (q *LeaseQuery) Get(ctx context.Context, workspaceID string) (lease.Record, error) {
	rec, err := scanLease(q.db.QueryRow(ctx, getLeaseQuery, workspaceID))
	return rec, notFound(err, "lease of workspace "+workspaceID)
}

// Live returns the lease of a workspace if it has not expired, by the
// clock that judges leases, or ErrNotFound.
func (q *LeaseQuery) Live(ctx context.Context, workspaceID string, now time.Time) (lease.Record, error) {
	query, args := q.query(getLiveLeaseQuery, now, workspaceID)
	rec, err := scanLease(q.db.QueryRow(ctx, query, args...))
	return rec, notFound(err, "live lease of workspace "+workspaceID)
}

// Fence checks, and inside a transaction keeps, holder's live lease with epoch.
func (q *LeaseQuery) Fence(ctx context.Context, workspaceID, holder string, epoch int64, now time.Time) error {
	query, args := q.query(fenceLeaseQuery, now, workspaceID, holder, epoch)
	if q.db.Dialect == dbutil.Postgres && ctx.Value(inTxKey{}) != nil {
		query += " FOR SHARE"
	}
	var one int
	err := q.db.QueryRow(ctx, query, args...).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return core.ErrStaleEpoch
	}
	return err
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
