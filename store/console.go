package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	addInputQuery = `
		INSERT INTO console_input (user_name, body, answers, created_at) VALUES ($1, $2, $3, $4) RETURNING seq`
	waitingInputsQuery = `
		SELECT seq, user_name, body, answers, created_at, handled_at, outcome FROM console_input
		WHERE handled_at = 0 ORDER BY seq LIMIT $1`
	inputQuery = `
		SELECT seq, user_name, body, answers, created_at, handled_at, outcome FROM console_input WHERE seq = $1`
	markInputHandledQuery = `UPDATE console_input SET handled_at = $1, outcome = $2 WHERE seq = $3 AND handled_at = 0`
	deleteInputQuery      = `DELETE FROM console_input WHERE seq = $1`
	pruneInputsQuery      = `DELETE FROM console_input WHERE handled_at > 0 AND handled_at < $1`
	cursorQuery           = `SELECT seq FROM console_cursor WHERE user_name = $1`
	setCursorQuery        = `
		INSERT INTO console_cursor (user_name, seq, read_at) VALUES ($1, $2, $3)
		ON CONFLICT (user_name) DO UPDATE SET seq = excluded.seq, read_at = excluded.read_at`
	noticesAfterQuery = `SELECT ` + outboxColumns + ` FROM outbox WHERE seq > $1 ORDER BY seq LIMIT $2`
	lastNoticeQuery   = `SELECT COALESCE(MAX(seq), 0) FROM outbox`
	// On PostgreSQL a console cursor is a transaction horizon: every
	// notice written by a transaction older than it was read.
	horizonQuery         = `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`
	noticesSinceQuery    = `SELECT ` + outboxColumns + ` FROM outbox WHERE txn >= $1::bigint::text::xid8 ORDER BY seq`
	noticesAfterAllQuery = `SELECT ` + outboxColumns + ` FROM outbox WHERE seq > $1 ORDER BY seq`
	consoleWaitingQuery  = `
		SELECT EXISTS (SELECT 1 FROM outbox WHERE sent_at = 0 AND (room_id LIKE $1 OR to_user LIKE $1))`
	deliverConsoleQuery = `
		UPDATE outbox SET sent_at = $1, event_id = key, last_error = '', attempt_started = 0
		WHERE sent_at = 0 AND (room_id LIKE $2 OR to_user LIKE $2)`
)

// consolePattern matches the rooms and recipients of the console.
var consolePattern = core.ConsolePrefix + "%"

// AddInput keeps a line typed in a console for the lease holder to act
// on, and returns its sequence number. It is the console's own write,
// made whether or not its process holds the lease, as a homeserver takes
// a message whichever Jarvis is running.
func (s *Store) AddInput(ctx context.Context, in core.Input) (int64, error) {
	var seq int64
	err := s.DB.QueryRow(ctx, addInputQuery, in.User, in.Body, in.Answers, in.At.UnixMilli()).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("keep console input: %w", err)
	}
	return seq, nil
}

// WaitingInputs lists up to limit inputs not acted on yet, oldest first.
func (s *Store) WaitingInputs(ctx context.Context, limit int) ([]core.Input, error) {
	rows, err := s.DB.Query(ctx, waitingInputsQuery, limit)
	return dbutil.NewRowIterWithError(rows, scanInput, err).AsList()
}

// Input returns one input.
func (s *Store) Input(ctx context.Context, seq int64) (core.Input, error) {
	in, err := scanInput(s.DB.QueryRow(ctx, inputQuery, seq))
	return in, notFound(err, fmt.Sprintf("console input %d", seq))
}

// MarkInputHandled records that the lease holder acted on an input, and
// how. Only the holder writes it: the transaction is fenced.
func (s *Store) MarkInputHandled(ctx context.Context, seq int64, outcome string, at time.Time) error {
	return s.tx(ctx, func(ctx context.Context) error {
		_, err := s.DB.Exec(ctx, markInputHandledQuery, at.UnixMilli(), outcome, seq)
		return err
	})
}

// DeleteInput forgets an input once its console has read the outcome.
func (s *Store) DeleteInput(ctx context.Context, seq int64) error {
	_, err := s.DB.Exec(ctx, deleteInputQuery, seq)
	return err
}

// PruneInputs forgets inputs handled before the given time, whose
// console went away before reading the outcome.
func (s *Store) PruneInputs(ctx context.Context, before time.Time) error {
	_, err := s.DB.Exec(ctx, pruneInputsQuery, before.UnixMilli())
	return err
}

