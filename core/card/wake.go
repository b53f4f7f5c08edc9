package card

import (
	"context"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Budget advisories start when a class has used this share of its window.
const budgetAdvisoryShare = 0.8

// ratificationReminder is how often a card waiting for ratification is
// brought up again while nobody ratifies it.
const ratificationReminder = 24 * time.Hour

// WakeConditions are the cards' conditions for the event/wake router:
// blocked cards, cards waiting for a person's ratification, and priority
// classes close to their budget. The relays of needs-decision questions
// are posted by the cards themselves and are not repeated here.
func (c *Service) WakeConditions(ctx context.Context) ([]core.WakeCondition, error) {
	var out []core.WakeCondition
	blocked, err := c.List(ctx, Filter{State: Blocked, Limit: MaxListLimit})
	if err != nil {
		return nil, err
	}
	for _, card := range blocked {
		out = append(out, core.WakeCondition{
			Key: "card-blocked:" + card.ID, Source: "cards", Fingerprint: fmt.Sprintf("r%d:%s", card.Revision, card.StateNote),
			Title:    "a card is blocked",
			Fields:   []core.WakeField{{Name: "card", Value: card.ID}, {Name: "goal", Value: card.Spec.Goal}, {Name: "note", Value: card.StateNote}},
			Mentions: c.peopleFor(card),
			Alert:    true,
		})
	}
	waiting, err := c.List(ctx, Filter{State: AwaitingRatification, Limit: MaxListLimit})
	if err != nil {
		return nil, err
	}
	for _, card := range waiting {
		out = append(out, core.WakeCondition{
			Key: "card-ratify:" + card.ID, Source: "cards", Fingerprint: fmt.Sprintf("r%d", card.Revision),
			Title:    "a card's widened scope waits for ratification (`!card ratify ID`)",
			Fields:   []core.WakeField{{Name: "card", Value: card.ID}, {Name: "goal", Value: card.Spec.Goal}, {Name: "revision", Value: fmt.Sprint(card.Revision)}},
			Backoff:  ratificationReminder,
			Mentions: c.peopleFor(card),
			Alert:    true,
		})
	}
	now := c.deps.Clock.Now()
	for _, p := range Priorities {
		rule, ok := c.budget[p]
		if !ok || rule.Count == 0 {
			continue
		}
		charges, err := c.deps.Store.BudgetCharges(ctx, p, now.Add(-rule.Window))
		if err != nil {
			return nil, err
		}
		if float64(len(charges)) < budgetAdvisoryShare*float64(rule.Count) {
			continue
		}
		out = append(out, core.WakeCondition{
			Key: "budget:" + string(p), Source: "cards", Fingerprint: fmt.Sprint(len(charges)),
			Title:    fmt.Sprintf("the %s budget is nearly used up", p),
			Fields:   []core.WakeField{{Name: "used", Value: fmt.Sprintf("%d of %d", len(charges), rule.Count)}, {Name: "window", Value: rule.Window.String()}},
			Mentions: c.deps.Admins,
			Alert:    true,
		})
	}
	return out, nil
}

// peopleFor is whom a card's condition concerns: its ratifier, or the
// admins when nobody ratified it.
func (c *Service) peopleFor(card Card) []string {
	if card.RatifiedBy != "" {
		return []string{card.RatifiedBy}
	}
	return c.deps.Admins
}
