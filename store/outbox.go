package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	outboxColumns = `seq, key, room_id, to_user, kind, body, mentions, target_key, target_event, thread, coalesce,
		batch_key, attempts, next_attempt, last_error, event_id, created_at, sent_at, attempt_started, refusals, failed_at, thread_root, lane`
	// enqueueNoticesQuery inserts the rows of enqueueNoticeRow in place of
	// %s and names those it wrote: a key already present is left alone.
	enqueueNoticesQuery = `
		INSERT INTO outbox (key, room_id, to_user, kind, body, mentions, target_key, target_event, thread, coalesce, created_at, thread_root, lane)
		VALUES %s
		ON CONFLICT (key) DO NOTHING RETURNING key`
	enqueueNoticeRow = `($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)`
	// waitingNoticesQuery reads the urgent lane (0) first, so that a
	// flood of other notices never keeps an urgent one out of the limit.
	waitingNoticesQuery = `SELECT ` + outboxColumns + `
		FROM outbox WHERE sent_at = 0 AND failed_at = 0 AND room_id NOT LIKE $2 AND to_user NOT LIKE $2 ORDER BY lane, seq LIMIT $1`
	noticeByKeyQuery = `SELECT ` + outboxColumns + ` FROM outbox WHERE key = $1`
	assignBatchQuery = `UPDATE outbox SET batch_key = $1 WHERE key = $2 AND sent_at = 0`
	markAttemptQuery = `UPDATE outbox SET attempt_started = $1 WHERE key = $2`
	markSentQuery    = `UPDATE outbox SET sent_at = $1, event_id = $2, last_error = '', attempt_started = 0 WHERE key = $3`
	// A secret notice's body is blanked once it is sent; secure_delete
	// (SQLite) zeroes the bytes it leaves behind.
	blankSecretQuery   = `UPDATE outbox SET body = '' WHERE key = $1 AND sent_at > 0`
	markFailedQuery    = `UPDATE outbox SET attempts = attempts + 1, next_attempt = $1, last_error = $2, refusals = 0 WHERE key = $3`
	markRefusedQuery   = `UPDATE outbox SET attempts = attempts + 1, next_attempt = $1, last_error = $2, refusals = refusals + 1 WHERE key = $3`
	giveUpQuery        = `UPDATE outbox SET attempts = attempts + 1, last_error = $2, refusals = refusals + 1, failed_at = $1 WHERE key = $3`
	retryNowQuery      = `UPDATE outbox SET next_attempt = 0 WHERE sent_at = 0 AND failed_at = 0 AND next_attempt > 0`
	outboxDepthQuery   = `SELECT COUNT(*) FROM outbox WHERE sent_at = 0 AND failed_at = 0`
	oldestWaitingQuery = `SELECT COALESCE(MIN(created_at), 0) FROM outbox WHERE sent_at = 0 AND failed_at = 0`
	givenUpCountQuery  = `SELECT COUNT(*) FROM outbox WHERE failed_at > 0`
	lastGivenUpQuery   = `SELECT ` + outboxColumns + `
		FROM outbox WHERE failed_at > 0 ORDER BY failed_at DESC, seq DESC LIMIT 1`
	lastSendErrorQuery = `SELECT last_error FROM outbox WHERE last_error <> '' ORDER BY seq DESC LIMIT 1`
	keyForEventQuery   = `SELECT key FROM outbox WHERE event_id = $1 ORDER BY seq LIMIT 1`
	getDirectRoomQuery = `SELECT room_id FROM direct_room WHERE user_id = $1`
	setDirectRoomQuery = `
		INSERT INTO direct_room (user_id, room_id) VALUES ($1, $2)
		ON CONFLICT (user_id) DO UPDATE SET room_id = excluded.room_id`
)

// Outbox is the durable queue of notices.
type Outbox struct {
	db *dbutil.Database
	// st runs its write transactions, fenced by the lease.
	st *Store
	// Wake is signalled (without blocking) after every enqueue, so the
	// sender need not poll.
	Wake chan struct{}
}

var _ core.Outbox = (*Outbox)(nil)

// Outbox returns the store's outbox.
func (s *Store) Outbox() *Outbox {
	s.outboxOnce.Do(func() { s.outbox = &Outbox{db: s.DB, st: s, Wake: make(chan struct{}, 1)} })
	return s.outbox
}

