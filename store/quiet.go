package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/quiet"
)

const (
	getQuietHoursQuery = `SELECT quiet_from, quiet_to, time_zone FROM person WHERE user_id = $1`
	setQuietHoursQuery = `INSERT INTO person (user_id, quiet_from, quiet_to) VALUES ($1, $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET quiet_from = excluded.quiet_from, quiet_to = excluded.quiet_to`
	holdPushQuery   = `INSERT INTO held_push (owner, tripwire_id, trip, label, summary, at) VALUES ($1, $2, $3, $4, $5, $6)`
	heldOwnersQuery = `SELECT DISTINCT owner FROM held_push ORDER BY owner`
	takeHeldQuery   = `DELETE FROM held_push WHERE owner = $1 RETURNING id, owner, tripwire_id, trip, label, summary, at`
	moveHeldQuery   = `UPDATE held_push SET owner = $2 WHERE owner = $1`
)

// QuietQuery keeps people's quiet hours and the pushes they hold.
type QuietQuery struct {
	db *dbutil.Database
}

var _ quiet.Store = (*QuietQuery)(nil)

// Quiet returns the quiet-hours queries.
func (s *Store) Quiet() *QuietQuery { return &QuietQuery{db: s.DB} }

// QuietHours returns a person's quiet hours and time zone.
func (q *QuietQuery) QuietHours(ctx context.Context, user string) (quiet.Hours, string, error) {
	var from, to int
	var zone string
	err := q.db.QueryRow(ctx, getQuietHoursQuery, user).Scan(&from, &to, &zone)
	if errors.Is(err, sql.ErrNoRows) {
		return quiet.Off, "", nil
	}
	if err != nil || from < 0 || to < 0 {
		return quiet.Off, zone, err
	}
	return quiet.Hours{Set: true, From: from, To: to}, zone, nil
}

// SetQuietHours records a person's quiet hours; quiet.Off clears them.
func (q *QuietQuery) SetQuietHours(ctx context.Context, user string, h quiet.Hours) error {
	from, to := h.From, h.To
	if !h.Set {
		from, to = -1, -1
	}
	_, err := q.db.Exec(ctx, setQuietHoursQuery, user, from, to)
	return err
}

// HoldPush keeps a trip push for its owner's digest.
func (q *QuietQuery) HoldPush(ctx context.Context, h quiet.Held) error {
	_, err := q.db.Exec(ctx, holdPushQuery, h.Owner, h.TripwireID, h.Trip, h.Label, h.Summary, h.At.UnixMilli())
	return err
}

// HeldOwners returns the people who have pushes held.
func (q *QuietQuery) HeldOwners(ctx context.Context) ([]string, error) {
	rows, err := q.db.Query(ctx, heldOwnersQuery)
	return dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], err).AsList()
}

// TakeHeld removes and returns an owner's held pushes, oldest first.
func (q *QuietQuery) TakeHeld(ctx context.Context, owner string) ([]quiet.Held, error) {
	rows, err := q.db.Query(ctx, takeHeldQuery, owner)
	list, err := dbutil.NewRowIterWithError(rows, func(r dbutil.Scannable) (quiet.Held, error) {
		var h quiet.Held
		var at int64
		err := r.Scan(&h.ID, &h.Owner, &h.TripwireID, &h.Trip, &h.Label, &h.Summary, &at)
		h.At = time.UnixMilli(at)
		return h, err
	}, err).AsList()
	if err != nil {
		return nil, fmt.Errorf("take the held pushes of %s: %w", owner, err)
	}
	slices.SortFunc(list, func(a, b quiet.Held) int { return cmp.Compare(a.ID, b.ID) })
	return list, nil
}

// MoveHeld gives from's held pushes to to.
func (q *QuietQuery) MoveHeld(ctx context.Context, from, to string) (int, error) {
	res, err := q.db.Exec(ctx, moveHeldQuery, from, to)
	if err != nil {
		return 0, fmt.Errorf("move the held pushes of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
