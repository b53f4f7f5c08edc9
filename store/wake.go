package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/wake"
)

const (
	wakeStatesQuery = `SELECT key, fingerprint, notified_at, active, count FROM wake_state`
	// putWakeStatesQuery writes the rows of putWakeStateRow in place of %s.
	putWakeStatesQuery = `
		INSERT INTO wake_state (key, fingerprint, notified_at, active, count) VALUES %s
		ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, notified_at = excluded.notified_at,
			active = excluded.active, count = excluded.count`
	putWakeStateRow = `($%d, $%d, $%d, $%d, $%d)`
	// consumeEventsQuery records the rows of consumeEventRow in place of %s
	// and names those not recorded before.
	consumeEventsQuery = `
		INSERT INTO consumed_event (source, event_id, consumed_at) VALUES %s
		ON CONFLICT (source, event_id) DO NOTHING RETURNING source, event_id`
	consumeEventRow = `($%d, $%d, $%d)`
)

var _ wake.Store = (*Store)(nil)

// WakeStates returns what the router remembers of every condition.
func (s *Store) WakeStates(ctx context.Context) ([]wake.State, error) {
	rows, err := s.DB.Query(ctx, wakeStatesQuery)
	return dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (wake.State, error) {
		var w wake.State
		var notified int64
		err := row.Scan(&w.Key, &w.Fingerprint, &notified, &w.Active, &w.Count)
		w.NotifiedAt = time.UnixMilli(notified)
		return w, err
	}, err).AsList()
}

// PutWakeStates records what the router told people about conditions;
// of two states with one key, the later is kept.
func (s *Store) PutWakeStates(ctx context.Context, states []wake.State) error {
	const perRow = 5
	return bulkChunks(lastByID(states, func(w wake.State) string { return w.Key }), perRow, func(chunk []wake.State) error {
		args := make([]any, 0, len(chunk)*perRow)
		for _, w := range chunk {
			args = append(args, w.Key, w.Fingerprint, w.NotifiedAt.UnixMilli(), w.Active, w.Count)
		}
		_, err := s.DB.Exec(ctx, fmt.Sprintf(putWakeStatesQuery, bulkRows(putWakeStateRow, len(chunk), perRow, 0)), args...)
		return err
	})
}

// ConsumeEvents records source event ids and returns those it had not
// recorded before.
func (s *Store) ConsumeEvents(ctx context.Context, events []wake.Event, at time.Time) (map[wake.Event]bool, error) {
	const perRow = 3
	first := map[wake.Event]bool{}
	distinct := lastByID(events, func(e wake.Event) string { return e.Source + "\x00" + e.ID })
	err := bulkChunks(distinct, perRow, func(chunk []wake.Event) error {
		args := make([]any, 0, len(chunk)*perRow)
		for _, e := range chunk {
			args = append(args, e.Source, e.ID, at.UnixMilli())
		}
		rows, err := s.DB.Query(ctx, fmt.Sprintf(consumeEventsQuery, bulkRows(consumeEventRow, len(chunk), perRow, 0)), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var e wake.Event
			if err := rows.Scan(&e.Source, &e.ID); err != nil {
				return err
			}
			first[e] = true
		}
		return rows.Err()
	})
	return first, err
}
