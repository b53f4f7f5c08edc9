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
	getQuietQuery      = `SELECT quiet_from, quiet_to, digest_at, time_zone FROM person WHERE user_id = $1`
	setQuietHoursQuery = `INSERT INTO person (user_id, quiet_from, quiet_to) VALUES ($1, $2, $3)
		ON CONFLICT (user_id) DO UPDATE SET quiet_from = excluded.quiet_from, quiet_to = excluded.quiet_to`
	setDigestQuery = `INSERT INTO person (user_id, digest_at) VALUES ($1, $2) ON CONFLICT (user_id) DO UPDATE SET digest_at = excluded.digest_at`
	// quietSettingsOfQuery reads the people the parameters in place of %s
	// name.
	quietSettingsOfQuery = `SELECT user_id, quiet_from, quiet_to, digest_at, time_zone FROM person WHERE user_id IN (%s)`
	// holdPushQuery inserts the rows of holdPushRow in place of %s.
	holdPushQuery   = `INSERT INTO held_push (owner, kind, tripwire_id, trip, label, summary, at) VALUES %s`
	holdPushRow     = `($%d, $%d, $%d, $%d, $%d, $%d, $%d)`
	heldOwnersQuery = `SELECT DISTINCT owner FROM held_push WHERE kind = $1 ORDER BY owner`
	takeHeldQuery   = `DELETE FROM held_push WHERE owner = $1 AND kind = $2 AND at <= $3 RETURNING id, owner, kind, tripwire_id, trip, label, summary, at`
	moveHeldQuery   = `UPDATE held_push SET owner = $2 WHERE owner = $1`
)

// QuietQuery keeps people's quiet hours and daily digests, and the trips
// held for them.
type QuietQuery struct {
	db *dbutil.Database
}

var _ quiet.Store = (*QuietQuery)(nil)

// Quiet returns the quiet-hours queries.
func (s *Store) Quiet() *QuietQuery { return &QuietQuery{db: s.DB} }

// QuietSettings returns a person's quiet hours, daily digest and time
// zone.
func (q *QuietQuery) QuietSettings(ctx context.Context, user string) (quiet.Settings, error) {
	var from, to int
	set := quiet.Settings{Digest: quiet.NoDigest}
	err := q.db.QueryRow(ctx, getQuietQuery, user).Scan(&from, &to, &set.Digest, &set.Zone)
	if errors.Is(err, sql.ErrNoRows) {
		return set, nil
	}
	set.Hours = quietHours(from, to)
	return set, err
}

// QuietSettingsOf returns the settings of each of users, those who set
// nothing included, with one query for as many as fit in it.
func (q *QuietQuery) QuietSettingsOf(ctx context.Context, users []string) (map[string]quiet.Settings, error) {
	out := make(map[string]quiet.Settings, len(users))
	for _, u := range users {
		out[u] = quiet.Settings{Digest: quiet.NoDigest}
	}
	distinct := make([]string, 0, len(out))
	for u := range out {
		distinct = append(distinct, u)
	}
	err := bulkChunks(distinct, 1, func(chunk []string) error {
		rows, err := q.db.Query(ctx, fmt.Sprintf(quietSettingsOfQuery, bulkIn(1, len(chunk))), bulkArgs(chunk)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var user string
			var from, to int
			var set quiet.Settings
			if err := rows.Scan(&user, &from, &to, &set.Digest, &set.Zone); err != nil {
				return err
			}
			set.Hours = quietHours(from, to)
			out[user] = set
		}
		return rows.Err()
	})
	return out, err
}

// quietHours reads the stored hours: -1 when none are set.
func quietHours(from, to int) quiet.Hours {
	if from >= 0 && to >= 0 {
		return quiet.Hours{Set: true, From: from, To: to}
	}
	return quiet.Off
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

// SetDigest sets the time of a person's daily digest; quiet.NoDigest
// clears it.
func (q *QuietQuery) SetDigest(ctx context.Context, user string, at int) error {
	_, err := q.db.Exec(ctx, setDigestQuery, user, at)
	return err
}

// HoldPush keeps trips for their owners' digests, with one statement for
// as many as fit in it.
func (q *QuietQuery) HoldPush(ctx context.Context, held ...quiet.Held) error {
	const perRow = 7
	return bulkChunks(held, perRow, func(chunk []quiet.Held) error {
		args := make([]any, 0, len(chunk)*perRow)
		for _, h := range chunk {
			args = append(args, h.Owner, string(h.Kind), h.TripwireID, h.Trip, h.Label, h.Summary, h.At.UnixMilli())
		}
		_, err := q.db.Exec(ctx, fmt.Sprintf(holdPushQuery, bulkRows(holdPushRow, len(chunk), perRow, 0)), args...)
		return err
	})
}

// HeldOwners returns the people who have trips of kind held.
func (q *QuietQuery) HeldOwners(ctx context.Context, kind quiet.Kind) ([]string, error) {
	rows, err := q.db.Query(ctx, heldOwnersQuery, string(kind))
	return dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], err).AsList()
}

// TakeHeld removes and returns an owner's held trips of kind at or
// before upTo, oldest first.
func (q *QuietQuery) TakeHeld(ctx context.Context, owner string, kind quiet.Kind, upTo time.Time) ([]quiet.Held, error) {
	rows, err := q.db.Query(ctx, takeHeldQuery, owner, string(kind), upTo.UnixMilli())
	list, err := dbutil.NewRowIterWithError(rows, func(r dbutil.Scannable) (quiet.Held, error) {
		var h quiet.Held
		var at int64
		err := r.Scan(&h.ID, &h.Owner, &h.Kind, &h.TripwireID, &h.Trip, &h.Label, &h.Summary, &at)
		h.At = time.UnixMilli(at)
		return h, err
	}, err).AsList()
	if err != nil {
		return nil, fmt.Errorf("take the held trips of %s: %w", owner, err)
	}
	slices.SortFunc(list, func(a, b quiet.Held) int { return cmp.Compare(a.ID, b.ID) })
	return list, nil
}

// MoveHeld gives from's held trips to to.
func (q *QuietQuery) MoveHeld(ctx context.Context, from, to string) (int, error) {
	res, err := q.db.Exec(ctx, moveHeldQuery, from, to)
	if err != nil {
		return 0, fmt.Errorf("move the held trips of %s: %w", from, err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
