package store

import (
	"context"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/wake"
)

const (
	wakeStatesQuery   = `SELECT key, fingerprint, notified_at, active, count FROM wake_state`
	putWakeStateQuery = `
		INSERT INTO wake_state (key, fingerprint, notified_at, active, count) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (key) DO UPDATE SET fingerprint = excluded.fingerprint, notified_at = excluded.notified_at,
			active = excluded.active, count = excluded.count`
	consumeEventQuery = `
		INSERT INTO consumed_event (source, event_id, consumed_at) VALUES ($1, $2, $3)
		ON CONFLICT (source, event_id) DO NOTHING`
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

// PutWakeState records what the router told people about a condition.
func (s *Store) PutWakeState(ctx context.Context, w wake.State) error {
	_, err := s.DB.Exec(ctx, putWakeStateQuery, w.Key, w.Fingerprint, w.NotifiedAt.UnixMilli(), w.Active, w.Count)
	return err
}

// ConsumeEvent records a source event id; false means it was seen before.
func (s *Store) ConsumeEvent(ctx context.Context, source, eventID string, at time.Time) (bool, error) {
	res, err := s.DB.Exec(ctx, consumeEventQuery, source, eventID, at.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