// Enqueue writes notices, in their order, with one statement for as many
// as fit in it. A notice whose key is present already (or earlier in
// notices) is not written, and the others are: the error is then
// ErrDuplicate, naming the first such key.
func (o *Outbox) Enqueue(ctx context.Context, notices ...core.Notice) error {
	const perRow = 13
	args := make([]any, 0, len(notices)*perRow)
	keys := make([]string, len(notices))
	now := time.Now().UnixMilli()
	for i, n := range notices {
		if err := n.Validate(); err != nil {
			return fmt.Errorf("enqueue notice %q: %w", n.Key, err)
		}
		mentions, err := json.Marshal(nonNil(n.Mentions))
		if err != nil {
			return err
		}
		if n.Secret && !strings.HasPrefix(n.Key, core.SecretKeyPrefix) {
			n.Key = core.SecretKeyPrefix + n.Key
		}
		keys[i] = n.Key
		args = append(args, n.Key, n.RoomID, n.ToUser, string(n.Kind), n.Body, string(mentions), n.Target, n.TargetEvent,
			n.Thread, n.Coalesce, now, n.ThreadRoot, laneOf(n.Urgent))
	}
	if len(notices) == 0 {
		return nil
	}
	// Alone, the insert is a write transaction of its own, fenced like
	// every other. A duplicate does not undo the others.
	written := make(map[string]bool, len(keys))
	err := o.st.tx(ctx, func(ctx context.Context) error {
		clear(written)
		if staged(ctx) {
			return o.stage(ctx, notices, keys, written)
		}
		// What these relate to goes first: a notice of theirs still
		// staged is moved in ahead of them.
		if err := o.moveStagedTargets(ctx, notices); err != nil {
			return err
		}
		done := 0
		err := bulkChunks(keys, perRow, func(chunk []string) error {
			rows, err := o.db.Query(ctx, fmt.Sprintf(enqueueNoticesQuery, bulkRows(enqueueNoticeRow, len(chunk), perRow, 0)),
				args[done*perRow:(done+len(chunk))*perRow]...)
			done += len(chunk)
			if err != nil {
				return err
			}
			defer rows.Close()
			for rows.Next() {
				var key string
				if err := rows.Scan(&key); err != nil {
					return err
				}
				written[key] = true
			}
			return rows.Err()
		})
		if err != nil || len(written) == 0 {
			return err
		}
		// This process's sender looks once the notices can be seen; the
		// others' hear of them when the transaction commits.
		core.AfterCommit(ctx, o.WakeSender)
		return notify(ctx, o.db, OutboxWork, o.st.instance)
	})
	if err != nil {
		if len(notices) == 1 {
			return fmt.Errorf("enqueue notice %q: %w", keys[0], err)
		}
		return fmt.Errorf("enqueue %d notices: %w", len(notices), err)
	}
	for _, key := range keys {
		if !written[key] {
			return fmt.Errorf("enqueue notice %q: %w", key, core.ErrDuplicate)
		}
		delete(written, key) // a key repeated in notices was written once
	}
	return nil
}

// The outbox's lanes: the sender reads the urgent lane first.
const (
	urgentLane = 0
	otherLane  = 1
)

// laneOf is the lane of a notice.
func laneOf(urgent bool) int {
	if urgent {
		return urgentLane
	}
	return otherLane
}

// WakeSender tells the sender to look at the outbox now; a wake-up it has
// not taken yet is not doubled.
func (o *Outbox) WakeSender() {
	select {
	case o.Wake <- struct{}{}:
	default:
	}
}

// Waiting lists up to limit unsent notices for Matrix in outbox order:
// the console's (core.ConsolePrefix) are left to it. When more wait than
// limit, the urgent ones are among those listed.
func (o *Outbox) Waiting(ctx context.Context, limit int) ([]core.OutboxEntry, error) {
	rows, err := o.db.Query(ctx, waitingNoticesQuery, limit, consolePattern)
	waiting, err := dbutil.NewRowIterWithError(rows, scanOutboxEntry, err).AsList()
	slices.SortFunc(waiting, func(a, b core.OutboxEntry) int { return cmp.Compare(a.Seq, b.Seq) })
	return waiting, err
}

