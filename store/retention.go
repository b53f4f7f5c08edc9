package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/retention"
)

// Each prune deletes at most $limit rows picked by a subquery, so one
// statement is one short write however large the backlog.
const (
	// A sent notice stays while a notice waiting, or sent within the
	// window, targets it: an edit, reaction or thread reply needs its
	// event. A notice given up on goes as long after it was given up.
	pruneSentNoticesQuery = `
		DELETE FROM outbox WHERE seq IN (
			SELECT o.seq FROM outbox o
			WHERE ((o.sent_at > 0 AND o.sent_at < $1) OR (o.failed_at > 0 AND o.failed_at < $1))
			  AND NOT EXISTS (SELECT 1 FROM outbox t WHERE t.target_key = o.key AND ((t.sent_at = 0 AND t.failed_at = 0) OR t.sent_at >= $1))
			ORDER BY o.seq LIMIT $2)`
	pruneHandledEventsQuery = `
		DELETE FROM handled_event WHERE event_id IN (
			SELECT event_id FROM handled_event
			WHERE handled_at < $1 AND handled_at < (SELECT MAX(handled_at) FROM handled_event) - $2
			LIMIT $3)`
	pruneBootsQuery = `
		DELETE FROM agent_boot WHERE (agent, boot_id) IN (
			SELECT b.agent, b.boot_id FROM agent_boot b
			WHERE b.seen_at < $1 AND b.seen_at < (SELECT MAX(l.seen_at) FROM agent_boot l WHERE l.agent = b.agent)
			LIMIT $2)`
	pruneSpendQuery = `
		DELETE FROM agent_spend WHERE (agent, day) IN (SELECT agent, day FROM agent_spend WHERE day < $1 LIMIT $2)`
	pruneApprovalsQuery = `
		DELETE FROM approval WHERE id IN (
			SELECT id FROM approval WHERE status <> 'pending' AND decided_at < $1 LIMIT $2)`
	prunePendingQuery = `
		DELETE FROM pending_action WHERE key IN (
			SELECT key FROM pending_action
			WHERE (resolved_at > 0 AND resolved_at < $1) OR (resolved_at = 0 AND expires_at < $1)
			LIMIT $2)`
	pruneLinkCodesQuery = `
		DELETE FROM link_code WHERE code IN (SELECT code FROM link_code WHERE expires_at < $1 LIMIT $2)`
	pruneLinkFailuresQuery = `
		DELETE FROM link_failure WHERE (account, at) IN (SELECT account, at FROM link_failure WHERE at < $1 LIMIT $2)`
	// An agent's current cycle (that of its latest entry) is what fleet
	// status and the wake router read: its entries stay whatever their age.
	pruneAgentJournalQuery = `
		DELETE FROM agent_journal WHERE (agent, cycle, entry_id) IN (
			SELECT j.agent, j.cycle, j.entry_id FROM agent_journal j
			WHERE j.received_at < $1
			  AND j.cycle NOT IN (
				SELECT l.cycle FROM agent_journal l WHERE l.agent = j.agent
				  AND l.received_at = (SELECT MAX(m.received_at) FROM agent_journal m WHERE m.agent = j.agent))
			LIMIT $2)`
	// An agent's heartbeat of the cycle fleet_agent holds is its latest:
	// a heartbeat, even a resubmission of an older cycle, moves the
	// agent's state to its own cycle.
	pruneHeartbeatsQuery = `
		DELETE FROM agent_heartbeat WHERE (cycle, agent) IN (
			SELECT h.cycle, h.agent FROM agent_heartbeat h
			WHERE h.received_at < $1
			  AND NOT EXISTS (SELECT 1 FROM fleet_agent a WHERE a.agent = h.agent AND a.cycle = h.cycle)
			LIMIT $2)`
	pruneIncidentsQuery = `
		DELETE FROM incident WHERE id IN (
			SELECT id FROM incident WHERE resolved_at > 0 AND resolved_at < $1 LIMIT $2)`
	// A reminder that is sent was delivered once and waits for nothing
	// more but a snooze; due_at is when it was last due.
	pruneRemindersQuery = `
		DELETE FROM reminder WHERE id IN (
			SELECT id FROM reminder WHERE status IN ('done', 'cancelled', 'sent') AND due_at < $1 LIMIT $2)`
	pruneTasksQuery = `
		DELETE FROM notebook WHERE id IN (
			SELECT id FROM notebook WHERE kind = 'task' AND done_at > 0 AND done_at < $1 LIMIT $2)`
	// The router reads CI failures from each agent's current journal
	// cycle (that of its latest entry), and a mark whose entry is still
	// there keeps it from surfacing again: a mark stays while its entry is
	// in its agent's current cycle, whatever its age. The event id is
	// agent/cycle/entry, the source "journal of " and the agent.
	pruneConsumedEventsQuery = `
		DELETE FROM consumed_event WHERE (source, event_id) IN (
			SELECT c.source, c.event_id FROM consumed_event c
			WHERE c.consumed_at < $1
			  AND NOT EXISTS (
				SELECT 1 FROM agent_journal j
				WHERE j.agent = substr(c.source, 12) AND c.source = 'journal of ' || j.agent
				  AND j.cycle = (SELECT l.cycle FROM agent_journal l WHERE l.agent = j.agent ORDER BY l.received_at DESC LIMIT 1)
				  AND c.event_id = j.agent || '/' || j.cycle || '/' || j.entry_id)
			LIMIT $2)`
	finalSubjectsQuery = `
		SELECT id FROM attestation_subject WHERE final_at > 0 AND final_at < $1 ORDER BY final_at LIMIT $2`
	pruneSubjectVerdictsQuery   = `DELETE FROM attestation WHERE subject_id IN (%s)`
	pruneSubjectAwaitedQuery    = `DELETE FROM attestation_awaited WHERE subject_id IN (%s)`
	pruneSubjectSignaturesQuery = `DELETE FROM attestation_signature WHERE subject_id IN (%s)`
	pruneSubjectsQuery          = `DELETE FROM attestation_subject WHERE id IN (%s)`
	deletedTripwiresQuery       = `
		SELECT id FROM tripwire_state WHERE status = 'deleted' AND deleted_at < $1 ORDER BY deleted_at LIMIT $2`
	pruneTripwireStatesQuery = `DELETE FROM tripwire_state WHERE status = 'deleted' AND id IN (%s)`
	pruneTripwiresQuery      = `DELETE FROM tripwire WHERE id IN (%s)`
)

