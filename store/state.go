package store

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

const (
	getStateQuery = `SELECT value FROM bot_state WHERE key = $1`
	setStateQuery = `
		INSERT INTO bot_state (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`
	markHandledQuery = `INSERT INTO handled_event (event_id, handled_at) VALUES ($1, $2) ON CONFLICT (event_id) DO NOTHING`
)

// State returns a value the bot keeps across restarts (device ID, access
// token, sync token), or "" when it was never set.
func (s *Store) State(ctx context.Context, key string) (string, error) {
	var value string
	err := s.DB.QueryRow(ctx, getStateQuery, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return value, err
}

// SetState records a value the bot keeps across restarts.
//
// Outside a transaction it is written on the chat pool: the sync token is
// stored after every sync, and the next sync, which may bring a person's
// message, waits for it.
func (s *Store) SetState(ctx context.Context, key, value string) error {
	db := s.DB
	if ctx.Value(inTxKey{}) == nil {
		db = s.ChatDB()
	}
	_, err := db.Exec(ctx, setStateQuery, key, value)
	return err
}

// MarkHandled records that Jarvis acted on an event. It returns false when
// the event was handled before, in which case the caller must do nothing.
func (s *Store) MarkHandled(ctx context.Context, eventID string, at time.Time) (bool, error) {
	res, err := s.DB.Exec(ctx, markHandledQuery, eventID, at.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}
