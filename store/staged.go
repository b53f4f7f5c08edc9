package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

const (
	// stageNoticeQuery keeps a notice for the holder unless its key is in
	// the outbox already or staged before: it names the key it wrote.
	stageNoticeQuery = `
		INSERT INTO staged_notice (key, notice, created_at)
		SELECT $1, $2, CAST($3 AS BIGINT) WHERE NOT EXISTS (SELECT 1 FROM outbox WHERE key = $1)
		ON CONFLICT (key) DO NOTHING RETURNING key`
	stagedNoticesQuery  = `SELECT seq, notice FROM staged_notice ORDER BY seq LIMIT $1`
	stagedNoticeQuery   = `SELECT notice, created_at FROM staged_notice WHERE key = $1`
	stagedTargetQuery   = `SELECT EXISTS (SELECT 1 FROM staged_notice WHERE key = $1)`
	deleteStagedQuery   = `DELETE FROM staged_notice WHERE seq <= $1`
	stagedNoticesCount  = `SELECT COUNT(*) FROM staged_notice`
	stagedMoveBatchSize = 500
)

// stage keeps notices, whose keys (the secret prefix added) are keys, for
// the lease holder to move into the outbox: the transaction ctx is in
// stores an agent's report without the lease. written names the keys it
// kept, as Enqueue's insert does.
func (o *Outbox) stage(ctx context.Context, notices []core.Notice, keys []string, written map[string]bool) error {
	now := time.Now().UnixMilli()
	for i, n := range notices {
		n.Key = keys[i]
		body, err := json.Marshal(n)
		if err != nil {
			return err
		}
		var key string
		err = o.db.QueryRow(ctx, stageNoticeQuery, n.Key, string(body), now).Scan(&key)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			continue
		case err != nil:
			return fmt.Errorf("stage notice %q: %w", n.Key, err)
		}
		written[key] = true
	}
	return nil
}

// MoveStaged moves the notices that agents' reports caused on a Jarvis
// without the lease into the outbox, oldest first, in transactions fenced
// by the lease that each delete what they moved: each notice reaches the
// outbox once, whoever holds the lease when it is moved. A key the outbox
// has already is not written again. It returns how many it moved.
func (o *Outbox) MoveStaged(ctx context.Context) (int, error) {
	moved := 0
	for {
		n, err := o.moveStaged(ctx)
		moved += n
		if err != nil || n < stagedMoveBatchSize {
			return moved, err
		}
	}
}

func (o *Outbox) moveStaged(ctx context.Context) (int, error) {
	n := 0
	err := o.st.InTx(ctx, func(ctx context.Context) error {
		var err error
		n, err = o.moveStagedIn(ctx)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("move staged notices: %w", err)
	}
	return n, nil
}

// moveStagedIn moves the oldest staged notices, up to
// stagedMoveBatchSize, into the outbox in the transaction ctx is in.
func (o *Outbox) moveStagedIn(ctx context.Context) (int, error) {
	rows, err := o.db.Query(ctx, stagedNoticesQuery, stagedMoveBatchSize)
	if err != nil {
		return 0, err
	}
	var notices []core.Notice
	var last int64
	for rows.Next() {
		var body string
		if err := rows.Scan(&last, &body); err != nil {
			rows.Close()
			return 0, err
		}
		var notice core.Notice
		if err := json.Unmarshal([]byte(body), &notice); err != nil {
			rows.Close()
			return 0, fmt.Errorf("staged notice %d: %w", last, err)
		}
		notices = append(notices, notice)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(notices) == 0 {
		return 0, err
	}
	// Deleted first, so that Enqueue finds none of them staged.
	if _, err := o.db.Exec(ctx, deleteStagedQuery, last); err != nil {
		return 0, err
	}
	if err := o.Enqueue(ctx, notices...); err != nil && !errors.Is(err, core.ErrDuplicate) {
		return 0, err
	}
	return len(notices), nil
}

// moveStagedTargets moves the staged notices into the outbox, in the
// transaction ctx is in, when one of them is what one of notices relates
// to (an edit's, a reaction's or a thread reply's target): a notice goes
// into the outbox after the one it relates to, or the sender would hold
// it for a target queued behind it. Only PostgreSQL stages notices.
func (o *Outbox) moveStagedTargets(ctx context.Context, notices []core.Notice) error {
	if o.db.Dialect != dbutil.Postgres {
		return nil
	}
	for _, n := range notices {
		if n.Target == "" {
			continue
		}
		for {
			var waiting bool
			if err := o.db.QueryRow(ctx, stagedTargetQuery, n.Target).Scan(&waiting); err != nil {
				return fmt.Errorf("look for the staged target of %q: %w", n.Key, err)
			}
			if !waiting {
				break
			}
			if _, err := o.moveStagedIn(ctx); err != nil {
				return fmt.Errorf("move staged notices ahead of %q: %w", n.Key, err)
			}
		}
	}
	return nil
}

// getStaged returns the staged notice with the given key, as not sent.
func (o *Outbox) getStaged(ctx context.Context, key string) (core.OutboxEntry, error) {
	var body string
	var created int64
	err := o.db.QueryRow(ctx, stagedNoticeQuery, key).Scan(&body, &created)
	if err != nil {
		return core.OutboxEntry{}, notFound(err, "notice "+key)
	}
	var e core.OutboxEntry
	if err := json.Unmarshal([]byte(body), &e.Notice); err != nil {
		return e, fmt.Errorf("staged notice %q: %w", key, err)
	}
	e.CreatedAt = time.UnixMilli(created)
	return e, nil
}

// Staged counts the notices waiting for the holder to move them.
func (o *Outbox) Staged(ctx context.Context) (int, error) {
	var n int
	err := o.db.QueryRow(ctx, stagedNoticesCount).Scan(&n)
	return n, err
}
