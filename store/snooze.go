package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

const (
	snoozeIncidentQuery = `UPDATE incident SET snoozed_by = $2, snoozed_at = $3, snoozed_until = $4 WHERE id = $1 AND resolved_at = 0`
	snoozesEndedQuery   = `SELECT ` + incidentColumns + ` FROM incident WHERE snoozed_until > 0 AND snoozed_until <= $1 AND resolved_at = 0
		ORDER BY snoozed_until, id`
	wakeIncidentQuery   = `UPDATE incident SET snoozed_by = '', snoozed_at = 0, snoozed_until = 0 WHERE id = $1 AND snoozed_until = $2`
	snoozeTripwireQuery = `UPDATE tripwire_state SET snoozed_until = $3
		WHERE id = (SELECT id FROM tripwire WHERE scope = $1 AND id = $2) AND status <> 'deleted'`
)

// SnoozeIncident snoozes an open incident, replacing any snooze it had.
func (q *IncidentQuery) SnoozeIncident(ctx context.Context, id, by string, at, until time.Time) (bool, error) {
	return q.update(ctx, snoozeIncidentQuery, id, by, at.UnixMilli(), until.UnixMilli())
}

// SnoozesEnded lists the open incidents whose snooze ended by now.
func (q *IncidentQuery) SnoozesEnded(ctx context.Context, now time.Time) ([]oncall.Incident, error) {
	return q.list(ctx, snoozesEndedQuery, now.UnixMilli())
}

// WakeIncident ends the snooze of incident id that ends at until.
func (q *IncidentQuery) WakeIncident(ctx context.Context, id string, until time.Time) (bool, error) {
	return q.update(ctx, wakeIncidentQuery, id, until.UnixMilli())
}

// SnoozeTripwire puts off the pushes of one of scope's tripwires until
// until (zero: no longer); core.ErrNotFound when scope has no such
// tripwire.
func (q *TripwireQuery) SnoozeTripwire(ctx context.Context, scope, id string, until time.Time) error {
	res, err := q.db.Exec(ctx, snoozeTripwireQuery, scope, id, millis(until))
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err == nil && n == 0 {
		err = fmt.Errorf("tripwire %s: %w", id, core.ErrNotFound)
	}
	return err
}