var _ retention.Store = (*Store)(nil)

// prune runs one bounded delete and says how many rows went.
func (s *Store) prune(ctx context.Context, query string, args ...any) (int, error) {
	res, err := s.DB.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// PruneSentNotices deletes up to limit notices sent, or given up on,
// before before that no notice waiting or sent since targets.
func (s *Store) PruneSentNotices(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, pruneSentNoticesQuery, before.UnixMilli(), limit)
}

// PruneHandledEvents deletes up to limit marks of events handled before
// before and more than window before the newest mark, so that a Jarvis
// that was stopped for longer than window keeps the marks a replay of its
// last sync response would need.
func (s *Store) PruneHandledEvents(ctx context.Context, before time.Time, window time.Duration, limit int) (int, error) {
	return s.prune(ctx, pruneHandledEventsQuery, before.UnixMilli(), window.Milliseconds(), limit)
}

// PrunePending deletes up to limit confirmations answered, or expired
// unanswered, before before.
func (s *Store) PrunePending(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, prunePendingQuery, before.UnixMilli(), limit)
}

// PruneLinkCodes deletes up to limit link codes that expired before
// before, then wrong codes sent before before minus core.LinkCodeTTL.
func (s *Store) PruneLinkCodes(ctx context.Context, before time.Time, limit int) (int, error) {
	codes, err := s.prune(ctx, pruneLinkCodesQuery, before.UnixMilli(), limit)
	if err != nil || codes == limit {
		return codes, err
	}
	failures, err := s.prune(ctx, pruneLinkFailuresQuery, before.Add(-core.LinkCodeTTL).UnixMilli(), limit-codes)
	return codes + failures, err
}

// PruneAgentJournal deletes up to limit journal entries received before
// before, keeping every agent's current cycle.
func (s *Store) PruneAgentJournal(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, pruneAgentJournalQuery, before.UnixMilli(), limit)
}

