package fleet

import (
	"context"
	"fmt"
	"strings"
)

// Holding is what the rest of the workspace knows of an agent, for the
// fleet view that answers "what is the fleet doing": its breaker, the cards
// it holds, the CI failures journaled on them. The fleet reads it; it never
// asks an agent.
type Holding struct {
	// Breaker is the agent's breaker state ("closed", "open",
	// "half-open"), "" when it never had one.
	Breaker string
	Cards   []HeldCard
	// CIFailed are the held cards whose CI the agent journaled as failed
	// in its current cycle.
	CIFailed []string
}

// HeldCard is a card an agent works, and where it stands.
type HeldCard struct {
	ID    string
	State string
}

// Card states the fleet view ranks by (core/card's).
const (
	heldBlocked       = "blocked"
	heldNeedsDecision = "needs_decision"
	breakerOpen       = "open"
)

// Holdings returns the holding of each of the named agents.
type Holdings func(ctx context.Context, agents []string) (map[string]Holding, error)

// SetHoldings wires where the fleet view reads what agents hold. Call it
// at start-up, before the fleet is read.
func (f *Service) SetHoldings(fn Holdings) { f.holdings = fn }

// holdingsOf fills in the rows' holdings.
func (f *Service) holdingsOf(ctx context.Context, rows []AgentReport) error {
	if f.holdings == nil {
		return nil
	}
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = r.Agent
	}
	held, err := f.holdings(ctx, names)
	if err != nil {
		return fmt.Errorf("what the agents hold: %w", err)
	}
	for i := range rows {
		rows[i].Holding = held[rows[i].Agent]
	}
	return nil
}

func (h Holding) count(state string) int {
	n := 0
	for _, c := range h.Cards {
		if c.State == state {
			n++
		}
	}
	return n
}

// holdingText is the row's part about what the agent holds, or "".
func holdingText(h Holding) string {
	var parts []string
	if h.Breaker != "" && h.Breaker != "closed" {
		parts = append(parts, "breaker "+h.Breaker)
	}
	if len(h.Cards) > 0 {
		cards := make([]string, len(h.Cards))
		for i, c := range h.Cards {
			cards[i] = fmt.Sprintf("%s (%s)", c.ID, c.State)
		}
		parts = append(parts, "cards "+strings.Join(cards, ", "))
	}
	if len(h.CIFailed) > 0 {
		// Card ids Jarvis made: the holdings keep only failures on held cards.
		parts = append(parts, "CI failed on "+strings.Join(h.CIFailed, ", "))
	}
	return strings.Join(parts, " · ")
}
