package away

import (
	"context"
	"fmt"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// Breakers lists the breakers that are not closed.
func Breakers(b *breaker.Service) Source {
	return func(ctx context.Context) ([]Item, error) {
		all, err := b.StatusAll(ctx)
		var out []Item
		for _, st := range all {
			if st.State != breaker.Closed {
				out = append(out, Item{Key: fmt.Sprintf("breaker:%s:%s", st.Agent, st.State),
					Text: fmt.Sprintf("%s's breaker is %s", core.EscapeMarkdown(st.Agent), st.State)})
			}
		}
		return out, err
	}
}

// Cards lists the blocked cards and the cards waiting for an answer to a
// worker's question.
func Cards(c *card.Service) Source {
	return func(ctx context.Context) ([]Item, error) {
		var out []Item
		for _, state := range []card.State{card.Blocked, card.NeedsDecision} {
			cards, err := c.List(ctx, card.Filter{State: state, Limit: card.MaxListLimit})
			if err != nil {
				return nil, err
			}
			what := "is blocked"
			if state == card.NeedsDecision {
				what = "waits for an answer to its question"
			}
			for _, cd := range cards {
				out = append(out, Item{Key: fmt.Sprintf("card:%s:%s", cd.ID, state),
					Text: fmt.Sprintf("card %s %s — %s", cd.ID, what, core.EscapeMarkdown(cd.Spec.Goal))})
			}
		}
		return out, nil
	}
}

// Approvals lists the approval requests waiting for an answer.
func Approvals(a *approval.Service) Source {
	return func(ctx context.Context) ([]Item, error) {
		pending, err := a.Pending(ctx)
		var out []Item
		for _, ap := range pending {
			out = append(out, Item{Key: "approval:" + ap.ID,
				Text: fmt.Sprintf("approval %s waits: %s asks to %s", ap.ID, core.EscapeMarkdown(ap.Agent), core.EscapeMarkdown(ap.Action))})
		}
		return out, err
	}
}

// Agents lists the agents that are offline (or never reported).
func Agents(f *fleet.Service) Source {
	return func(ctx context.Context) ([]Item, error) {
		rows, err := f.FleetStatus(ctx)
		var out []Item
		for _, r := range rows {
			if r.Presence == fleet.PresenceOffline {
				out = append(out, Item{Key: "agent-offline:" + r.Agent,
					Text: fmt.Sprintf("%s is offline (%s)", core.EscapeMarkdown(r.Agent), r.NeedsAttention())})
			}
		}
		return out, err
	}
}
