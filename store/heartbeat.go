package store

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

const (
	upsertAgentState = `
		ON CONFLICT (agent) DO UPDATE SET
			cycle = excluded.cycle, last_at = excluded.last_at, next_expected_by = excluded.next_expected_by,
			streak = excluded.streak, mii = excluded.mii, mode = excluded.mode, notes = excluded.notes,
			announced = excluded.announced, incident = excluded.incident, metered = excluded.metered,
			grace_until = excluded.grace_until`
	upsertHeartbeat = `
		ON CONFLICT (cycle, agent) DO UPDATE SET
			sent_at = excluded.sent_at, received_at = excluded.received_at,
			mii = excluded.mii, mode = excluded.mode, notes = excluded.notes
		RETURNING agent, cycle, first_received_at = received_at`
	agentStateColumns   = `agent, cycle, last_at, next_expected_by, streak, mii, mode, notes, announced, incident, metered, grace_until`
	getAgentStateQuery  = `SELECT ` + agentStateColumns + ` FROM fleet_agent WHERE agent = $1`
	allAgentStatesQuery = `SELECT ` + agentStateColumns + ` FROM fleet_agent ORDER BY agent`
	// someAgentStatesQuery takes the list of agents in place of %s.
	someAgentStatesQuery = `SELECT ` + agentStateColumns + ` FROM fleet_agent WHERE agent IN (%s) ORDER BY agent`
	putAgentStateQuery   = `
		INSERT INTO fleet_agent (` + agentStateColumns + `)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)` + upsertAgentState
	putHeartbeatQuery = `
		INSERT INTO agent_heartbeat (agent, cycle, sent_at, first_received_at, received_at, mii, mode, notes)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8)` + upsertHeartbeat
	// The same writes on PostgreSQL take one array per column, so that a
	// batch of any size is one statement, prepared once per connection:
	// a multi-row VALUES list is a new statement for every batch size,
	// each prepared (a round trip of its own) on every connection it
	// meets.
	someAgentStatesPGQuery = `SELECT ` + agentStateColumns + ` FROM fleet_agent WHERE agent = ANY($1) ORDER BY agent`
	putAgentStatesPGQuery  = `
		INSERT INTO fleet_agent (` + agentStateColumns + `)
		SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::integer[], $6::float8[], $7::text[],
			$8::text[], $9::text[], $10::integer[], $11::text[], $12::bigint[])` + upsertAgentState
	putHeartbeatsPGQuery = `
		INSERT INTO agent_heartbeat (agent, cycle, sent_at, first_received_at, received_at, mii, mode, notes)
		SELECT agent, cycle, sent_at, received_at, received_at, mii, mode, notes
		FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[], $5::float8[], $6::text[], $7::text[])
			AS hb (agent, cycle, sent_at, received_at, mii, mode, notes)` + upsertHeartbeat
	getHeartbeatQuery = `
		SELECT agent, cycle, sent_at, received_at, mii, mode, notes
		FROM agent_heartbeat WHERE agent = $1 AND cycle = $2`
)

// heartbeatChunk bounds the rows of one multi-row statement, well under
// SQLite's and PostgreSQL's parameter limits.
const heartbeatChunk = 500

var (
	putHeartbeatsBuilder = dbutil.NewMassInsertBuilder[heartbeatRow, [0]any](
		putHeartbeatQuery, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)")
	putAgentStatesBuilder = dbutil.NewMassInsertBuilder[agentStateRow, [0]any](
		putAgentStateQuery, "($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)")
)

// heartbeatRow is a heartbeat as the agent_heartbeat table takes it; a new
// row's first_received_at is its received_at.
type heartbeatRow fleet.Heartbeat

// GetMassInsertValues returns the row's columns for a multi-row insert.
func (hb heartbeatRow) GetMassInsertValues() [8]any {
	received := hb.ReceivedAt.UnixMilli()
	return [8]any{hb.Agent, hb.Cycle, hb.Timestamp.UnixMilli(), received, received, hb.MII, hb.Mode, hb.Notes}
}

// agentStateRow is an agent's state as the fleet_agent table takes it.
type agentStateRow fleet.AgentState

