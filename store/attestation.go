package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

const (
	createSubjectQuery = `
		INSERT INTO attestation_subject (id, hash, title, opened_at, closes_at)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO NOTHING`
	addAwaitedQuery      = `INSERT INTO attestation_awaited (subject_id, agent) VALUES ($1, $2)`
	subjectColumns       = `id, hash, title, opened_at, closes_at, outcome, outcome_seq, final_at`
	getSubjectQuery      = `SELECT ` + subjectColumns + ` FROM attestation_subject WHERE id = $1`
	awaitedAgentsQuery   = `SELECT agent FROM attestation_awaited WHERE subject_id = $1 ORDER BY agent`
	allOpenSubjectsQuery = `
		SELECT ` + subjectColumns + ` FROM attestation_subject
		WHERE closes_at > $1 ORDER BY opened_at, id`
	agentOpenSubjectsQuery = `
		SELECT s.id, s.hash, s.title, s.opened_at, s.closes_at, s.outcome, s.outcome_seq, s.final_at
		FROM attestation_subject s JOIN attestation_awaited w ON w.subject_id = s.id
		WHERE s.closes_at > $1 AND w.agent = $2 ORDER BY s.opened_at, s.id`
	undecidedSubjectsQuery = `
		SELECT ` + subjectColumns + ` FROM attestation_subject WHERE final_at = 0 ORDER BY opened_at, id`
	setOutcomeQuery     = `UPDATE attestation_subject SET outcome = $2, outcome_seq = $3, final_at = $4 WHERE id = $1`
	recentSubjectsQuery = `
		SELECT ` + subjectColumns + ` FROM attestation_subject WHERE closes_at > $1 ORDER BY opened_at DESC, id DESC LIMIT $2`
	// awaitedSubjectsQuery takes the agents, from $2, in place of %s.
	// awaitedSubjectsQuery starts from the open subjects (by closes_at),
	// which are few however many have closed, and takes the agents, from
	// $2, in place of %s.
	awaitedSubjectsQuery = `
		SELECT w.agent, w.subject_id
		FROM attestation_awaited w
		LEFT JOIN attestation a ON a.subject_id = w.subject_id AND a.agent = w.agent
		WHERE w.subject_id IN (SELECT id FROM attestation_subject WHERE closes_at > $1)
			AND w.agent IN (%s) AND a.agent IS NULL
		ORDER BY w.subject_id`
	putAttestationQuery = `
		INSERT INTO attestation (subject_id, agent, verdict, rationale, signature, posture, received_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7)
		ON CONFLICT (subject_id, agent) DO UPDATE SET
			verdict = excluded.verdict, rationale = excluded.rationale, signature = excluded.signature,
			posture = excluded.posture, received_at = excluded.received_at`
	seenSignatureQuery = `
		INSERT INTO attestation_signature (signature, subject_id, agent, seen_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (signature) DO NOTHING`
	attestationsQuery = `
		SELECT subject_id, agent, verdict, rationale, signature, posture, received_at
		FROM attestation WHERE subject_id = $1 ORDER BY agent`
	// pendingAttestationsQuery takes the agents, from $2, in place of %s.
	pendingAttestationsQuery = `
		SELECT w.agent, COUNT(*)
		FROM attestation_awaited w
		JOIN attestation_subject s ON s.id = w.subject_id
		LEFT JOIN attestation a ON a.subject_id = w.subject_id AND a.agent = w.agent
		WHERE w.agent IN (%s) AND s.closes_at > $1 AND a.agent IS NULL
		GROUP BY w.agent`
)

// AttestationQuery reads and writes attestation subjects and attestations.
type AttestationQuery struct {
	db *dbutil.Database
	// st runs its write transactions, fenced by the lease.
	st *Store
}

var _ fleet.AttestationStore = (*AttestationQuery)(nil)

// Attestations returns the attestation queries.
func (s *Store) Attestations() *AttestationQuery { return &AttestationQuery{db: s.DB, st: s} }

// CreateSubject writes a new subject with the agents it awaits; an id
// already used is core.ErrDuplicate.
func (q *AttestationQuery) CreateSubject(ctx context.Context, s fleet.AttestationSubject) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		res, err := q.db.Exec(ctx, createSubjectQuery, s.ID, s.Hash, s.Title, s.OpenedAt.UnixMilli(), s.ClosesAt.UnixMilli())
		if err != nil {
			return fmt.Errorf("create subject %q: %w", s.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("subject %q: %w", s.ID, core.ErrDuplicate)
		}
		for _, agent := range s.Agents {
			if _, err := q.db.Exec(ctx, addAwaitedQuery, s.ID, agent); err != nil {
				return fmt.Errorf("subject %q awaits %q: %w", s.ID, agent, err)
			}
		}
		return nil
	})
}

// Subject returns a subject with the agents it awaits; core.ErrNotFound
// when there is none.
func (q *AttestationQuery) Subject(ctx context.Context, id string) (fleet.AttestationSubject, error) {
	s, err := scanSubject(q.db.QueryRow(ctx, getSubjectQuery, id))
	if err != nil {
		return s, notFound(err, "subject "+id)
	}
	return s, q.loadAwaited(ctx, &s)
}

// OpenSubjects lists the subjects whose window is open at now, only those
// awaiting agent unless agent is "".
func (q *AttestationQuery) OpenSubjects(ctx context.Context, agent string, now time.Time) ([]fleet.AttestationSubject, error) {
	if agent == "" {
		rows, err := q.db.Query(ctx, allOpenSubjectsQuery, now.UnixMilli())
		return q.withAwaited(ctx, rows, err)
	}
	rows, err := q.db.Query(ctx, agentOpenSubjectsQuery, now.UnixMilli(), agent)
	return q.withAwaited(ctx, rows, err)
}

