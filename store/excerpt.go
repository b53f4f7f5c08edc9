package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	addExcerptQuery = `
		INSERT INTO excerpt (room_id, sender, event_id, body, trust, held, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING id`
	pruneExcerptsQuery = `
		DELETE FROM excerpt WHERE room_id = $1 AND sender = $2 AND id NOT IN (
			SELECT id FROM excerpt WHERE room_id = $1 AND sender = $2 ORDER BY id DESC LIMIT $3)`
	excerptsQuery = `
		SELECT id, room_id, sender, event_id, body, trust, held, ratified_by, at FROM excerpt
		WHERE room_id = $1 AND sender = $2 ORDER BY id DESC LIMIT $3`
	ratifyExcerptQuery = `UPDATE excerpt SET held = false, ratified_by = $1 WHERE id = $2 AND sender = $3 AND held`
	clearExcerptsQuery = `DELETE FROM excerpt WHERE room_id = $1`
)

var _ core.ExcerptStore = (*Store)(nil)

// AddExcerpt stores a message and keeps only the newest few per person.
func (s *Store) AddExcerpt(ctx context.Context, e core.Excerpt) (int64, error) {
	var id int64
	err := s.InTx(ctx, func(ctx context.Context) error {
		err := s.DB.QueryRow(ctx, addExcerptQuery, e.RoomID, e.Sender, e.EventID, e.Body, string(e.Trust), e.Held, e.At.UnixMilli()).Scan(&id)
		if err != nil {
			return err
		}
		_, err = s.DB.Exec(ctx, pruneExcerptsQuery, e.RoomID, e.Sender, core.ExcerptKeep)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("keep excerpt: %w", err)
	}
	return id, nil
}

// Excerpts returns a person's newest messages in a room, oldest first.
func (s *Store) Excerpts(ctx context.Context, roomID, sender string, n int) ([]core.Excerpt, error) {
	rows, err := s.DB.Query(ctx, excerptsQuery, roomID, sender, n)
	list, err := dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (core.Excerpt, error) {
		var e core.Excerpt
		var trust string
		var at int64
		err := row.Scan(&e.ID, &e.RoomID, &e.Sender, &e.EventID, &e.Body, &trust, &e.Held, &e.RatifiedBy, &at)
		e.Trust, e.At = core.Trust(trust), time.UnixMilli(at)
		return e, err
	}, err).AsList()
	slices.Reverse(list)
	return list, err
}

// RatifyExcerpt clears the hold on one of the person's held messages.
func (s *Store) RatifyExcerpt(ctx context.Context, id int64, sender, by string) error {
	res, err := s.DB.Exec(ctx, ratifyExcerptQuery, by, id, sender)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("held message %d of %s: %w", id, sender, core.ErrNotFound)
	}
	return nil
}

// ClearExcerpts forgets a room's messages.
func (s *Store) ClearExcerpts(ctx context.Context, roomID string) (int, error) {
	res, err := s.DB.Exec(ctx, clearExcerptsQuery, roomID)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}