// PruneAgentMeter deletes up to limit boots first seen before before
// (keeping each agent's latest) and days of spend before before's day.
func (s *Store) PruneAgentMeter(ctx context.Context, before time.Time, limit int) (int, error) {
	boots, err := s.prune(ctx, pruneBootsQuery, before.UnixMilli(), limit)
	if err != nil || boots == limit {
		return boots, err
	}
	days, err := s.prune(ctx, pruneSpendQuery, before.UTC().Format(time.DateOnly), limit-boots)
	return boots + days, err
}

// PruneApprovals deletes up to limit approval requests decided (or
// expired) before before.
func (s *Store) PruneApprovals(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, pruneApprovalsQuery, before.UnixMilli(), limit)
}

// PruneAttestations deletes up to limit attestation subjects whose
// outcome became final before before, with their verdicts, awaited agents
// and signatures, in one transaction. An undecided subject stays.
func (s *Store) PruneAttestations(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.tx(ctx, func(ctx context.Context) error {
		rows, err := s.DB.Query(ctx, finalSubjectsQuery, before.UnixMilli(), limit)
		ids, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], err).AsList()
		if err != nil || len(ids) == 0 {
			return err
		}
		in, args := bulkIn(1, len(ids)), bulkArgs(ids)
		for _, q := range []string{pruneSubjectVerdictsQuery, pruneSubjectAwaitedQuery, pruneSubjectSignaturesQuery, pruneSubjectsQuery} {
			if _, err := s.DB.Exec(ctx, fmt.Sprintf(q, in), args...); err != nil {
				return err
			}
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// PruneDeletedTripwires deletes the definitions, state rows and skip logs
// of up to limit tripwires deleted before before, in one transaction.
// Their trips (history, journal, push queue) stay: a deleted tripwire's
// history is kept, as the record of what it noticed, and those tables have
// their own caps.
func (s *Store) PruneDeletedTripwires(ctx context.Context, before time.Time, limit int) (int, error) {
	var n int
	err := s.tx(ctx, func(ctx context.Context) error {
		rows, err := s.DB.Query(ctx, deletedTripwiresQuery, before.UnixMilli(), limit)
		ids, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], err).AsList()
		if err != nil || len(ids) == 0 {
			return err
		}
		in, args := bulkIn(1, len(ids)), bulkArgs(ids)
		if _, err := s.DB.Exec(ctx, fmt.Sprintf(pruneTripwireStatesQuery, in), args...); err != nil {
			return err
		}
		if _, err := s.DB.Exec(ctx, fmt.Sprintf(pruneSkipsQuery, in), args...); err != nil {
			return err
		}
		if _, err := s.DB.Exec(ctx, fmt.Sprintf(pruneTripwiresQuery, in), args...); err != nil {
			return err
		}
		n = len(ids)
		return nil
	})
	return n, err
}

// PruneHeartbeats deletes up to limit heartbeats received before before,
// keeping each agent's latest.
func (s *Store) PruneHeartbeats(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, pruneHeartbeatsQuery, before.UnixMilli(), limit)
}

// PruneIncidents deletes up to limit incidents resolved before before.
func (s *Store) PruneIncidents(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, pruneIncidentsQuery, before.UnixMilli(), limit)
}

// PruneReminders deletes up to limit reminders that will not come again
// and were last due before before, then tasks done before before.
func (s *Store) PruneReminders(ctx context.Context, before time.Time, limit int) (int, error) {
	reminders, err := s.prune(ctx, pruneRemindersQuery, before.UnixMilli(), limit)
	if err != nil || reminders == limit {
		return reminders, err
	}
	tasks, err := s.prune(ctx, pruneTasksQuery, before.UnixMilli(), limit-reminders)
	return reminders + tasks, err
}

// PruneConsumedEvents deletes up to limit marks of source events consumed
// before before whose events no source reports any more.
func (s *Store) PruneConsumedEvents(ctx context.Context, before time.Time, limit int) (int, error) {
	return s.prune(ctx, pruneConsumedEventsQuery, before.UnixMilli(), limit)
}
