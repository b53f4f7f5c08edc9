package store

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

const (
	appendJournalQuery = `
		INSERT INTO agent_journal (agent, cycle, entry_id, title, content, content_signature, signal_weight, evidence, sent_at, received_at, size)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (agent, cycle, entry_id) DO NOTHING`
	journalEntriesQuery = `
		SELECT agent, cycle, entry_id, title, content, content_signature, signal_weight, evidence, sent_at, received_at
		FROM agent_journal WHERE agent = $1 AND cycle = $2 ORDER BY received_at, entry_id`
	// journalPageQuery reads on after the position ($3, $4); -1 is before
	// every entry.
	journalPageQuery = `
		SELECT agent, cycle, entry_id, title, content, content_signature, signal_weight, evidence, sent_at, received_at
		FROM agent_journal WHERE agent = $1 AND cycle = $2 AND (received_at > $3 OR (received_at = $3 AND entry_id > $4))
		ORDER BY received_at, entry_id LIMIT $5`
	// lockJournalQuery takes the advisory lock of an agent's journal ($2)
	// in its class ($1) until the transaction ends: the two-key form,
	// whose keys do not overlap the one-key form's.
	lockJournalQuery = `SELECT pg_advisory_xact_lock($1, hashtext($2))`
	// journalUsageQuery reads agent_journal_cycle_idx alone.
	journalUsageQuery = `
		SELECT COALESCE(SUM(CASE WHEN cycle = $2 THEN 1 ELSE 0 END), 0), COALESCE(SUM(CASE WHEN cycle = $2 THEN size ELSE 0 END), 0),
			COALESCE(SUM(size), 0)
		FROM agent_journal WHERE agent = $1`
	// The evidence column holds the JSON that AppendJournal writes, in
	// which each piece's type is written as "type":"…"; the pattern finds
	// the entries that may carry one type, and scanning checks.
	// It takes the (agent, cycle) rows after the pattern ($1) in place
	// of %s.
	journalEvidenceQuery = `
		SELECT agent, cycle, entry_id, title, content, content_signature, signal_weight, evidence, sent_at, received_at
		FROM agent_journal WHERE (agent, cycle) IN (VALUES %s) AND evidence LIKE $1 ORDER BY agent, received_at, entry_id`
	// journalCountsQuery takes the (agent, cycle) rows in place of %s.
	journalCountsQuery = `
		SELECT agent, COUNT(*) FROM agent_journal WHERE (agent, cycle) IN (VALUES %s) GROUP BY agent`
	latestJournalQuery = `
		SELECT cycle, received_at FROM agent_journal WHERE agent = $1
		ORDER BY received_at DESC LIMIT 1`
	// latestJournalsQuery takes the agents in place of %s. Of the
	// entries that arrived last in the same millisecond, the greatest
	// cycle wins.
	latestJournalsQuery = `
		SELECT j.agent, MAX(j.cycle), j.received_at
		FROM agent_journal j
		JOIN (SELECT agent, MAX(received_at) AS received_at FROM agent_journal WHERE agent IN (%s) GROUP BY agent) latest
			ON latest.agent = j.agent AND latest.received_at = j.received_at
		GROUP BY j.agent, j.received_at`
)

// AgentJournalQuery reads and writes agents' journal entries.
type AgentJournalQuery struct {
	db *dbutil.Database
}

var _ fleet.AgentJournalStore = (*AgentJournalQuery)(nil)

// AgentJournal returns the agent journal queries.
func (s *Store) AgentJournal() *AgentJournalQuery { return &AgentJournalQuery{db: s.DB} }

// journalEvidence is how one piece of evidence is kept in the evidence
// column (JSON).
type journalEvidence struct {
	Type   string `json:"type"`
	URL    string `json:"url,omitempty"`
	Source string `json:"source,omitempty"`
	Key    string `json:"key,omitempty"`
	Value  any    `json:"value,omitempty"`
}