// Get returns the notice with the given key. One that an agent's report
// staged on another Jarvis and the holder has not moved yet is returned
// as not sent, so that an edit or a reaction of it waits for it.
func (o *Outbox) Get(ctx context.Context, key string) (core.OutboxEntry, error) {
	e, err := scanOutboxEntry(o.db.QueryRow(ctx, noticeByKeyQuery, key))
	if errors.Is(err, sql.ErrNoRows) {
		return o.getStaged(ctx, key)
	}
	return e, err
}

// AssignBatch fixes the batch key of coalesced notices before their first
// attempt, so a retry after a crash sends exactly the same message.
func (o *Outbox) AssignBatch(ctx context.Context, b core.Batch) error {
	return o.st.tx(core.Urgent(ctx), func(ctx context.Context) error {
		for _, key := range b.Keys() {
			if _, err := o.db.Exec(ctx, assignBatchQuery, b.TxnKey, key); err != nil {
				return fmt.Errorf("assign batch %q: %w", b.TxnKey, err)
			}
		}
		return nil
	})
}

// MarkAttempt records that a send is starting, so that after a crash the
// sender knows the outcome is unknown.
func (o *Outbox) MarkAttempt(ctx context.Context, keys []string, at time.Time) error {
	return o.st.tx(core.Urgent(ctx), func(ctx context.Context) error {
		for _, key := range keys {
			if _, err := o.db.Exec(ctx, markAttemptQuery, at.UnixMilli(), key); err != nil {
				return fmt.Errorf("mark notice %q attempted: %w", key, err)
			}
		}
		return nil
	})
}

// MarkSent records the event that delivered the given notices.
func (o *Outbox) MarkSent(ctx context.Context, keys []string, eventID string, at time.Time) error {
	secret := slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, core.SecretKeyPrefix) })
	err := o.st.tx(core.Urgent(ctx), func(ctx context.Context) error {
		for _, key := range keys {
			if _, err := o.db.Exec(ctx, markSentQuery, at.UnixMilli(), eventID, key); err != nil {
				return fmt.Errorf("mark notice %q sent: %w", key, err)
			}
			if !strings.HasPrefix(key, core.SecretKeyPrefix) {
				continue
			}
			if _, err := o.db.Exec(ctx, blankSecretQuery, key); err != nil {
				return fmt.Errorf("blank secret notice %q: %w", key, err)
			}
		}
		return nil
	})
	if err != nil || !secret || o.db.Dialect != dbutil.SQLite {
		return err
	}
	// The page images of the old body wait in the write-ahead log until a
	// checkpoint; move them into the (zeroed) database file now. A busy
	// checkpoint only delays this to the next automatic one.
	_, _ = o.db.Exec(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return nil
}

// MarkFailed records a failed attempt and when to try again. The attempt
// mark stays: a send whose answer never came (a cut connection, a timeout)
// may have been delivered, so the next try looks in the room first.
func (o *Outbox) MarkFailed(ctx context.Context, keys []string, cause error, next time.Time) error {
	return o.mark(ctx, "failed", markFailedQuery, keys, cause, next)
}

// MarkRefused records an attempt the homeserver refused for a reason a
// retry may not change (core.Refused), and when to try again.
func (o *Outbox) MarkRefused(ctx context.Context, keys []string, cause error, next time.Time) error {
	return o.mark(ctx, "refused", markRefusedQuery, keys, cause, next)
}

// GiveUp records the last refusal of notices the sender gives up on: they
// are kept, with the refusal, and never tried again.
func (o *Outbox) GiveUp(ctx context.Context, keys []string, cause error, at time.Time) error {
	return o.mark(ctx, "given up", giveUpQuery, keys, cause, at)
}

// mark runs an update of the failed attempt of keys in one transaction.
func (o *Outbox) mark(ctx context.Context, what, query string, keys []string, cause error, at time.Time) error {
	return o.st.tx(core.Urgent(ctx), func(ctx context.Context) error {
		for _, key := range keys {
			if _, err := o.db.Exec(ctx, query, at.UnixMilli(), cause.Error(), key); err != nil {
				return fmt.Errorf("mark notice %q %s: %w", key, what, err)
			}
		}
		return nil
	})
}

