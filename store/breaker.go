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
	"github.com/jarvis-hmi/jarvis/core/breaker"
)

const (
	breakerColumns    = `agent, state, event_id, since, version`
	getBreakerQuery   = `SELECT ` + breakerColumns + ` FROM breaker WHERE agent = $1`
	listBreakersQuery = `SELECT ` + breakerColumns + ` FROM breaker ORDER BY agent`
	// someBreakersQuery takes the list of agents in place of %s; on
	// PostgreSQL someBreakersPGQuery takes it as one array, one statement
	// for any number of agents.
	someBreakersQuery   = `SELECT ` + breakerColumns + ` FROM breaker WHERE agent IN (%s) ORDER BY agent`
	someBreakersPGQuery = `SELECT ` + breakerColumns + ` FROM breaker WHERE agent = ANY($1) ORDER BY agent`
	halfOpenQuery       = `SELECT ` + breakerColumns + ` FROM breaker WHERE state = $1 AND since <= $2 ORDER BY since`
	// moveBreakerQuery is the compare-and-swap of every transition: insert
	// the first row (expected version 0), or update the row only while its
	// version is still the one the caller read.
	moveBreakerQuery = `
		INSERT INTO breaker (agent, state, event_id, since, version) VALUES ($1, $2, $3, $4, $6)
		ON CONFLICT (agent) DO UPDATE SET
			state = excluded.state, event_id = excluded.event_id, since = excluded.since, version = excluded.version
		WHERE breaker.version = $5`

	breakerEventColumns = `id, agent, opened_at, severity, reason, evidence, opened_by, previous_id,
		reviewed_by, reviewed_at, resolved_at, resolved_by, resolution, next_id`
	insertBreakerEventQuery = `INSERT INTO breaker_event (` + breakerEventColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
	updateBreakerEventQuery = `
		UPDATE breaker_event SET reviewed_by = $2, reviewed_at = $3, resolved_at = $4, resolved_by = $5, resolution = $6, next_id = $7
		WHERE id = $1`
	getBreakerEventQuery      = `SELECT ` + breakerEventColumns + ` FROM breaker_event WHERE id = $1`
	breakerEventsByAgentQuery = `
		SELECT ` + breakerEventColumns + ` FROM breaker_event WHERE agent = $1 ORDER BY seq DESC LIMIT $2`

	insertBreakerAuditQuery = `
		INSERT INTO breaker_audit (agent, event_id, action, from_state, to_state, actor, why, at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING seq`
	breakerAuditByEventQuery = `
		SELECT seq, agent, event_id, action, from_state, to_state, actor, why, at
		FROM breaker_audit WHERE event_id = $1 ORDER BY seq`
)

// BreakerQuery keeps circuit breakers, their events and the audit trail.
type BreakerQuery struct {
	db *dbutil.Database
}

var _ breaker.Store = (*BreakerQuery)(nil)

// Breakers returns the circuit breaker queries.
func (s *Store) Breakers() *BreakerQuery { return &BreakerQuery{db: s.DB} }

// Get returns an agent's breaker, closed at version 0 when it has none.
func (q *BreakerQuery) Get(ctx context.Context, agent string) (breaker.Record, error) {
	rec, err := scanBreaker(q.db.QueryRow(ctx, getBreakerQuery, agent))
	if errors.Is(err, sql.ErrNoRows) {
		return breaker.Record{Agent: agent, State: breaker.Closed}, nil
	}
	return rec, err
}

// List returns every breaker ever opened, by agent.
func (q *BreakerQuery) List(ctx context.Context) ([]breaker.Record, error) {
	rows, err := q.db.Query(ctx, listBreakersQuery)
	return dbutil.NewRowIterWithError(rows, scanBreaker, err).AsList()
}

// Some returns the breakers of the named agents that were ever opened, by
// agent.
func (q *BreakerQuery) Some(ctx context.Context, agents []string) ([]breaker.Record, error) {
	if len(agents) == 0 {
		return nil, nil
	}
	query, args := someBreakersPGQuery, []any{agents}
	if q.db.Dialect != dbutil.Postgres {
		query, args = fmt.Sprintf(someBreakersQuery, bulkIn(1, len(agents))), bulkArgs(agents)
	}
	rows, err := q.db.Query(ctx, query, args...)
	return dbutil.NewRowIterWithError(rows, scanBreaker, err).AsList()
}

// HalfOpenBefore returns the breakers half-open since t or earlier.
func (q *BreakerQuery) HalfOpenBefore(ctx context.Context, t time.Time) ([]breaker.Record, error) {
	rows, err := q.db.Query(ctx, halfOpenQuery, string(breaker.HalfOpen), t.UnixMilli())
	return dbutil.NewRowIterWithError(rows, scanBreaker, err).AsList()
}