// GetMassInsertValues returns the row's columns for a multi-row upsert.
func (st agentStateRow) GetMassInsertValues() [12]any {
	return [12]any{st.Agent, st.Cycle, st.LastAt.UnixMilli(), st.NextExpectedBy.UnixMilli(), st.Streak, st.MII, st.Mode,
		st.Notes, st.Announced, st.Incident, st.Metered, millis(st.GraceUntil)}
}

// HeartbeatQuery reads and writes agents' heartbeats and reporting state.
type HeartbeatQuery struct {
	db *dbutil.Database
}

var _ fleet.HeartbeatStore = (*HeartbeatQuery)(nil)

// Heartbeats returns the heartbeat queries.
func (s *Store) Heartbeats() *HeartbeatQuery { return &HeartbeatQuery{db: s.DB} }

// AgentState returns an agent's reporting state; core.ErrNotFound before its
// first heartbeat.
func (q *HeartbeatQuery) AgentState(ctx context.Context, agent string) (fleet.AgentState, error) {
	st, err := scanAgentState(q.db.QueryRow(ctx, getAgentStateQuery, agent))
	return st, notFound(err, "fleet agent "+agent)
}

// AgentStates returns the state of the named agents (of every agent that
// ever reported when none are named), by name. In a transaction marked
// core.LockedReads it locks the named agents' rows until the transaction
// ends, in the order of their names (so that two such transactions never
// wait for each other in a circle): whoever else writes them waits, and
// their next reader sees what this transaction wrote.
func (q *HeartbeatQuery) AgentStates(ctx context.Context, agents ...string) ([]fleet.AgentState, error) {
	query := allAgentStatesQuery
	args := make([]any, len(agents))
	switch {
	case len(agents) > 0 && onLockedReads(ctx):
		query, args = someAgentStatesPGQuery+" FOR UPDATE", []any{agents}
	case len(agents) > 0 && q.db.Dialect == dbutil.Postgres:
		query, args = someAgentStatesPGQuery, []any{agents}
	case len(agents) > 0:
		placeholders := make([]string, len(agents))
		for i, agent := range agents {
			placeholders[i] = fmt.Sprintf("$%d", i+1)
			args[i] = agent
		}
		query = fmt.Sprintf(someAgentStatesQuery, strings.Join(placeholders, ", "))
	}
	rows, err := q.db.Query(ctx, query, args...)
	return dbutil.NewRowIterWithError(rows, scanAgentState, err).AsList()
}

// PutAgentStates writes agents' reporting states, each agent at most once.
func (q *HeartbeatQuery) PutAgentStates(ctx context.Context, states ...fleet.AgentState) error {
	if q.db.Dialect == dbutil.Postgres {
		return q.putAgentStatesPG(ctx, states)
	}
	for chunk := range slices.Chunk(states, heartbeatChunk) {
		rows := make([]agentStateRow, len(chunk))
		for i, st := range chunk {
			rows[i] = agentStateRow(st)
		}
		query, args := putAgentStatesBuilder.Build([0]any{}, rows)
		if _, err := q.db.Exec(ctx, query, args...); err != nil {
			return fmt.Errorf("put %d fleet agent states: %w", len(rows), err)
		}
	}
	return nil
}

// putAgentStatesPG is PutAgentStates on PostgreSQL: one statement.
func (q *HeartbeatQuery) putAgentStatesPG(ctx context.Context, states []fleet.AgentState) error {
	n := len(states)
	agents, cycles, modes, notes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	announced, metered := make([]string, n), make([]string, n)
	lastAt, nextBy, graceUntil := make([]int64, n), make([]int64, n), make([]int64, n)
	streaks, incidents := make([]int32, n), make([]int32, n)
	miis := make([]float64, n)
	for i, st := range states {
		agents[i], cycles[i], modes[i], notes[i], announced[i], metered[i] = st.Agent, st.Cycle, st.Mode, st.Notes, st.Announced, st.Metered
		lastAt[i], nextBy[i], graceUntil[i] = st.LastAt.UnixMilli(), st.NextExpectedBy.UnixMilli(), millis(st.GraceUntil)
		streaks[i], incidents[i] = int32(st.Streak), int32(st.Incident)
		miis[i] = st.MII
	}
	_, err := q.db.Exec(ctx, putAgentStatesPGQuery, agents, cycles, lastAt, nextBy, streaks, miis, modes, notes, announced,
		incidents, metered, graceUntil)
	if err != nil {
		return fmt.Errorf("put %d fleet agent states: %w", n, err)
	}
	return nil
}