// GivenUp counts the notices the sender gave up on and returns the latest
// of them, when there is one.
func (o *Outbox) GivenUp(ctx context.Context) (int, *core.OutboxEntry, error) {
	var n int
	if err := o.db.QueryRow(ctx, givenUpCountQuery).Scan(&n); err != nil || n == 0 {
		return 0, nil, err
	}
	last, err := scanOutboxEntry(o.db.QueryRow(ctx, lastGivenUpQuery))
	if err != nil {
		return 0, nil, err
	}
	return n, &last, nil
}

// RetryNow clears the back-off of every waiting notice, for when the
// homeserver is known to be back.
func (o *Outbox) RetryNow(ctx context.Context) error {
	_, err := o.db.Exec(ctx, retryNowQuery)
	if err == nil {
		o.WakeSender()
	}
	return err
}

// Depth counts the notices not yet sent.
func (o *Outbox) Depth(ctx context.Context) (int, error) {
	var n int
	err := o.db.QueryRow(ctx, outboxDepthQuery).Scan(&n)
	return n, err
}

// OldestWaiting is when the oldest notice not yet sent (nor given up on)
// was queued; zero when none waits.
func (o *Outbox) OldestWaiting(ctx context.Context) (time.Time, error) {
	var at int64
	if err := o.db.QueryRow(ctx, oldestWaitingQuery).Scan(&at); err != nil {
		return time.Time{}, err
	}
	if at == 0 {
		return time.Time{}, nil
	}
	return time.UnixMilli(at), nil
}

// LastError returns the most recent send error, or "" when there is none.
func (o *Outbox) LastError(ctx context.Context) (string, error) {
	var msg string
	err := o.db.QueryRow(ctx, lastSendErrorQuery).Scan(&msg)
	if err == sql.ErrNoRows {
		return "", nil
	}
	return msg, err
}

// KeyForEvent returns the key of the notice that the Matrix event
// delivered.
func (o *Outbox) KeyForEvent(ctx context.Context, eventID string) (string, error) {
	var key string
	err := o.db.QueryRow(ctx, keyForEventQuery, eventID).Scan(&key)
	return key, notFound(err, "notice of event "+eventID)
}

// DirectRoom returns the direct room Jarvis shares with a person.
func (o *Outbox) DirectRoom(ctx context.Context, userID string) (string, error) {
	var roomID string
	err := o.db.QueryRow(ctx, getDirectRoomQuery, userID).Scan(&roomID)
	return roomID, notFound(err, "direct room of "+userID)
}

// SetDirectRoom records the direct room Jarvis shares with a person.
func (o *Outbox) SetDirectRoom(ctx context.Context, userID, roomID string) error {
	_, err := o.db.Exec(ctx, setDirectRoomQuery, userID, roomID)
	return err
}

func scanOutboxEntry(row dbutil.Scannable) (core.OutboxEntry, error) {
	var e core.OutboxEntry
	var kind, mentions string
	var nextAttempt, createdAt, sentAt, attemptStarted, failedAt int64
	var lane int
	err := row.Scan(&e.Seq, &e.Key, &e.RoomID, &e.ToUser, &kind, &e.Body, &mentions, &e.Target, &e.TargetEvent,
		&e.Thread, &e.Coalesce, &e.BatchKey, &e.Attempts, &nextAttempt, &e.LastError, &e.EventID, &createdAt, &sentAt, &attemptStarted,
		&e.Refusals, &failedAt, &e.ThreadRoot, &lane)
	if err != nil {
		return e, err
	}
	e.Urgent = lane == urgentLane
	e.Kind = core.NoticeKind(kind)
	e.Secret = strings.HasPrefix(e.Key, core.SecretKeyPrefix)
	if err := json.Unmarshal([]byte(mentions), &e.Mentions); err != nil {
		return e, fmt.Errorf("notice %q mentions: %w", e.Key, err)
	}
	e.NextAttempt = time.UnixMilli(nextAttempt)
	e.CreatedAt = time.UnixMilli(createdAt)
	if sentAt > 0 {
		e.SentAt = time.UnixMilli(sentAt)
	}
	if attemptStarted > 0 {
		e.AttemptStarted = time.UnixMilli(attemptStarted)
	}
	if failedAt > 0 {
		e.FailedAt = time.UnixMilli(failedAt)
	}
	return e, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