// AppendJournal adds an entry; an entry id the agent already used in the
// cycle is core.ErrConflict.
func (q *AgentJournalQuery) AppendJournal(ctx context.Context, e fleet.AgentJournalEntry) error {
	evidence := make([]journalEvidence, len(e.Evidence))
	for i, ev := range e.Evidence {
		evidence[i] = journalEvidence(ev)
	}
	evidenceJSON, err := json.Marshal(evidence)
	if err != nil {
		return fmt.Errorf("journal entry %q evidence: %w", e.EntryID, err)
	}
	res, err := q.db.Exec(ctx, appendJournalQuery, e.Agent, e.Cycle, e.EntryID, e.Title, e.Content, e.ContentSignature,
		e.SignalWeight, string(evidenceJSON), e.Timestamp.UnixMilli(), e.ReceivedAt.UnixMilli(), e.Size())
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("entry id %q already used by %s in %s: %w", e.EntryID, e.Agent, e.Cycle, core.ErrConflict)
	}
	return nil
}

// JournalEntries lists an agent's entries of a cycle in arrival order.
func (q *AgentJournalQuery) JournalEntries(ctx context.Context, agent, cycle string) ([]fleet.AgentJournalEntry, error) {
	rows, err := q.db.Query(ctx, journalEntriesQuery, agent, cycle)
	return dbutil.NewRowIterWithError(rows, scanJournalEntry, err).AsList()
}

// JournalPage lists up to limit of an agent's entries of a cycle in arrival
// order, from the one after the position given.
func (q *AgentJournalQuery) JournalPage(ctx context.Context, agent, cycle string, after fleet.JournalPosition, limit int) ([]fleet.AgentJournalEntry, error) {
	at := int64(-1)
	if after != (fleet.JournalPosition{}) {
		at = after.ReceivedAt.UnixMilli()
	}
	rows, err := q.db.Query(ctx, journalPageQuery, agent, cycle, at, after.EntryID, limit)
	return dbutil.NewRowIterWithError(rows, scanJournalEntry, err).AsList()
}

// journalLockClass is the first key of the journals' advisory locks.
const journalLockClass int32 = 0x4a524e4c

// JournalUsage says how many entries and bytes the agent's cycle holds,
// and how many bytes all its cycles hold. In a transaction marked
// core.LockedReads it first takes the agent's journal lock, which such a
// transaction holds until it ends: of two that read the usage and then
// append, the second reads after the first has appended.
func (q *AgentJournalQuery) JournalUsage(ctx context.Context, agent, cycle string) (fleet.JournalUsage, error) {
	var u fleet.JournalUsage
	if onLockedReads(ctx) {
		if _, err := q.db.Exec(ctx, lockJournalQuery, journalLockClass, agent); err != nil {
			return u, fmt.Errorf("lock the journal of %s: %w", agent, err)
		}
	}
	err := q.db.QueryRow(ctx, journalUsageQuery, agent, cycle).Scan(&u.CycleEntries, &u.CycleBytes, &u.AgentBytes)
	if err != nil {
		return u, fmt.Errorf("journal usage of %s: %w", agent, err)
	}
	return u, nil
}