// Cursor returns how far a console user has read the outbox; found is
// false for one who never opened a console.
func (s *Store) Cursor(ctx context.Context, user string) (seq int64, found bool, err error) {
	err = s.DB.QueryRow(ctx, cursorQuery, user).Scan(&seq)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, err
	}
	return seq, true, nil
}

// SetCursor records how far a console user has read the outbox: the
// console's own write, like AddInput.
func (s *Store) SetCursor(ctx context.Context, user string, seq int64, at time.Time) error {
	_, err := s.DB.Exec(ctx, setCursorQuery, user, seq, at.UnixMilli())
	return err
}

// NoticeCursor returns a console cursor past every notice committed so
// far, for a console opened for the first time.
func (o *Outbox) NoticeCursor(ctx context.Context) (int64, error) {
	if o.db.Dialect != dbutil.Postgres {
		return o.LastSeq(ctx)
	}
	var horizon int64
	err := o.db.QueryRow(ctx, horizonQuery).Scan(&horizon)
	return horizon, err
}

// NoticesSince lists the notices of the outbox a console whose cursor
// stands at cursor may not have read, sent or not, in outbox order, and
// the cursor past those it surely read. On SQLite, whose one writer
// commits notices in seq order, the cursor is a seq, and every notice is
// listed once. On PostgreSQL a seq is drawn at the insert, so a notice
// may commit after one with a higher seq; there the cursor is a
// transaction horizon, the oldest transaction still running when the
// notices were read, and the notices of that transaction or a later one
// that had committed are listed again by the next read: the reader skips
// those it has shown.
func (o *Outbox) NoticesSince(ctx context.Context, cursor int64) ([]core.OutboxEntry, int64, error) {
	query, next := noticesAfterAllQuery, cursor
	if o.db.Dialect == dbutil.Postgres {
		// The horizon first: every transaction older than it has ended
		// before the notices are read.
		if err := o.db.QueryRow(ctx, horizonQuery).Scan(&next); err != nil {
			return nil, cursor, err
		}
		query = noticesSinceQuery
	}
	rows, err := o.db.Query(ctx, query, cursor)
	entries, err := dbutil.NewRowIterWithError(rows, scanOutboxEntry, err).AsList()
	if err != nil {
		return nil, cursor, err
	}
	if n := len(entries); n > 0 && o.db.Dialect != dbutil.Postgres {
		next = entries[n-1].Seq
	}
	return entries, next, nil
}

// NoticesAfter lists up to limit notices of the outbox after seq, sent or
// not, in outbox order: for a reader that needs no cursor kept, the
// notices drawn after a seq it read itself.
func (o *Outbox) NoticesAfter(ctx context.Context, seq int64, limit int) ([]core.OutboxEntry, error) {
	rows, err := o.db.Query(ctx, noticesAfterQuery, seq, limit)
	return dbutil.NewRowIterWithError(rows, scanOutboxEntry, err).AsList()
}

// LastSeq is the sequence number of the newest notice, 0 when there is
// none.
func (o *Outbox) LastSeq(ctx context.Context) (int64, error) {
	var seq int64
	err := o.db.QueryRow(ctx, lastNoticeQuery).Scan(&seq)
	return seq, err
}

// DeliverConsole marks the console's waiting notices delivered: a console
// reads them from the outbox itself. Their event ID is their key, so an
// answer to one names it. The lease holder does this; the transaction is
// fenced, and taken only when a console notice waits, so that asking
// costs one read.
func (o *Outbox) DeliverConsole(ctx context.Context, at time.Time) (int, error) {
	var waiting bool
	if err := o.db.QueryRow(ctx, consoleWaitingQuery, consolePattern).Scan(&waiting); err != nil || !waiting {
		return 0, err
	}
	var n int64
	err := o.st.tx(ctx, func(ctx context.Context) error {
		res, err := o.db.Exec(ctx, deliverConsoleQuery, at.UnixMilli(), consolePattern)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

func scanInput(row dbutil.Scannable) (core.Input, error) {
	var in core.Input
	var at, handled int64
	err := row.Scan(&in.Seq, &in.User, &in.Body, &in.Answers, &at, &handled, &in.Outcome)
	in.At = time.UnixMilli(at)
	if handled > 0 {
		in.Handled = time.UnixMilli(handled)
	}
	return in, err
}
