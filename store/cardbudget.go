package store

import (
	"context"
	"fmt"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core/card"
)

const (
	chargeBudgetQuery  = `INSERT INTO card_budget_charge (priority, card_id, charged_at) VALUES ($1, $2, $3)`
	budgetChargesQuery = `
		SELECT charged_at FROM card_budget_charge WHERE priority = $1 AND charged_at > $2 ORDER BY charged_at`
)

// CardBudgetQuery keeps the priority budget ledger.
type CardBudgetQuery struct {
	db *dbutil.Database
}

var _ card.BudgetStore = (*CardBudgetQuery)(nil)

// ChargeBudget records that a card drew from its class's budget at at.
func (q *CardBudgetQuery) ChargeBudget(ctx context.Context, p card.Priority, cardID string, at time.Time) error {
	if _, err := q.db.Exec(ctx, chargeBudgetQuery, string(p), cardID, at.UnixMilli()); err != nil {
		return fmt.Errorf("charge %s budget for card %s: %w", p, cardID, err)
	}
	return nil
}

// BudgetCharges returns the times of the charges to a class after since,
// oldest first.
func (q *CardBudgetQuery) BudgetCharges(ctx context.Context, p card.Priority, since time.Time) ([]time.Time, error) {
	rows, err := q.db.Query(ctx, budgetChargesQuery, string(p), since.UnixMilli())
	ms, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[int64], err).AsList()
	if err != nil {
		return nil, err
	}
	out := make([]time.Time, len(ms))
	for i, m := range ms {
		out[i] = time.UnixMilli(m)
	}
	return out, nil
}
