package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

const (
	addSpendQuery = `
		INSERT INTO agent_spend (agent, day, tokens_in, tokens_out, cost, currency) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (agent, day) DO UPDATE SET tokens_in = agent_spend.tokens_in + excluded.tokens_in,
			tokens_out = agent_spend.tokens_out + excluded.tokens_out, cost = agent_spend.cost + excluded.cost,
			currency = CASE WHEN excluded.currency = '' THEN agent_spend.currency ELSE excluded.currency END
		RETURNING tokens_in, tokens_out, cost, currency, warned, alerted`
	spendOnQuery    = `SELECT tokens_in, tokens_out, cost, currency, warned, alerted FROM agent_spend WHERE agent = $1 AND day = $2`
	markSpendQuery  = `UPDATE agent_spend SET warned = $3, alerted = $4 WHERE agent = $1 AND day = $2`
	bootColumns     = `boot_id, seen_at, restart, alerted`
	latestBootQuery = `SELECT ` + bootColumns + ` FROM agent_boot WHERE agent = $1 ORDER BY seen_at DESC, boot_id DESC LIMIT 1`
	addBootQuery    = `
		INSERT INTO agent_boot (agent, ` + bootColumns + `) VALUES ($1, $2, $3, $4, $5) ON CONFLICT (agent, boot_id) DO NOTHING`
	bootsSinceQuery = `SELECT ` + bootColumns + ` FROM agent_boot WHERE agent = $1 AND seen_at >= $2 ORDER BY seen_at`
	// spendsOnQuery and restartsSinceQuery take the agents, from $2, in
	// place of %s.
	spendsOnQuery = `
		SELECT agent, tokens_in, tokens_out, cost, currency, warned, alerted FROM agent_spend WHERE day = $1 AND agent IN (%s)`
	restartsSinceQuery = `
		SELECT agent, COUNT(*) FROM agent_boot WHERE seen_at >= $1 AND restart AND agent IN (%s) GROUP BY agent`
)

// MeterQuery keeps agents' spend per day and their boots.
type MeterQuery struct {
	db *dbutil.Database
}

var _ fleet.MeterStore = (*MeterQuery)(nil)

// Meter returns the spend and boot queries.
func (s *Store) Meter() *MeterQuery { return &MeterQuery{db: s.DB} }

// AddSpend adds s to the agent's spend on day and returns the day's total.
func (q *MeterQuery) AddSpend(ctx context.Context, agent, day string, s fleet.Spend) (fleet.DaySpend, error) {
	d, err := scanDaySpend(q.db.QueryRow(ctx, addSpendQuery, agent, day, s.TokensIn, s.TokensOut, s.Cost, s.Currency))
	if err != nil {
		return d, fmt.Errorf("add the spend of %s on %s: %w", agent, day, err)
	}
	return d, nil
}

// SpendOn returns the agent's spend on day, zero when it spent nothing.
func (q *MeterQuery) SpendOn(ctx context.Context, agent, day string) (fleet.DaySpend, error) {
	d, err := scanDaySpend(q.db.QueryRow(ctx, spendOnQuery, agent, day))
	if errors.Is(err, sql.ErrNoRows) {
		return fleet.DaySpend{}, nil
	}
	return d, err
}

// MarkSpend records which of the day's budget notices were posted.
func (q *MeterQuery) MarkSpend(ctx context.Context, agent, day string, warned, alerted bool) error {
	_, err := q.db.Exec(ctx, markSpendQuery, agent, day, warned, alerted)
	return err
}

// LatestBoot returns the agent's most recent boot.
func (q *MeterQuery) LatestBoot(ctx context.Context, agent string) (fleet.Boot, error) {
	b, err := scanBoot(q.db.QueryRow(ctx, latestBootQuery, agent))
	return b, notFound(err, "boot of "+agent)
}

// AddBoot records a boot, once per boot id.
func (q *MeterQuery) AddBoot(ctx context.Context, agent string, b fleet.Boot) error {
	_, err := q.db.Exec(ctx, addBootQuery, agent, b.ID, b.SeenAt.UnixMilli(), b.Restart, b.Alerted)
	return err
}

// BootsSince returns the agent's boots first seen at or after since.
func (q *MeterQuery) BootsSince(ctx context.Context, agent string, since time.Time) ([]fleet.Boot, error) {
	rows, err := q.db.Query(ctx, bootsSinceQuery, agent, since.UnixMilli())
	return dbutil.NewRowIterWithError(rows, scanBoot, err).AsList()
}

// SpendsOn returns the spend on day of each of the agents that spent
// something, in one statement per few thousand agents.
func (q *MeterQuery) SpendsOn(ctx context.Context, day string, agents []string) (map[string]fleet.DaySpend, error) {
	out := make(map[string]fleet.DaySpend, len(agents))
	err := bulkChunks(agents, 1, func(chunk []string) error {
		args := append([]any{day}, bulkArgs(chunk)...)
		rows, err := q.db.Query(ctx, fmt.Sprintf(spendsOnQuery, bulkIn(2, len(chunk))), args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var agent string
			var d fleet.DaySpend
			if err := rows.Scan(&agent, &d.TokensIn, &d.TokensOut, &d.Cost, &d.Currency, &d.Warned, &d.Alerted); err != nil {
				return err
			}
			out[agent] = d
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("the spend of %d agents on %s: %w", len(agents), day, err)
	}
	return out, nil
}

// RestartsSince counts, for each of the agents, its restarts first seen at
// or after since, in one statement per few thousand agents; an agent with
// none is left out.
func (q *MeterQuery) RestartsSince(ctx context.Context, since time.Time, agents []string) (map[string]int, error) {
	out, err := countEach(ctx, q.db, restartsSinceQuery, since.UnixMilli(), agents)
	if err != nil {
		return nil, fmt.Errorf("restarts of %d agents: %w", len(agents), err)
	}
	return out, nil
}

func scanDaySpend(row dbutil.Scannable) (fleet.DaySpend, error) {
	var d fleet.DaySpend
	err := row.Scan(&d.TokensIn, &d.TokensOut, &d.Cost, &d.Currency, &d.Warned, &d.Alerted)
	return d, err
}

func scanBoot(row dbutil.Scannable) (fleet.Boot, error) {
	var b fleet.Boot
	var seenAt int64
	err := row.Scan(&b.ID, &seenAt, &b.Restart, &b.Alerted)
	b.SeenAt = time.UnixMilli(seenAt)
	return b, err
}