func (q *AttestationQuery) loadAwaited(ctx context.Context, s *fleet.AttestationSubject) error {
	rows, err := q.db.Query(ctx, awaitedAgentsQuery, s.ID)
	agents, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], err).AsList()
	if err != nil {
		return fmt.Errorf("agents awaited by %q: %w", s.ID, err)
	}
	s.Agents = agents
	return nil
}

// PutAttestation stores an attestation, replacing the agent's earlier one on
// the same subject; a signature stored before is core.ErrDuplicate and
// stores nothing.
func (q *AttestationQuery) PutAttestation(ctx context.Context, a fleet.Attestation) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		res, err := q.db.Exec(ctx, seenSignatureQuery, a.Signature, a.SubjectID, a.Agent, a.ReceivedAt.UnixMilli())
		if err != nil {
			return fmt.Errorf("record signature: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("signature of %s on %q: %w", a.Agent, a.SubjectID, core.ErrDuplicate)
		}
		_, err = q.db.Exec(ctx, putAttestationQuery, a.SubjectID, a.Agent, a.Verdict, a.Rationale, a.Signature, a.Posture,
			a.ReceivedAt.UnixMilli())
		return err
	})
}

// Attestations lists the attestations on a subject, by agent.
func (q *AttestationQuery) Attestations(ctx context.Context, subjectID string) ([]fleet.Attestation, error) {
	rows, err := q.db.Query(ctx, attestationsQuery, subjectID)
	return dbutil.NewRowIterWithError(rows, scanAttestation, err).AsList()
}

// PendingAttestations counts, for each of the agents, the subjects open at
// now that await it and that it has not attested to, in one statement per
// few thousand agents; an agent with none is left out.
func (q *AttestationQuery) PendingAttestations(ctx context.Context, now time.Time, agents []string) (map[string]int, error) {
	out, err := countEach(ctx, q.db, pendingAttestationsQuery, now.UnixMilli(), agents)
	if err != nil {
		return nil, fmt.Errorf("pending attestations of %d agents: %w", len(agents), err)
	}
	return out, nil
}

func scanSubject(row dbutil.Scannable) (fleet.AttestationSubject, error) {
	var s fleet.AttestationSubject
	var opened, closes, final int64
	var outcome string
	if err := row.Scan(&s.ID, &s.Hash, &s.Title, &opened, &closes, &outcome, &s.OutcomeSeq, &final); err != nil {
		return s, err
	}
	s.OpenedAt, s.ClosesAt, s.FinalAt = time.UnixMilli(opened), time.UnixMilli(closes), timeOf(final)
	s.Outcome = fleet.Outcome(outcome)
	return s, nil
}

// AwaitedSubjects lists, for each of the agents, the subjects open at now
// that await it and that it has not attested to, by id, in one
// statement per few thousand agents; an agent with none is left out.
func (q *AttestationQuery) AwaitedSubjects(ctx context.Context, now time.Time, agents []string) (map[string][]string, error) {
	out := map[string][]string{}
	err := bulkChunks(agents, 1, func(chunk []string) error {
		args := append([]any{now.UnixMilli()}, bulkArgs(chunk)...)
		rows, err := q.db.Query(ctx, fmt.Sprintf(awaitedSubjectsQuery, bulkIn(2, len(chunk))), args...)
		return dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (struct{}, error) {
			var agent, id string
			err := row.Scan(&agent, &id)
			out[agent] = append(out[agent], id)
			return struct{}{}, err
		}, err).Iter(func(struct{}) (bool, error) { return true, nil })
	})
	if err != nil {
		return nil, fmt.Errorf("subjects awaiting %d agents: %w", len(agents), err)
	}
	return out, nil
}

// UndecidedSubjects lists the subjects that are not final, oldest first,
// with the agents each awaits.
func (q *AttestationQuery) UndecidedSubjects(ctx context.Context) ([]fleet.AttestationSubject, error) {
	rows, err := q.db.Query(ctx, undecidedSubjectsQuery)
	return q.withAwaited(ctx, rows, err)
}

// RecentSubjects lists up to limit subjects whose window closes after
// since, newest first, with the agents each awaits.
func (q *AttestationQuery) RecentSubjects(ctx context.Context, since time.Time, limit int) ([]fleet.AttestationSubject, error) {
	rows, err := q.db.Query(ctx, recentSubjectsQuery, since.UnixMilli(), limit)
	return q.withAwaited(ctx, rows, err)
}

// withAwaited scans subjects and loads the agents each awaits.
func (q *AttestationQuery) withAwaited(ctx context.Context, rows dbutil.Rows, err error) ([]fleet.AttestationSubject, error) {
	subjects, err := dbutil.NewRowIterWithError(rows, scanSubject, err).AsList()
	if err != nil {
		return nil, err
	}
	for i := range subjects {
		if err := q.loadAwaited(ctx, &subjects[i]); err != nil {
			return nil, err
		}
	}
	return subjects, nil
}

// SetOutcome stores a subject's outcome, its count of changes and when it
// became final (zero: not yet).
func (q *AttestationQuery) SetOutcome(ctx context.Context, id string, o fleet.Outcome, seq int, finalAt time.Time) error {
	if _, err := q.db.Exec(ctx, setOutcomeQuery, id, string(o), seq, millis(finalAt)); err != nil {
		return fmt.Errorf("outcome of %q: %w", id, err)
	}
	return nil
}

func scanAttestation(row dbutil.Scannable) (fleet.Attestation, error) {
	var a fleet.Attestation
	var received int64
	err := row.Scan(&a.SubjectID, &a.Agent, &a.Verdict, &a.Rationale, &a.Signature, &a.Posture, &received)
	a.ReceivedAt = time.UnixMilli(received)
	return a, err
}
