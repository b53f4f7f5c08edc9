package card

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// BudgetRule caps how many cards of one priority class may be published
// (or raised to it) in any trailing window.
type BudgetRule struct {
	// Count is how many cards the window holds; 0 refuses every card.
	Count int
	// Window is the length of the trailing window, e.g. 24h.
	Window time.Duration
}

// Config is the cards section of the configuration.
type Config struct {
	// Budget is the priority budget, keyed by class ("P0" … "P3", any
	// case): how many cards each class may take within a window, so that
	// no card author can inflate priorities. A class not listed is
	// unlimited.
	Budget map[string]BudgetRule
}

// Validate checks the config.
func (c Config) Validate() error {
	seen := map[Priority]string{}
	for key, rule := range c.Budget {
		p := Priority(strings.ToUpper(key))
		field := "cards.budget." + key
		switch {
		case !p.Valid():
			return core.Invalid(field, "unknown priority class; one of P0, P1, P2, P3")
		case seen[p] != "":
			return core.Invalid(field, "class %s is also given as %q", p, seen[p])
		case rule.Count < 0:
			return core.Invalid(field+".count", "must not be negative")
		case rule.Window <= 0:
			return core.Invalid(field+".window", "must be positive, e.g. 24h")
		}
		seen[p] = key
	}
	return nil
}

// rules returns the budget keyed by class.
func (c Config) rules() map[Priority]BudgetRule {
	out := make(map[Priority]BudgetRule, len(c.Budget))
	for key, rule := range c.Budget {
		out[Priority(strings.ToUpper(key))] = rule
	}
	return out
}

// BudgetStore keeps the ledger of budget charges: one per card published
// in, or raised to, a class that has a budget.
type BudgetStore interface {
	// ChargeBudget records that a card drew from its class's budget at at.
	ChargeBudget(ctx context.Context, p Priority, cardID string, at time.Time) error
	// BudgetCharges returns the times of the charges to a class after
	// since, oldest first.
	BudgetCharges(ctx context.Context, p Priority, since time.Time) ([]time.Time, error)
}

// BudgetError says which priority class has no room left, and when room
// for the request returns. It is an ErrBudgetExceeded.
type BudgetError struct {
	Priority  Priority
	Rule      BudgetRule
	Used      int
	Requested int
	// At is when the budget was checked.
	At time.Time
	// RetryAt is when enough earlier charges leave the window for the
	// request to fit; zero when the request is larger than the whole
	// budget and never fits.
	RetryAt time.Time
}

func (e *BudgetError) Error() string { return e.refusal().Error() }

// Unwrap makes every BudgetError an ErrBudgetExceeded refusal.
func (e *BudgetError) Unwrap() error { return e.refusal() }

func (e *BudgetError) refusal() *core.Refusal {
	head := fmt.Sprintf("%s allows %d cards per %s, %d used, %d requested",
		e.Priority, e.Rule.Count, windowText(e.Rule.Window), e.Used, e.Requested)
	if e.RetryAt.IsZero() {
		return &core.Refusal{Err: core.ErrBudgetExceeded, Reason: head + "; the request is larger than the whole budget"}
	}
	return &core.Refusal{Err: core.ErrBudgetExceeded, Reason: head + "; room returns at " + e.RetryAt.UTC().Format(time.RFC3339)}
}

// windowText names a window the way people say it.
func windowText(d time.Duration) string {
	switch d {
	case time.Hour:
		return "hour"
	case 24 * time.Hour:
		return "day"
	case 7 * 24 * time.Hour:
		return "week"
	}
	return d.String()
}

// fit checks whether n more charges fit in the rule's window at now, given
// the charges already in it (oldest first). When they do not, it returns
// the BudgetError saying when they will.
func (r BudgetRule) fit(p Priority, charges []time.Time, n int, now time.Time) error {
	if len(charges)+n <= r.Count {
		return nil
	}
	e := &BudgetError{Priority: p, Rule: r, Used: len(charges), Requested: n, At: now}
	if n <= r.Count {
		// The request fits once the oldest len+n-Count charges have left.
		e.RetryAt = charges[len(charges)+n-r.Count-1].Add(r.Window)
	}
	return e
}

// chargeBudget records the charges of cards that checkBudget let through.
// Classes without a budget keep no ledger.
func (c *Service) chargeBudget(ctx context.Context, cards []Card, now time.Time) error {
	for _, card := range cards {
		if _, ok := c.budget[card.Priority]; !ok {
			continue
		}
		if err := c.deps.Store.ChargeBudget(ctx, card.Priority, card.ID, now); err != nil {
			return fmt.Errorf("charge %s budget: %w", card.Priority, err)
		}
	}
	return nil
}

// checkBudget refuses cards that do not fit their classes' budgets; it
// only reads.
func (c *Service) checkBudget(ctx context.Context, cards []Card, now time.Time) error {
	count := map[Priority]int{}
	for _, card := range cards {
		count[card.Priority]++
	}
	for _, p := range Priorities {
		rule, ok := c.budget[p]
		if !ok || count[p] == 0 {
			continue
		}
		charges, err := c.deps.Store.BudgetCharges(ctx, p, now.Add(-rule.Window))
		if err != nil {
			return fmt.Errorf("read %s budget: %w", p, err)
		}
		if err := rule.fit(p, charges, count[p], now); err != nil {
			return err
		}
	}
	return nil
}
