package store

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

const (
	silenceColumns     = `id, scope, target, reason, set_by, room_id, started_at, ends_at, until_resolved, ended_at, held_alerts, held_trips, held`
	addSilenceQuery    = `INSERT INTO silence (scope, target, reason, set_by, room_id, started_at, ends_at, until_resolved) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING id`
	getSilenceQuery    = `SELECT ` + silenceColumns + ` FROM silence WHERE id = $1`
	activeSilenceQuery = `SELECT ` + silenceColumns + ` FROM silence WHERE ended_at = 0 ORDER BY id`
	// The first keep lines are kept, one per line; the rest are counted.
	holdAlertQuery = `UPDATE silence SET held_alerts = held_alerts + 1,
		held = CASE WHEN held_alerts + held_trips < $3 THEN held || $2 ELSE held END WHERE id = $1`
	holdTripQuery = `UPDATE silence SET held_trips = held_trips + 1,
		held = CASE WHEN held_alerts + held_trips < $3 THEN held || $2 ELSE held END WHERE id = $1`
	endSilenceQuery = `UPDATE silence SET ended_at = $2 WHERE id = $1 AND ended_at = 0`
)

var _ oncall.SilenceStore = (*IncidentQuery)(nil)

// AddSilence writes a new silence.
func (q *IncidentQuery) AddSilence(ctx context.Context, s oncall.Silence) (oncall.Silence, error) {
	err := q.db.QueryRow(ctx, addSilenceQuery, s.Scope, s.Target, s.Reason, s.By, s.RoomID, s.StartedAt.UnixMilli(), s.EndsAt.UnixMilli(),
		s.UntilResolved).Scan(&s.ID)
	return s, err
}

// Silence returns one silence.
func (q *IncidentQuery) Silence(ctx context.Context, id int64) (oncall.Silence, error) {
	s, err := scanSilence(q.db.QueryRow(ctx, getSilenceQuery, id))
	return s, notFound(err, fmt.Sprintf("silence %d", id))
}

// ActiveSilences lists the silences not ended, oldest first.
func (q *IncidentQuery) ActiveSilences(ctx context.Context) ([]oncall.Silence, error) {
	rows, err := q.db.Query(ctx, activeSilenceQuery)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []oncall.Silence
	for rows.Next() {
		s, err := scanSilence(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// HoldInSilence counts one alert or trip more in a silence, keeping what
// it was among its first keep lines.
func (q *IncidentQuery) HoldInSilence(ctx context.Context, id int64, alert bool, what string, keep int) error {
	query := holdTripQuery
	if alert {
		query = holdAlertQuery
	}
	line := strings.ReplaceAll(what, "\n", " ") + "\n"
	ok, err := q.update(ctx, query, id, line, keep)
	if err == nil && !ok {
		err = fmt.Errorf("silence %d: %w", id, core.ErrNotFound)
	}
	return err
}

// EndSilence ends a silence not ended yet.
func (q *IncidentQuery) EndSilence(ctx context.Context, id int64, at time.Time) (bool, error) {
	return q.update(ctx, endSilenceQuery, id, at.UnixMilli())
}

func scanSilence(row interface{ Scan(...any) error }) (oncall.Silence, error) {
	var s oncall.Silence
	var started, ends, ended int64
	var held string
	err := row.Scan(&s.ID, &s.Scope, &s.Target, &s.Reason, &s.By, &s.RoomID, &started, &ends, &s.UntilResolved, &ended, &s.HeldAlerts, &s.HeldTrips, &held)
	s.StartedAt, s.EndsAt, s.EndedAt = time.UnixMilli(started), time.UnixMilli(ends), timeOf(ended)
	if held != "" {
		s.Held = strings.Split(strings.TrimSuffix(held, "\n"), "\n")
	}
	return s, err
}
