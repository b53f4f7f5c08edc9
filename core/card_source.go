package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Tripwire source kinds the backlog provides.
const (
	// SourceCardsNeedsDecision counts the cards waiting for a decision;
	// its optional param, a Matrix user ID, counts only the questions put
	// to that person.
	SourceCardsNeedsDecision = "cards.needs_decision"
	// SourceCardsBlocked counts the blocked cards.
	SourceCardsBlocked = "cards.blocked"
	// SourceCardState is the state of the card named by the param.
	SourceCardState = "card.state"
)

// CardSourceKinds lists the source kinds RegisterSources adds, for
// TripwireService.Reevaluate after a card changes.
var CardSourceKinds = []string{SourceCardsNeedsDecision, SourceCardsBlocked, SourceCardState}

// RegisterSources adds the backlog's tripwire source kinds to r:
// cards.needs_decision (a count, optionally of the questions put to one
// person), cards.blocked (a count) and card.state (a card's state, e.g.
// "needs_decision"; an unknown card is a source error, ErrNotFound).
func (c *Cards) RegisterSources(r *SourceRegistry) {
	r.Register(SourceKind{
		Kind: SourceCardsNeedsDecision,
		Aliases: []string{"cards needing a decision", "decisions waiting", "needs my decision", "needs a decision",
			"waiting for my decision", "waiting for a decision"},
		Description:   "how many cards wait for a decision (only those asking the person given, if any)",
		Param:         "whose decision (a Matrix user ID)",
		ParamOptional: true,
		Resolve: func(ctx context.Context, person string) (Observation, error) {
			n, err := c.waitingOn(ctx, strings.TrimSpace(person))
			return Observation{Value: float64(n), Display: cardCount(n, "waits", "wait") + " for a decision"}, err
		},
	})
	r.Register(SourceKind{
		Kind:        SourceCardsBlocked,
		Aliases:     []string{"blocked cards"},
		Description: "how many cards are blocked",
		Resolve: func(ctx context.Context, _ string) (Observation, error) {
			n, err := c.Count(ctx, CardBlocked)
			return Observation{Value: float64(n), Display: cardCount(n, "is", "are") + " blocked"}, err
		},
	})
	r.Register(SourceKind{
		Kind:        SourceCardState,
		Aliases:     []string{"card state"},
		Description: "the state of one card: published, claimed, in_progress, needs_decision, blocked, done, …",
		Param:       "card id",
		CheckParam: func(id string) error {
			if !strings.HasPrefix(id, cardIDPrefix) {
				return fmt.Errorf("%q is not a card id (card_…)", id)
			}
			return nil
		},
		Resolve: func(ctx context.Context, id string) (Observation, error) {
			card, err := c.store.Card(ctx, id)
			if err != nil {
				return Observation{}, fmt.Errorf("%s[%s]: %w", SourceCardState, id, err)
			}
			return Observation{Value: string(card.State), Context: map[string]any{"card": card.ID, "goal": card.Spec.Goal}}, nil
		},
	})
}

// waitingOn counts the cards waiting for a decision, or only those whose
// open question was put to person.
func (c *Cards) waitingOn(ctx context.Context, person string) (int, error) {
	if person == "" {
		return c.Count(ctx, CardNeedsDecision)
	}
	open, err := c.store.OpenDecisions(ctx)
	if err != nil {
		return 0, fmt.Errorf("open questions: %w", err)
	}
	n := 0
	for _, d := range open {
		if slices.Contains(d.Asked, person) {
			n++
		}
	}
	return n, nil
}

func cardCount(n int, one, many string) string {
	if n == 1 {
		return "1 card " + one
	}
	return fmt.Sprintf("%d cards %s", n, many)
}
