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
