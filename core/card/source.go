package card

import (
	"context"
	"fmt"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
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

// SourceKinds lists the source kinds RegisterSources adds, for
// tripwire.Service.Reevaluate after a card changes.
var SourceKinds = []string{SourceCardsNeedsDecision, SourceCardsBlocked, SourceCardState}

// RegisterSources adds the backlog's tripwire source kinds to r:
// cards.needs_decision (a count, optionally of the questions put to one
// person), cards.blocked (a count) and card.state (a card's state, e.g.
// "needs_decision"; an unknown card is a source error, ErrNotFound).
func (c *Service) RegisterSources(r *core.SourceRegistry) {
	r.Register(core.SourceKind{
		Kind: SourceCardsNeedsDecision,
		Aliases: []string{"cards needing a decision", "decisions waiting", "needs my decision", "needs a decision",
			"waiting for my decision", "waiting for a decision"},
		Description:   "how many cards wait for a decision (only those asking the person given, if any)",
		Value:         core.ValueCount,
		Param:         "whose decision (a Matrix user ID)",
		ParamType:     core.ParamUser,
		ParamOptional: true,
		Resolve: func(ctx context.Context, person string) (core.Observation, error) {
			n, err := c.waitingOn(ctx, strings.TrimSpace(person))
			return core.Observation{Value: float64(n), Display: core.Plural(n, "card waits", "cards wait") + " for a decision"}, err
		},
	})
	r.Register(core.SourceKind{
		Kind:        SourceCardsBlocked,
		Aliases:     []string{"blocked cards"},
		Description: "how many cards are blocked",
		Value:       core.ValueCount,
		Resolve: func(ctx context.Context, _ string) (core.Observation, error) {
			n, err := c.Count(ctx, Blocked)
			return core.Observation{Value: float64(n), Display: core.Plural(n, "card is", "cards are") + " blocked"}, err
		},
	})
	r.Register(core.SourceKind{
		Kind:        SourceCardState,
		Aliases:     []string{"card state"},
		Description: "the state of one card: published, claimed, in_progress, needs_decision, blocked, done, …",
		Value:       core.ValueCategory,
		Categories:  stateNames(),
		Param:       "card id",
		ParamType:   core.ParamCard,
		CheckParam: func(id string) error {
			if !strings.HasPrefix(id, IDPrefix) {
				return fmt.Errorf("%q is not a card id (card_…)", id)
			}
			return nil
		},
		Resolve: func(ctx context.Context, id string) (core.Observation, error) {
			card, err := c.deps.Store.Card(ctx, id)
			if err != nil {
				return core.Observation{}, fmt.Errorf("%s[%s]: %w", SourceCardState, id, err)
			}
			return cardState(card), nil
		},
		ResolveMany: func(ctx context.Context, ids []string) ([]core.Observation, []error) {
			obs, errs := make([]core.Observation, len(ids)), make([]error, len(ids))
			cards, err := c.deps.Store.CardsByID(ctx, ids)
			for i, id := range ids {
				card, ok := cards[id]
				switch {
				case err != nil:
					errs[i] = fmt.Errorf("%s[%s]: %w", SourceCardState, id, err)
				case !ok:
					errs[i] = fmt.Errorf("%s[%s]: card %s: %w", SourceCardState, id, id, core.ErrNotFound)
				default:
					obs[i] = cardState(card)
				}
			}
			return obs, errs
		},
	})
}

// cardState is what card.state observes of a card.
func cardState(card Card) core.Observation {
	return core.Observation{Value: string(card.State), Context: map[string]any{"card": card.ID, "goal": card.Spec.Goal}}
}

// waitingOn counts the cards waiting for a decision, or only those whose
// open question was put to person.
func (c *Service) waitingOn(ctx context.Context, person string) (int, error) {
	if person == "" {
		return c.Count(ctx, NeedsDecision)
	}
	waiting, err := c.WaitingOn(ctx, person)
	return len(waiting), err
}

// stateNames are the card states, as card.state gives them.
func stateNames() []string {
	names := make([]string, len(States))
	for i, s := range States {
		names[i] = string(s)
	}
	return names
}