// Move writes rec if the stored version is still version.
func (q *BreakerQuery) Move(ctx context.Context, rec breaker.Record, version int64) error {
	res, err := q.db.Exec(ctx, moveBreakerQuery, rec.Agent, string(rec.State), rec.EventID, rec.Since.UnixMilli(), version, version+1)
	if err != nil {
		return fmt.Errorf("move breaker of %s: %w", rec.Agent, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("breaker of %s changed meanwhile: %w", rec.Agent, core.ErrConflict)
	}
	return nil
}

// AddEvent writes a new event.
func (q *BreakerQuery) AddEvent(ctx context.Context, e breaker.Event) error {
	evidence, err := json.Marshal(nonNil(e.Evidence))
	if err != nil {
		return err
	}
	_, err = q.db.Exec(ctx, insertBreakerEventQuery, e.ID, e.Agent, e.At.UnixMilli(), string(e.Severity), e.Reason,
		string(evidence), e.OpenedBy, e.PreviousID, e.ReviewedBy, millis(e.ReviewedAt),
		millis(e.ResolvedAt), e.ResolvedBy, string(e.Resolution), e.NextID)
	if err != nil {
		return fmt.Errorf("add breaker event %s: %w", e.ID, err)
	}
	return nil
}

// UpdateEvent writes an event's review and resolution fields.
func (q *BreakerQuery) UpdateEvent(ctx context.Context, e breaker.Event) error {
	res, err := q.db.Exec(ctx, updateBreakerEventQuery, e.ID, e.ReviewedBy, millis(e.ReviewedAt),
		millis(e.ResolvedAt), e.ResolvedBy, string(e.Resolution), e.NextID)
	if err != nil {
		return fmt.Errorf("update breaker event %s: %w", e.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("breaker event %s: %w", e.ID, core.ErrNotFound)
	}
	return nil
}

// Event returns an event.
func (q *BreakerQuery) Event(ctx context.Context, id string) (breaker.Event, error) {
	e, err := scanBreakerEvent(q.db.QueryRow(ctx, getBreakerEventQuery, id))
	return e, notFound(err, "breaker event "+id)
}

// Events returns an agent's latest events, newest first.
func (q *BreakerQuery) Events(ctx context.Context, agent string, limit int) ([]breaker.Event, error) {
	rows, err := q.db.Query(ctx, breakerEventsByAgentQuery, agent, limit)
	return dbutil.NewRowIterWithError(rows, scanBreakerEvent, err).AsList()
}

// AddTransition appends to the audit trail.
func (q *BreakerQuery) AddTransition(ctx context.Context, t breaker.Transition) (int64, error) {
	var seq int64
	err := q.db.QueryRow(ctx, insertBreakerAuditQuery, t.Agent, t.EventID, string(t.Action), string(t.From),
		string(t.To), t.Actor, t.Why, t.At.UnixMilli()).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("add breaker transition of %s: %w", t.Agent, err)
	}
	return seq, nil
}

// Transitions returns the audit trail of an event, oldest first.
func (q *BreakerQuery) Transitions(ctx context.Context, eventID string) ([]breaker.Transition, error) {
	rows, err := q.db.Query(ctx, breakerAuditByEventQuery, eventID)
	return dbutil.NewRowIterWithError(rows, scanBreakerTransition, err).AsList()
}

func scanBreaker(row dbutil.Scannable) (breaker.Record, error) {
	var rec breaker.Record
	var state string
	var since int64
	if err := row.Scan(&rec.Agent, &state, &rec.EventID, &since, &rec.Version); err != nil {
		return rec, err
	}
	rec.State = breaker.State(state)
	rec.Since = time.UnixMilli(since)
	return rec, nil
}

func scanBreakerEvent(row dbutil.Scannable) (breaker.Event, error) {
	var e breaker.Event
	var severity, evidence, resolution string
	var openedAt, reviewedAt, resolvedAt int64
	err := row.Scan(&e.ID, &e.Agent, &openedAt, &severity, &e.Reason, &evidence, &e.OpenedBy, &e.PreviousID,
		&e.ReviewedBy, &reviewedAt, &resolvedAt, &e.ResolvedBy, &resolution, &e.NextID)
	if err != nil {
		return e, err
	}
	if err := json.Unmarshal([]byte(evidence), &e.Evidence); err != nil {
		return e, fmt.Errorf("breaker event %s evidence: %w", e.ID, err)
	}
	e.Severity = breaker.Severity(severity)
	e.Resolution = breaker.Resolution(resolution)
	e.At = time.UnixMilli(openedAt)
	e.ReviewedAt = timeOf(reviewedAt)
	e.ResolvedAt = timeOf(resolvedAt)
	return e, nil
}

func scanBreakerTransition(row dbutil.Scannable) (breaker.Transition, error) {
	var t breaker.Transition
	var action, from, to string
	var at int64
	if err := row.Scan(&t.Seq, &t.Agent, &t.EventID, &action, &from, &to, &t.Actor, &t.Why, &at); err != nil {
		return t, err
	}
	t.Action = breaker.Action(action)
	t.From, t.To = breaker.State(from), breaker.State(to)
	t.At = time.UnixMilli(at)
	return t, nil
}