// JournalEntriesWithEvidence lists the entries that carry evidence of
// evidenceType of each agent named, of the cycle given beside it, by agent
// and in arrival order, in one statement per few thousand agents.
func (q *AgentJournalQuery) JournalEntriesWithEvidence(ctx context.Context, cycles map[string]string, evidenceType string) ([]fleet.AgentJournalEntry, error) {
	quoted, err := json.Marshal(evidenceType)
	if err != nil {
		return nil, err
	}
	pattern := `%"type":` + string(quoted) + `%`
	agents := slices.Sorted(maps.Keys(cycles))
	var entries []fleet.AgentJournalEntry
	err = bulkChunks(agents, 2, func(chunk []string) error {
		args := make([]any, 1, 1+2*len(chunk))
		args[0] = pattern
		for _, agent := range chunk {
			args = append(args, agent, cycles[agent])
		}
		rows, err := q.db.Query(ctx, fmt.Sprintf(journalEvidenceQuery, bulkRows("($%d, $%d)", len(chunk), 2, 1)), args...)
		some, err := dbutil.NewRowIterWithError(rows, scanJournalEntry, err).AsList()
		entries = append(entries, some...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("journal entries with %s evidence of %d agents: %w", evidenceType, len(agents), err)
	}
	// LIKE reads _ and % in the type as wildcards: keep exact matches.
	return slices.DeleteFunc(entries, func(e fleet.AgentJournalEntry) bool {
		return !slices.ContainsFunc(e.Evidence, func(ev fleet.JournalEvidence) bool { return ev.Type == evidenceType })
	}), nil
}

// JournalCounts counts, for each agent named, its entries of the cycle
// given beside it, in one statement per few thousand agents; an agent
// without entries there is left out.
func (q *AgentJournalQuery) JournalCounts(ctx context.Context, cycles map[string]string) (map[string]int, error) {
	agents := slices.Sorted(maps.Keys(cycles))
	out := make(map[string]int, len(agents))
	err := bulkChunks(agents, 2, func(chunk []string) error {
		args := make([]any, 0, 2*len(chunk))
		for _, agent := range chunk {
			args = append(args, agent, cycles[agent])
		}
		rows, err := q.db.Query(ctx, fmt.Sprintf(journalCountsQuery, bulkRows("($%d, $%d)", len(chunk), 2, 0)), args...)
		return scanCounts(rows, err, out)
	})
	if err != nil {
		return nil, fmt.Errorf("count the journal entries of %d agents: %w", len(agents), err)
	}
	return out, nil
}

// LatestJournal returns the cycle and arrival time of an agent's most recent
// entry; core.ErrNotFound when it has none.
func (q *AgentJournalQuery) LatestJournal(ctx context.Context, agent string) (string, time.Time, error) {
	var cycle string
	var at int64
	if err := q.db.QueryRow(ctx, latestJournalQuery, agent).Scan(&cycle, &at); err != nil {
		return "", time.Time{}, notFound(err, "journal of "+agent)
	}
	return cycle, time.UnixMilli(at), nil
}

// LatestJournals returns the cycle and arrival time of the most recent
// entry of each of the agents that has one, in one statement per few
// thousand agents.
func (q *AgentJournalQuery) LatestJournals(ctx context.Context, agents []string) (map[string]fleet.JournalMark, error) {
	out := make(map[string]fleet.JournalMark, len(agents))
	err := bulkChunks(agents, 1, func(chunk []string) error {
		rows, err := q.db.Query(ctx, fmt.Sprintf(latestJournalsQuery, bulkIn(1, len(chunk))), bulkArgs(chunk)...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var agent, cycle string
			var at int64
			if err := rows.Scan(&agent, &cycle, &at); err != nil {
				return err
			}
			out[agent] = fleet.JournalMark{Cycle: cycle, At: time.UnixMilli(at)}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("latest journal entries of %d agents: %w", len(agents), err)
	}
	return out, nil
}

func scanJournalEntry(row dbutil.Scannable) (fleet.AgentJournalEntry, error) {
	var e fleet.AgentJournalEntry
	var evidenceJSON string
	var sent, received int64
	err := row.Scan(&e.Agent, &e.Cycle, &e.EntryID, &e.Title, &e.Content, &e.ContentSignature, &e.SignalWeight,
		&evidenceJSON, &sent, &received)
	if err != nil {
		return e, err
	}
	var evidence []journalEvidence
	if err := json.Unmarshal([]byte(evidenceJSON), &evidence); err != nil {
		return e, fmt.Errorf("journal entry %q evidence: %w", e.EntryID, err)
	}
	for _, ev := range evidence {
		e.Evidence = append(e.Evidence, fleet.JournalEvidence(ev))
	}
	e.Timestamp, e.ReceivedAt = time.UnixMilli(sent), time.UnixMilli(received)
	return e, nil
}
