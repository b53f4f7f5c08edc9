package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

const (
	tripwireColumns = `
		t.id, t.scope, t.label, t.rationale, t.source_kind, t.source_param, t.condition, t.action_journal,
		t.action_push, t.created_at, t.updated_at, s.status, s.cooldown_seconds, s.last_tripped_at, s.last_reset_at,
		s.trip_seq, s.trip_pushed, s.last_observed, s.error_streak, s.last_error, s.flap_since, s.quarantine_reason,
		s.quarantine_count, t.source_trust, t.action_urgent, s.snoozed_until`
	tripwireFrom        = ` FROM tripwire t JOIN tripwire_state s ON s.id = t.id`
	insertTripwireQuery = `
		INSERT INTO tripwire (id, scope, label, rationale, source_kind, source_param, condition, action_journal,
			action_push, created_at, updated_at, source_trust, action_urgent)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`
	insertTripwireStateQuery = `
		INSERT INTO tripwire_state (id, rev, status, cooldown_seconds, last_tripped_at, last_reset_at, trip_seq,
			trip_pushed, last_observed, error_streak, last_error, flap_since, quarantine_reason, quarantine_count)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
	getTripwireQuery = `SELECT ` + tripwireColumns + tripwireFrom + `
		WHERE t.scope = $1 AND t.id = $2 AND s.status <> 'deleted'`
	listTripwiresQuery = `SELECT ` + tripwireColumns + tripwireFrom + `
		WHERE t.scope = $1 AND s.status <> 'deleted' ORDER BY t.created_at, t.id`
	saveTripwireQuery = `
		UPDATE tripwire SET label = $3, rationale = $4, action_journal = $5, action_push = $6, updated_at = $7,
			source_trust = $8, action_urgent = $9
		WHERE scope = $1 AND id = $2`
	saveTripwireStateQuery = `
		UPDATE tripwire_state SET rev = $2, status = $3, cooldown_seconds = $4, last_observed = $5, error_streak = $6,
			last_error = $7, flap_since = $8, quarantine_reason = $9
		WHERE id = $1`
	deleteTripwireQuery = `
		UPDATE tripwire_state SET rev = $3, status = 'deleted', deleted_at = $4
		WHERE id = (SELECT id FROM tripwire WHERE scope = $1 AND id = $2) AND status <> 'deleted'`
	nextTripwireRevQuery = `UPDATE tripwire_rev SET rev = rev + 1 WHERE id = 1 RETURNING rev`
	countScopeQuery      = `
		SELECT COUNT(*) FROM tripwire t JOIN tripwire_state s ON s.id = t.id WHERE t.scope = $1 AND s.status <> 'deleted'`
	reviseScopeQuery            = `UPDATE tripwire_state SET rev = $2 WHERE id IN (SELECT id FROM tripwire WHERE scope = $1)`
	tripwireCountCreationsQuery = `SELECT COUNT(*) FROM tripwire_creation WHERE scope = $1 AND at > $2`
	tripwireInsertCreationQuery = `INSERT INTO tripwire_creation (scope, at) VALUES ($1, $2)`
	tripwirePruneCreationsQuery = `DELETE FROM tripwire_creation WHERE scope = $1 AND at <= $2`

	tripColumns      = `tripwire_id, trip, label, at, observed_value, observed_context, summary`
	tripHistoryQuery = `
		SELECT ` + tripColumns + ` FROM (
			SELECT seq, ` + tripColumns + ` FROM tripwire_history WHERE scope = $1 AND tripwire_id = $2
			ORDER BY seq DESC LIMIT $3
		) AS latest ORDER BY seq`
	tripJournalAfterQuery = `
		SELECT seq, ` + tripColumns + ` FROM tripwire_journal WHERE scope = $1 AND seq > $2 ORDER BY seq LIMIT $3`
	tripLatestJournalQuery = `
		SELECT seq, ` + tripColumns + ` FROM (
			SELECT seq, ` + tripColumns + ` FROM tripwire_journal WHERE scope = $1 ORDER BY seq DESC LIMIT $2
		) AS latest ORDER BY seq`
	tripCountJournalAfterQuery = `SELECT COUNT(*) FROM tripwire_journal WHERE scope = $1 AND seq > $2`
	tripGetJournalCursorQuery  = `SELECT seq FROM tripwire_journal_cursor WHERE scope = $1`
	tripSetJournalCursorQuery  = `
		INSERT INTO tripwire_journal_cursor (scope, seq) VALUES ($1, $2)
		ON CONFLICT (scope) DO UPDATE SET seq = excluded.seq`
	tripPushQueueQuery  = `SELECT seq, ` + tripColumns + ` FROM tripwire_push WHERE scope = $1 ORDER BY seq`
	tripDeletePushQuery = `DELETE FROM tripwire_push WHERE scope = $1 AND seq <= $2`
	insertTripsQuery    = `INSERT INTO %s (tripwire_id, scope, trip, label, at, observed_value, observed_context, summary) VALUES %s`
	tripRow             = `($%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d)`
	// tripTrimQuery keeps the newest $1 rows of each key: a scalar subquery
	// finds each key's cut-off seq through the index, then everything at or
	// below it goes.
	tripTrimQuery = `
		WITH cut AS (
			SELECT k.column1 AS key,
				(SELECT t.seq FROM %[1]s t WHERE t.%[2]s = k.column1 ORDER BY t.seq DESC LIMIT 1 OFFSET $1) AS seq
			FROM (VALUES %[3]s) AS k
		)
		DELETE FROM %[1]s WHERE seq IN (SELECT t.seq FROM %[1]s t JOIN cut ON t.%[2]s = cut.key AND t.seq <= cut.seq)`

	tripwireStateColumns   = `id, rev, status, cooldown_seconds, last_tripped_at, last_observed, error_streak`
	tripwireAllStatesQuery = `SELECT ` + tripwireStateColumns + ` FROM tripwire_state WHERE status <> 'deleted'`
	tripwireChangedQuery   = `SELECT ` + tripwireStateColumns + ` FROM tripwire_state WHERE rev > $1`
	tripwireRevQuery       = `SELECT rev FROM tripwire_rev WHERE id = 1`
	tripwireSpecsQuery     = `SELECT id, scope, source_kind, source_param, condition FROM tripwire WHERE id IN (%s)`
	// tripwireRecordsQuery names the ids for both tables (the same
	// parameters twice), so that PostgreSQL looks them up in each primary
	// key rather than join the rows of one to a scan of the other.
	tripwireRecordsQuery = `SELECT ` + tripwireColumns + tripwireFrom + ` WHERE t.id IN (%[1]s) AND s.id IN (%[1]s)`
	tripRecentQuery      = `SELECT tripwire_id, at FROM tripwire_history WHERE at > $1 AND tripwire_id IN (%s)`
	// tripwireObservedQuery and tripwireTickStateQuery update the rows the
	// VALUES list in place of the first %s names by id (column1), under the
	// revision $1, in one statement; the casts tell PostgreSQL the
	// parameters' types, which it cannot infer inside VALUES. The second %s
	// names the ids again: without it PostgreSQL joins the list to the
	// whole table, a scan of every tripwire for each statement, where the
	// list lets it look each id up in the primary key.
	tripwireObservedQuery = `
		UPDATE tripwire_state SET rev = CAST($1 AS BIGINT), last_observed = v.column2, error_streak = v.column3,
			last_error = v.column4
		FROM (VALUES %s) AS v WHERE tripwire_state.id = v.column1 AND tripwire_state.id IN (%s)`
	tripwireObservedRow    = `($%d, $%d, CAST($%d AS INTEGER), $%d)`
	tripwireTickStateQuery = `
		UPDATE tripwire_state SET rev = CAST($1 AS BIGINT), status = v.column2, last_tripped_at = v.column3,
			last_reset_at = v.column4, trip_seq = v.column5, trip_pushed = v.column6, last_observed = v.column7,
			error_streak = v.column8, last_error = v.column9, quarantine_reason = v.column10,
			quarantine_count = v.column11
		FROM (VALUES %s) AS v WHERE tripwire_state.id = v.column1 AND tripwire_state.id IN (%s)`
	tripwireTickStateRow = `($%d, $%d, CAST($%d AS BIGINT), CAST($%d AS BIGINT), CAST($%d AS BIGINT), CAST($%d AS BOOLEAN), ` +
		`$%d, CAST($%d AS INTEGER), $%d, $%d, CAST($%d AS INTEGER))`
)

// bulkParams bounds the parameters of one bulk statement, well under the
// limits of SQLite (32766) and PostgreSQL (65535).
const bulkParams = 8000

// TripwireQuery keeps tripwires, their trips and the evaluator's state.
type TripwireQuery struct {
	db *dbutil.Database
	// st runs its write transactions, fenced by the lease.
	st *Store
}

var _ tripwire.Store = (*TripwireQuery)(nil)

// Tripwires returns the tripwire queries.
func (s *Store) Tripwires() *TripwireQuery { return &TripwireQuery{db: s.DB, st: s} }

// InsertTripwire writes a new tripwire.
func (q *TripwireQuery) InsertTripwire(ctx context.Context, r tripwire.Record) error {
	cond, err := json.Marshal(r.Condition)
	if err != nil {
		return fmt.Errorf("tripwire %q condition: %w", r.ID, err)
	}
	return q.st.tx(ctx, func(ctx context.Context) error {
		rev, err := q.nextRev(ctx)
		if err != nil {
			return err
		}
		_, err = q.db.Exec(ctx, insertTripwireQuery, r.ID, r.Scope, r.Label, r.Rationale, r.Source.Kind, r.Source.Param,
			string(cond), r.Action.Journal, r.Action.Push, r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli(), string(r.SourceTrust), r.Action.Urgent)
		if err != nil {
			return fmt.Errorf("insert tripwire %q: %w", r.ID, err)
		}
		_, err = q.db.Exec(ctx, insertTripwireStateQuery, r.ID, rev, string(r.Status), r.CooldownSeconds,
			tripMillisPtr(r.LastTrippedAt), tripMillisPtr(r.LastResetAt), r.TripSeq, r.TripPushed, r.LastObserved,
			r.ErrorStreak, r.LastError, millis(r.FlapSince), r.QuarantineReason, r.QuarantineCount)
		if err != nil {
			return fmt.Errorf("insert tripwire %q state: %w", r.ID, err)
		}
		return nil
	})
}

// moveScopeQueries give a scope's tripwires and trips to another.
var moveScopeQueries = []string{
	`UPDATE tripwire SET scope = $2 WHERE scope = $1`,
	`UPDATE tripwire_history SET scope = $2 WHERE scope = $1`,
	`UPDATE tripwire_journal SET scope = $2 WHERE scope = $1`,
	`UPDATE tripwire_push SET scope = $2 WHERE scope = $1`,
}

// MoveScope gives scope from's tripwires and their trips to scope to,
// under a new revision.
func (q *TripwireQuery) MoveScope(ctx context.Context, from, to string) (int, error) {
	var n int
	if err := q.db.QueryRow(ctx, countScopeQuery, from).Scan(&n); err != nil {
		return 0, fmt.Errorf("count the tripwires of %s: %w", from, err)
	}
	rev, err := q.nextRev(ctx)
	if err != nil {
		return 0, err
	}
	if _, err := q.db.Exec(ctx, reviseScopeQuery, from, rev); err != nil {
		return 0, fmt.Errorf("revise the tripwires of %s: %w", from, err)
	}
	for _, query := range moveScopeQueries {
		if _, err := q.db.Exec(ctx, query, from, to); err != nil {
			return 0, fmt.Errorf("move the tripwires of %s: %w", from, err)
		}
	}
	return n, nil
}

// nextRev takes the next revision; the counter row also serializes
// writers, so revisions commit in order.
func (q *TripwireQuery) nextRev(ctx context.Context) (int64, error) {
	var rev int64
	if err := q.db.QueryRow(ctx, nextTripwireRevQuery).Scan(&rev); err != nil {
		return 0, fmt.Errorf("next tripwire revision: %w", err)
	}
	return rev, nil
}

// Tripwire returns one of scope's tripwires.
func (q *TripwireQuery) Tripwire(ctx context.Context, scope, id string) (tripwire.Record, error) {
	rec, err := scanTripwire(q.db.QueryRow(ctx, getTripwireQuery, scope, id))
	return rec, notFound(err, "tripwire "+id)
}

// ListTripwires lists scope's tripwires, oldest first.
func (q *TripwireQuery) ListTripwires(ctx context.Context, scope string) ([]tripwire.Record, error) {
	rows, err := q.db.Query(ctx, listTripwiresQuery, scope)
	return dbutil.NewRowIterWithError(rows, scanTripwire, err).AsList()
}

// SaveTripwire writes back what a person may change: settings, status and
// the evaluator state a re-arm clears.
func (q *TripwireQuery) SaveTripwire(ctx context.Context, r tripwire.Record) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		res, err := q.db.Exec(ctx, saveTripwireQuery, r.Scope, r.ID, r.Label, r.Rationale, r.Action.Journal,
			r.Action.Push, r.UpdatedAt.UnixMilli(), string(r.SourceTrust), r.Action.Urgent)
		if err != nil {
			return fmt.Errorf("save tripwire %q: %w", r.ID, err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("tripwire %s: %w", r.ID, core.ErrNotFound)
		}
		rev, err := q.nextRev(ctx)
		if err != nil {
			return err
		}
		_, err = q.db.Exec(ctx, saveTripwireStateQuery, r.ID, rev, string(r.Status), r.CooldownSeconds, r.LastObserved,
			r.ErrorStreak, r.LastError, millis(r.FlapSince), r.QuarantineReason)
		if err != nil {
			return fmt.Errorf("save tripwire %q state: %w", r.ID, err)
		}
		return nil
	})
}

// DeleteTripwire deletes one of scope's tripwires. Its state row stays,
// marked deleted at at, so the evaluator learns of it, until the
// retention pass drops it; its trips stay too.
func (q *TripwireQuery) DeleteTripwire(ctx context.Context, scope, id string, at time.Time) error {
	return q.st.tx(ctx, func(ctx context.Context) error {
		rev, err := q.nextRev(ctx)
		if err != nil {
			return err
		}
		res, err := q.db.Exec(ctx, deleteTripwireQuery, scope, id, rev, at.UnixMilli())
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("tripwire %s: %w", id, core.ErrNotFound)
		}
		return nil
	})
}

// CountTripwires counts scope's tripwires that are not deleted.
func (q *TripwireQuery) CountTripwires(ctx context.Context, scope string) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, countScopeQuery, scope).Scan(&n)
	return n, err
}

// CountCreations counts scope's creations since a time.
func (q *TripwireQuery) CountCreations(ctx context.Context, scope string, since time.Time) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, tripwireCountCreationsQuery, scope, since.UnixMilli()).Scan(&n)
	return n, err
}

// RecordCreation notes a creation and forgets those older than the window.
func (q *TripwireQuery) RecordCreation(ctx context.Context, scope string, at time.Time, window time.Duration) error {
	if _, err := q.db.Exec(ctx, tripwirePruneCreationsQuery, scope, at.Add(-window).UnixMilli()); err != nil {
		return err
	}
	_, err := q.db.Exec(ctx, tripwireInsertCreationQuery, scope, at.UnixMilli())
	return err
}

// History returns the latest trips of one of scope's tripwires, oldest first.
func (q *TripwireQuery) History(ctx context.Context, scope, id string, limit int) ([]tripwire.TripEvent, error) {
	rows, err := q.db.Query(ctx, tripHistoryQuery, scope, id, limit)
	return dbutil.NewRowIterWithError(rows, scanTripEvent, err).AsList()
}

// JournalAfter returns journal entries after seq, oldest first.
func (q *TripwireQuery) JournalAfter(ctx context.Context, scope string, seq int64, limit int) ([]tripwire.JournalEntry, error) {
	rows, err := q.db.Query(ctx, tripJournalAfterQuery, scope, seq, limit)
	return dbutil.NewRowIterWithError(rows, scanTripJournalEntry, err).AsList()
}

// LatestJournal returns the latest journal entries, oldest first.
func (q *TripwireQuery) LatestJournal(ctx context.Context, scope string, limit int) ([]tripwire.JournalEntry, error) {
	rows, err := q.db.Query(ctx, tripLatestJournalQuery, scope, limit)
	return dbutil.NewRowIterWithError(rows, scanTripJournalEntry, err).AsList()
}

// CountJournalAfter counts the journal entries after seq.
func (q *TripwireQuery) CountJournalAfter(ctx context.Context, scope string, seq int64) (int, error) {
	var n int
	err := q.db.QueryRow(ctx, tripCountJournalAfterQuery, scope, seq).Scan(&n)
	return n, err
}

// JournalCursor returns how far scope has read its journal.
func (q *TripwireQuery) JournalCursor(ctx context.Context, scope string) (int64, error) {
	var seq int64
	err := q.db.QueryRow(ctx, tripGetJournalCursorQuery, scope).Scan(&seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return seq, err
}

// SetJournalCursor moves scope's read cursor.
func (q *TripwireQuery) SetJournalCursor(ctx context.Context, scope string, seq int64) error {
	_, err := q.db.Exec(ctx, tripSetJournalCursorQuery, scope, seq)
	return err
}

// TakePush removes and returns scope's push queue, oldest first.
func (q *TripwireQuery) TakePush(ctx context.Context, scope string) ([]tripwire.TripEvent, error) {
	var events []tripwire.TripEvent
	err := q.st.tx(ctx, func(ctx context.Context) error {
		rows, err := q.db.Query(ctx, tripPushQueueQuery, scope)
		entries, err := dbutil.NewRowIterWithError(rows, scanTripJournalEntry, err).AsList()
		if err != nil || len(entries) == 0 {
			return err
		}
		for _, e := range entries {
			events = append(events, e.TripEvent)
		}
		_, err = q.db.Exec(ctx, tripDeletePushQuery, scope, entries[len(entries)-1].Seq)
		return err
	})
	return events, err
}

// ChangedTripwires returns the evaluator's view of the tripwires written
// after revision rev, and the latest revision. From revision 0 it returns
// every tripwire not deleted.
func (q *TripwireQuery) ChangedTripwires(ctx context.Context, rev int64) ([]tripwire.State, int64, error) {
	query, args := tripwireChangedQuery, []any{rev}
	latest := rev
	if rev == 0 {
		// The first load reads every row, so it scans rather than walk the
		// revision index. The counter read first bounds what it saw; a row
		// written meanwhile only raises the latest revision.
		query, args = tripwireAllStatesQuery, nil
		if err := q.db.QueryRow(ctx, tripwireRevQuery).Scan(&latest); err != nil {
			return nil, 0, err
		}
	}
	rows, err := q.db.Query(ctx, query, args...)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	var states []tripwire.State
	for rows.Next() {
		var st tripwire.State
		var status string
		// Integers scan into int64: database/sql converts into int through a
		// string, which costs at this volume.
		var rowRev, cooldown, lastTripped, streak int64
		if err := rows.Scan(&st.ID, &rowRev, &status, &cooldown, &lastTripped, &st.LastObserved, &streak); err != nil {
			return nil, 0, err
		}
		st.Status = tripwire.Status(status)
		st.CooldownSeconds, st.ErrorStreak = int(cooldown), int(streak)
		st.LastTrippedAt = timeOf(lastTripped)
		latest = max(latest, rowRev)
		states = append(states, st)
	}
	return states, latest, rows.Err()
}

// TripwireSpecs loads the source and condition of the given tripwires.
func (q *TripwireQuery) TripwireSpecs(ctx context.Context, ids []string) ([]tripwire.Spec, error) {
	var specs []tripwire.Spec
	err := bulkChunks(ids, 1, func(chunk []string) error {
		rows, err := q.db.Query(ctx, fmt.Sprintf(tripwireSpecsQuery, bulkIn(1, len(chunk))), bulkArgs(chunk)...)
		got, err := dbutil.NewRowIterWithError(rows, func(row dbutil.Scannable) (spec tripwire.Spec, err error) {
			var cond string
			if err = row.Scan(&spec.ID, &spec.Scope, &spec.Source.Kind, &spec.Source.Param, &cond); err != nil {
				return spec, err
			}
			return spec, json.Unmarshal([]byte(cond), &spec.Condition)
		}, err).AsList()
		specs = append(specs, got...)
		return err
	})
	return specs, err
}

// TripwireRecords loads the given tripwires whole.
func (q *TripwireQuery) TripwireRecords(ctx context.Context, ids []string) ([]tripwire.Record, error) {
	var recs []tripwire.Record
	err := bulkChunks(ids, 1, func(chunk []string) error {
		rows, err := q.db.Query(ctx, fmt.Sprintf(tripwireRecordsQuery, bulkIn(1, len(chunk))), bulkArgs(chunk)...)
		got, err := dbutil.NewRowIterWithError(rows, scanTripwire, err).AsList()
		recs = append(recs, got...)
		return err
	})
	return recs, err
}

// RecentTrips returns the times of the given tripwires' trips since a time.
func (q *TripwireQuery) RecentTrips(ctx context.Context, ids []string, since time.Time) (map[string][]time.Time, error) {
	out := map[string][]time.Time{}
	err := bulkChunks(ids, 1, func(chunk []string) error {
		args := append([]any{since.UnixMilli()}, bulkArgs(chunk)...)
		rows, err := q.db.Query(ctx, fmt.Sprintf(tripRecentQuery, bulkIn(2, len(chunk))), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var at int64
			if err := rows.Scan(&id, &at); err != nil {
				return err
			}
			out[id] = append(out[id], time.UnixMilli(at).UTC())
		}
		return rows.Err()
	})
	return out, err
}

// ApplyTick writes an evaluator pass's outcome under one new revision and
// trims history, journal and push queue to their caps.
func (q *TripwireQuery) ApplyTick(ctx context.Context, w tripwire.TickWrites) error {
	if len(w.Observed) == 0 && len(w.Records) == 0 && len(w.Trips) == 0 && len(w.Readings) == 0 && len(w.Skips) == 0 {
		return nil
	}
	return q.st.tx(ctx, func(ctx context.Context) error {
		var rev int64
		if len(w.Observed) > 0 || len(w.Records) > 0 {
			var err error
			if rev, err = q.nextRev(ctx); err != nil {
				return err
			}
		}
		// The observations first: a tripwire whose state changed too is in
		// both, and its state is the later word.
		const observedPerRow, statePerRow = 4, 11
		err := bulkChunks(lastByID(w.Observed, func(u tripwire.ObservedUpdate) string { return u.ID }), observedPerRow,
			func(chunk []tripwire.ObservedUpdate) error {
				args := []any{rev}
				for _, u := range chunk {
					args = append(args, u.ID, u.LastObserved, u.ErrorStreak, u.LastError)
				}
				query := fmt.Sprintf(tripwireObservedQuery, bulkRows(tripwireObservedRow, len(chunk), observedPerRow, 1),
					bulkFirsts(len(chunk), observedPerRow, 1))
				_, err := q.db.Exec(ctx, query, args...)
				return err
			})
		if err != nil {
			return fmt.Errorf("write %d observations: %w", len(w.Observed), err)
		}
		err = bulkChunks(lastByID(w.Records, func(r tripwire.Record) string { return r.ID }), statePerRow,
			func(chunk []tripwire.Record) error {
				args := []any{rev}
				for _, r := range chunk {
					args = append(args, r.ID, string(r.Status), tripMillisPtr(r.LastTrippedAt), tripMillisPtr(r.LastResetAt),
						r.TripSeq, r.TripPushed, r.LastObserved, r.ErrorStreak, r.LastError, r.QuarantineReason, r.QuarantineCount)
				}
				query := fmt.Sprintf(tripwireTickStateQuery, bulkRows(tripwireTickStateRow, len(chunk), statePerRow, 1),
					bulkFirsts(len(chunk), statePerRow, 1))
				_, err := q.db.Exec(ctx, query, args...)
				return err
			})
		if err != nil {
			return fmt.Errorf("write %d tripwire states: %w", len(w.Records), err)
		}
		if err := q.writeTrips(ctx, w.Trips); err != nil {
			return fmt.Errorf("write trips: %w", err)
		}
		if err := writeReadings(ctx, q.db, w.Readings); err != nil {
			return fmt.Errorf("write source history: %w", err)
		}
		return q.writeSkips(ctx, w.Skips, w.TrimSkips, w.KeepSkips)
	})
}

// tripRecord is a trip event ready for the trip tables.
type tripRecord struct {
	tripwire.Trip
	value, context string
}

func (q *TripwireQuery) writeTrips(ctx context.Context, trips []tripwire.Trip) error {
	var all, journal, push []tripRecord
	var tripwires, journalScopes, pushScopes []string
	seen := map[string]bool{}
	for _, t := range trips {
		value, err := json.Marshal(t.Event.ObservedValue)
		if err != nil {
			return fmt.Errorf("trip %s/%d observed value: %w", t.Event.TripwireID, t.Event.Trip, err)
		}
		context, err := json.Marshal(tripContext(t.Event.ObservedContext))
		if err != nil {
			return fmt.Errorf("trip %s/%d observed context: %w", t.Event.TripwireID, t.Event.Trip, err)
		}
		r := tripRecord{Trip: t, value: string(value), context: string(context)}
		all = append(all, r)
		// A tripwire keeps at most as many history rows as it has tripped:
		// only those past the cap need trimming.
		if t.Event.Trip > tripwire.TripHistoryCap {
			tripwires = appendNew(seen, "h:", tripwires, t.Event.TripwireID)
		}
		if t.Journal {
			journal = append(journal, r)
			journalScopes = appendNew(seen, "j:", journalScopes, t.Scope)
		}
		if t.Push {
			push = append(push, r)
			pushScopes = appendNew(seen, "p:", pushScopes, t.Scope)
		}
	}
	for _, table := range []struct {
		name, key string
		trips     []tripRecord
		keys      []string
		keep      int
	}{
		{"tripwire_history", "tripwire_id", all, tripwires, tripwire.TripHistoryCap},
		{"tripwire_journal", "scope", journal, journalScopes, tripwire.TripJournalCap},
		{"tripwire_push", "scope", push, pushScopes, tripwire.PushQueueCap},
	} {
		if err := q.insertTrips(ctx, table.name, table.trips); err != nil {
			return err
		}
		if err := q.trim(ctx, table.name, table.key, table.keys, table.keep); err != nil {
			return fmt.Errorf("trim %s: %w", table.name, err)
		}
	}
	return nil
}

func (q *TripwireQuery) insertTrips(ctx context.Context, table string, trips []tripRecord) error {
	const perRow = 8
	return bulkChunks(trips, perRow, func(chunk []tripRecord) error {
		args := make([]any, 0, len(chunk)*perRow)
		for _, t := range chunk {
			e := t.Event
			args = append(args, e.TripwireID, t.Scope, e.Trip, e.Label, e.Timestamp.UnixMilli(), t.value, t.context, e.Summary)
		}
		_, err := q.db.Exec(ctx, fmt.Sprintf(insertTripsQuery, table, bulkRows(tripRow, len(chunk), perRow, 0)), args...)
		return err
	})
}

// trim keeps the newest keep rows of table for each of keys.
func (q *TripwireQuery) trim(ctx context.Context, table, key string, keys []string, keep int) error {
	return bulkChunks(keys, 1, func(chunk []string) error {
		args := append([]any{keep}, bulkArgs(chunk)...)
		_, err := q.db.Exec(ctx, fmt.Sprintf(tripTrimQuery, table, key, bulkRows("($%d)", len(chunk), 1, 1)), args...)
		return err
	})
}

func scanTripwire(row dbutil.Scannable) (tripwire.Record, error) {
	var r tripwire.Record
	var status, cond, trust string
	var created, updated, cooldown, tripped, reset, streak, flapSince, quarantines, snoozed int64
	err := row.Scan(&r.ID, &r.Scope, &r.Label, &r.Rationale, &r.Source.Kind, &r.Source.Param, &cond, &r.Action.Journal,
		&r.Action.Push, &created, &updated, &status, &cooldown, &tripped, &reset, &r.TripSeq, &r.TripPushed,
		&r.LastObserved, &streak, &r.LastError, &flapSince, &r.QuarantineReason, &quarantines, &trust, &r.Action.Urgent, &snoozed)
	if err != nil {
		return r, err
	}
	r.CooldownSeconds, r.ErrorStreak, r.QuarantineCount = int(cooldown), int(streak), int(quarantines)
	if err := json.Unmarshal([]byte(cond), &r.Condition); err != nil {
		return r, fmt.Errorf("tripwire %q condition: %w", r.ID, err)
	}
	r.Status = tripwire.Status(status)
	r.SourceTrust = core.Trust(trust)
	r.CreatedAt, r.UpdatedAt = timeOf(created), timeOf(updated)
	r.LastTrippedAt, r.LastResetAt = tripTimePtr(tripped), tripTimePtr(reset)
	r.FlapSince = timeOf(flapSince)
	r.SnoozedUntil = timeOf(snoozed)
	return r, nil
}

func scanTripEvent(row dbutil.Scannable) (tripwire.TripEvent, error) {
	var e tripwire.TripEvent
	var at int64
	var value, context string
	if err := row.Scan(&e.TripwireID, &e.Trip, &e.Label, &at, &value, &context, &e.Summary); err != nil {
		return e, err
	}
	return e, decodeTrip(&e, at, value, context)
}

func scanTripJournalEntry(row dbutil.Scannable) (tripwire.JournalEntry, error) {
	var e tripwire.JournalEntry
	var at int64
	var value, context string
	if err := row.Scan(&e.Seq, &e.TripwireID, &e.Trip, &e.Label, &at, &value, &context, &e.Summary); err != nil {
		return e, err
	}
	return e, decodeTrip(&e.TripEvent, at, value, context)
}

func decodeTrip(e *tripwire.TripEvent, at int64, value, context string) error {
	e.Timestamp = timeOf(at)
	if err := json.Unmarshal([]byte(value), &e.ObservedValue); err != nil {
		return fmt.Errorf("trip %s/%d observed value: %w", e.TripwireID, e.Trip, err)
	}
	if err := json.Unmarshal([]byte(context), &e.ObservedContext); err != nil {
		return fmt.Errorf("trip %s/%d observed context: %w", e.TripwireID, e.Trip, err)
	}
	return nil
}

// bulkChunks calls fn on consecutive chunks of items small enough that a
// statement with perRow parameters per item stays within bulkParams.
func bulkChunks[T any](items []T, perRow int, fn func([]T) error) error {
	size := bulkParams / perRow
	for start := 0; start < len(items); start += size {
		if err := fn(items[start:min(start+size, len(items))]); err != nil {
			return err
		}
	}
	return nil
}

// bulkRows repeats a row template such as "($%d, $%d)" n times, numbering
// the parameters from after+1.
func bulkRows(row string, n, perRow, after int) string {
	var b strings.Builder
	nums := make([]any, perRow)
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		for i := range nums {
			nums[i] = after + r*perRow + i + 1
		}
		fmt.Fprintf(&b, row, nums...)
	}
	return b.String()
}

// bulkFirsts names the first parameter of each of the n rows bulkRows
// numbered: "$2, $6, …" for rows of 4 after $1.
func bulkFirsts(n, perRow, after int) string {
	var b strings.Builder
	for r := range n {
		if r > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "$%d", after+r*perRow+1)
	}
	return b.String()
}

// bulkIn returns "$from, $from+1, …" for n parameters.
func bulkIn(from, n int) string {
	return bulkRows("$%d", n, 1, from-1)
}

func bulkArgs(s []string) []any {
	args := make([]any, len(s))
	for i, v := range s {
		args[i] = v
	}
	return args
}

// lastByID keeps the last of items with each id, in their order: one
// statement may update a row only once.
func lastByID[T any](items []T, id func(T) string) []T {
	last := make(map[string]int, len(items))
	for i, item := range items {
		last[id(item)] = i
	}
	if len(last) == len(items) {
		return items
	}
	out := make([]T, 0, len(last))
	for i, item := range items {
		if last[id(item)] == i {
			out = append(out, item)
		}
	}
	return out
}

func appendNew(seen map[string]bool, ns string, list []string, v string) []string {
	if seen[ns+v] {
		return list
	}
	seen[ns+v] = true
	return append(list, v)
}

func tripContext(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}

// tripMillisPtr is millis of *t, 0 for nil.
func tripMillisPtr(t *time.Time) int64 {
	if t == nil {
		return 0
	}
	return millis(*t)
}

// tripTimePtr is timeOf as a pointer, nil for 0.
func tripTimePtr(ms int64) *time.Time {
	if ms == 0 {
		return nil
	}
	t := timeOf(ms)
	return &t
}
