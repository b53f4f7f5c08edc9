package store

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// LatestVersion is the schema version Open brings a database to.
var LatestVersion = len(upgradeTable)

// InsertTripwires writes many new tripwires under one revision with a few
// multi-row statements, as InsertTripwire writes one: the benchmarks arm
// 100,000 of them, which one at a time takes minutes of round trips on
// PostgreSQL.
func (q *TripwireQuery) InsertTripwires(ctx context.Context, recs []tripwire.Record) error {
	const tripwirePerRow, statePerRow = 13, 14
	return q.st.tx(ctx, func(ctx context.Context) error {
		rev, err := q.nextRev(ctx)
		if err != nil {
			return err
		}
		err = bulkChunks(recs, tripwirePerRow, func(chunk []tripwire.Record) error {
			args := make([]any, 0, len(chunk)*tripwirePerRow)
			for _, r := range chunk {
				cond, err := json.Marshal(r.Condition)
				if err != nil {
					return err
				}
				args = append(args, r.ID, r.Scope, r.Label, r.Rationale, r.Source.Kind, r.Source.Param, string(cond), r.Action.Journal,
					r.Action.Push, r.CreatedAt.UnixMilli(), r.UpdatedAt.UnixMilli(), string(r.SourceTrust), r.Action.Urgent)
			}
			query := strings.Replace(insertTripwireQuery, placeholders(tripwirePerRow), bulkRows(rowTemplate(tripwirePerRow), len(chunk), tripwirePerRow, 0), 1)
			_, err := q.db.Exec(ctx, query, args...)
			return err
		})
		if err != nil {
			return err
		}
		return bulkChunks(recs, statePerRow, func(chunk []tripwire.Record) error {
			args := make([]any, 0, len(chunk)*statePerRow)
			for _, r := range chunk {
				args = append(args, r.ID, rev, string(r.Status), r.CooldownSeconds, tripMillisPtr(r.LastTrippedAt), tripMillisPtr(r.LastResetAt),
					r.TripSeq, r.TripPushed, r.LastObserved, r.ErrorStreak, r.LastError, millis(r.FlapSince), r.QuarantineReason, r.QuarantineCount)
			}
			query := strings.Replace(insertTripwireStateQuery, placeholders(statePerRow), bulkRows(rowTemplate(statePerRow), len(chunk), statePerRow, 0), 1)
			_, err := q.db.Exec(ctx, query, args...)
			return err
		})
	})
}

// placeholders is "($1, $2, …, $n)", as the insert queries spell their
// one row.
func placeholders(n int) string { return "(" + bulkIn(1, n) + ")" }

// rowTemplate is "($%d, …)" with n parameters, for bulkRows.
func rowTemplate(n int) string { return "(" + strings.Repeat("$%d, ", n-1) + "$%d)" }

// OpenThroughNumberedUpgrades opens cfg as Open does, but builds an empty
// database's schema with the numbered upgrade files, from 01 to the last,
// instead of with 00-latest-schema.sql.
func OpenThroughNumberedUpgrades(ctx context.Context, cfg Config, log zerolog.Logger) (*Store, error) {
	return open(ctx, cfg, log, buildUpgradeTable(latestSchema))
}
