package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	addModelTurnQuery = `
		INSERT INTO model_turn (event_id, room_id, sender, message, started_at) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (event_id) DO NOTHING`
	takeModelTurnQuery = `DELETE FROM model_turn WHERE event_id = $1`
	modelTurnsQuery    = `SELECT event_id, room_id, sender, message, started_at FROM model_turn ORDER BY started_at, event_id`
)

var _ core.ModelTurnStore = (*Store)(nil)

// AddModelTurn records a model turn not yet answered.
func (s *Store) AddModelTurn(ctx context.Context, t core.ModelTurn) error {
	if _, err := s.DB.Exec(ctx, addModelTurnQuery, t.EventID, t.RoomID, t.Sender, t.Message, t.Started.UnixMilli()); err != nil {
		return fmt.Errorf("record model turn: %w", err)
	}
	return nil
}

// TakeModelTurn deletes the turn of an event, and says whether there was
// one.
func (s *Store) TakeModelTurn(ctx context.Context, eventID string) (bool, error) {
	res, err := s.DB.Exec(ctx, takeModelTurnQuery, eventID)
	if err != nil {
		return false, fmt.Errorf("take model turn: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// ModelTurns lists the model turns not yet answered, oldest first.
func (s *Store) ModelTurns(ctx context.Context) ([]core.ModelTurn, error) {
	rows, err := s.DB.Query(ctx, modelTurnsQuery)
	return dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (core.ModelTurn, error) {
		var t core.ModelTurn
		var at int64
		err := row.Scan(&t.EventID, &t.RoomID, &t.Sender, &t.Message, &at)
		t.Started = time.UnixMilli(at)
		return t, err
	}, err).AsList()
}