// PutHeartbeats upserts heartbeats, each (agent, cycle) at most once, and
// reports for each whether it is its cycle's first (the row is new).
func (q *HeartbeatQuery) PutHeartbeats(ctx context.Context, hbs []fleet.Heartbeat) ([]bool, error) {
	firstOf := make(map[heartbeatKey]bool, len(hbs))
	for chunk := range slices.Chunk(hbs, heartbeatChunk) {
		query, args := q.putHeartbeatsQuery(chunk)
		res, err := q.db.Query(ctx, query, args...)
		chunkFirst, err := dbutil.RowIterAsMap(dbutil.NewRowIterWithError(res, scanHeartbeatFirst, err),
			func(f heartbeatFirst) (heartbeatKey, bool) { return f.key, f.first })
		if err != nil {
			return nil, fmt.Errorf("put %d heartbeats: %w", len(chunk), err)
		}
		maps.Copy(firstOf, chunkFirst)
	}
	first := make([]bool, len(hbs))
	for i, hb := range hbs {
		first[i] = firstOf[heartbeatKey{hb.Agent, hb.Cycle}]
	}
	return first, nil
}

// putHeartbeatsQuery is the upsert of hbs and its arguments: one array
// per column on PostgreSQL, a row of values per heartbeat on SQLite.
func (q *HeartbeatQuery) putHeartbeatsQuery(hbs []fleet.Heartbeat) (string, []any) {
	if q.db.Dialect != dbutil.Postgres {
		rows := make([]heartbeatRow, len(hbs))
		for i, hb := range hbs {
			rows[i] = heartbeatRow(hb)
		}
		return putHeartbeatsBuilder.Build([0]any{}, rows)
	}
	n := len(hbs)
	agents, cycles, modes, notes := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	sent, received := make([]int64, n), make([]int64, n)
	miis := make([]float64, n)
	for i, hb := range hbs {
		agents[i], cycles[i], modes[i], notes[i] = hb.Agent, hb.Cycle, hb.Mode, hb.Notes
		sent[i], received[i] = hb.Timestamp.UnixMilli(), hb.ReceivedAt.UnixMilli()
		miis[i] = hb.MII
	}
	return putHeartbeatsPGQuery, []any{agents, cycles, sent, received, miis, modes, notes}
}

// Heartbeat returns the stored heartbeat of (agent, cycle).
func (q *HeartbeatQuery) Heartbeat(ctx context.Context, agent, cycle string) (fleet.Heartbeat, error) {
	var hb fleet.Heartbeat
	var sent, received int64
	err := q.db.QueryRow(ctx, getHeartbeatQuery, agent, cycle).
		Scan(&hb.Agent, &hb.Cycle, &sent, &received, &hb.MII, &hb.Mode, &hb.Notes)
	if err != nil {
		return hb, notFound(err, fmt.Sprintf("heartbeat of %s for %s", agent, cycle))
	}
	hb.Timestamp, hb.ReceivedAt = time.UnixMilli(sent), time.UnixMilli(received)
	return hb, nil
}

type heartbeatKey struct{ agent, cycle string }

// heartbeatFirst is what the heartbeat upsert returns per row: whether the
// row is new.
type heartbeatFirst struct {
	key   heartbeatKey
	first bool
}

func scanHeartbeatFirst(row dbutil.Scannable) (heartbeatFirst, error) {
	var f heartbeatFirst
	err := row.Scan(&f.key.agent, &f.key.cycle, &f.first)
	return f, err
}

func scanAgentState(row dbutil.Scannable) (fleet.AgentState, error) {
	var st fleet.AgentState
	var lastAt, nextExpected, grace int64
	err := row.Scan(&st.Agent, &st.Cycle, &lastAt, &nextExpected, &st.Streak, &st.MII, &st.Mode, &st.Notes,
		&st.Announced, &st.Incident, &st.Metered, &grace)
	if err != nil {
		return st, err
	}
	st.LastAt, st.NextExpectedBy, st.GraceUntil = time.UnixMilli(lastAt), time.UnixMilli(nextExpected), timeOf(grace)
	return st, nil
}
