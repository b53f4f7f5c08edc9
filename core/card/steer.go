package card

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Cancel is a person's NO-GO: it cancels a card, or, given a set's id,
// every card of the set that is not yet done or cancelled, in one
// transaction. Authority is as for ratification: who must be the card's
// ratifier or an admin, writing from Matrix or from a linked account. A
// card waiting on a question has the question withdrawn; the ratifier,
// when someone else cancels it, gets its mission report. The worker sees
// the card cancelled, with who cancelled it and why as its note, on its
// next read. A card already final is ErrIllegalTransition, and so is a set
// with none left to cancel.
func (c *Service) Cancel(ctx context.Context, id, who string, trust core.Trust, reason string) ([]Card, error) {
	if strings.TrimSpace(who) == "" {
		return nil, core.Invalid("who", "is required")
	}
	reason = strings.TrimSpace(reason)
	note := "cancelled by " + who
	if reason != "" {
		note += ": " + reason
	}
	if len(note) > MaxStateNote {
		return nil, core.Invalid("reason", "too long: a card's note holds %d bytes", MaxStateNote)
	}
	if !trust.AtLeast(core.TrustLinked) {
		return nil, fmt.Errorf("cancel %q: %w", id,
			core.Refuse(core.ErrForbidden, "a card is cancelled from a Matrix account or one linked to it, not from %s trust", trust))
	}
	var out []Card
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		cards, set, err := c.cardOrSet(ctx, id)
		if err != nil {
			return err
		}
		for _, card := range cards {
			if set && card.State.Final() {
				continue
			}
			if err := CheckTransition(card.State, Cancelled, ByWorker); err != nil {
				return err
			}
			if !c.mayDecide(c.askFor(card), who) {
				return core.Refuse(core.ErrForbidden, "%s may not cancel card %s; ask %s", who, card.ID, strings.Join(c.askFor(card), ", "))
			}
			if card.State == NeedsDecision {
				if err := c.withdrawDecision(ctx, card); err != nil {
					return err
				}
			}
			moved, err := c.move(ctx, card, Cancelled, note)
			if err != nil {
				return err
			}
			// The ratifier is told what became of the card, unless they
			// cancelled it themselves.
			if moved.RatifiedBy != who {
				if err := c.report(ctx, moved); err != nil {
					return err
				}
			}
			out = append(out, moved)
		}
		if len(out) == 0 {
			return core.Refuse(core.ErrIllegalTransition, "every card of set %s is already done or cancelled", id)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("cancel %q: %w", id, err)
	}
	c.changed(ctx)
	return out, nil
}

// cardOrSet returns the card id names, or the cards of the set it names
// (set true).
func (c *Service) cardOrSet(ctx context.Context, id string) (cards []Card, set bool, err error) {
	card, err := c.deps.Store.Card(ctx, id)
	if err == nil {
		return []Card{card}, false, nil
	}
	if !errors.Is(err, core.ErrNotFound) {
		return nil, false, err
	}
	if _, err := c.deps.Store.CardSet(ctx, id); err != nil {
		return nil, false, err
	}
	cards, err = c.deps.Store.CardsOfSet(ctx, id)
	return cards, true, err
}

// AmendAs is a person's amendment from chat: authority is as for
// ratification (the card's ratifier or an admin, from Matrix or a linked
// account), and it is written against the revision they saw, so a change
// made meanwhile refuses it (ErrConflict). An added acceptance criterion
// is a scope change, and the card waits for ratification again.
func (c *Service) AmendAs(ctx context.Context, id, who string, trust core.Trust, in AmendmentInput) (AmendResult, error) {
	if !trust.AtLeast(core.TrustLinked) {
		return AmendResult{}, fmt.Errorf("amend card %q: %w", id,
			core.Refuse(core.ErrForbidden, "a card is amended from a Matrix account or one linked to it, not from %s trust", trust))
	}
	card, err := c.deps.Store.Card(ctx, id)
	if err != nil {
		return AmendResult{}, fmt.Errorf("amend card %q: %w", id, err)
	}
	if !c.mayDecide(c.askFor(card), who) {
		return AmendResult{}, fmt.Errorf("amend card %q: %w", id,
			core.Refuse(core.ErrForbidden, "%s may not amend card %s; ask %s", who, card.ID, strings.Join(c.askFor(card), ", ")))
	}
	in.Author, in.SourceTrust, in.BaseRevision = who, trust, card.Revision
	return c.Amend(ctx, id, in)
}

// Reopen puts a done card back on the backlog (published, with no
// worker), for a person who finds it not done after all: authority as for
// ratification. It is the one move out of done, a person's alone, outside
// the transition table, in which done stays final for workers. A card that
// is not done is ErrIllegalTransition.
func (c *Service) Reopen(ctx context.Context, id, who string, trust core.Trust, reason string) (Card, error) {
	if !trust.AtLeast(core.TrustLinked) {
		return Card{}, fmt.Errorf("reopen card %q: %w", id,
			core.Refuse(core.ErrForbidden, "a card is reopened from a Matrix account or one linked to it, not from %s trust", trust))
	}
	note := "reopened by " + who
	if reason = strings.TrimSpace(reason); reason != "" {
		note += ": " + reason
	}
	if len(note) > MaxStateNote {
		return Card{}, core.Invalid("reason", "too long: a card's note holds %d bytes", MaxStateNote)
	}
	var out Card
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		card, err := c.deps.Store.Card(ctx, id)
		if err != nil {
			return err
		}
		if card.State != Done {
			return core.Refuse(core.ErrIllegalTransition, "card %s is %s; only a done card is reopened", card.ID, card.State)
		}
		if !c.mayDecide(c.askFor(card), who) {
			return core.Refuse(core.ErrForbidden, "%s may not reopen card %s; ask %s", who, card.ID, strings.Join(c.askFor(card), ", "))
		}
		out, err = c.move(ctx, card, Published, note)
		return err
	})
	if err != nil {
		return Card{}, fmt.Errorf("reopen card %q: %w", id, err)
	}
	c.changed(ctx)
	return out, nil
}

// SetPublishedBy returns the set a person published by confirming the
// notice with the given key (its publish question), or ErrNotFound.
func (c *Service) SetPublishedBy(ctx context.Context, notice string) (Set, error) {
	return c.deps.Store.CardSetByNotice(ctx, notice)
}

// MaxWorkShown is how many of its cards a worker's heartbeat answer lists.
const MaxWorkShown = 20

// Work is a card as its worker's heartbeat answer shows it.
type Work struct {
	Worker   string
	ID       string
	State    State
	Revision int
}

// WorkOf returns the cards each named agent works, by agent, most
// recently changed first, at most MaxWorkShown each: the open ones, and
// those done or cancelled since since. A worker reads in its heartbeat
// answer that a person stopped or amended its card.
func (c *Service) WorkOf(ctx context.Context, agents []string, since time.Time) (map[string][]Work, error) {
	work, err := c.deps.Store.CardsOfWorkers(ctx, agents, since)
	if err != nil {
		return nil, err
	}
	out := map[string][]Work{}
	for _, w := range work {
		if len(out[w.Worker]) < MaxWorkShown {
			out[w.Worker] = append(out[w.Worker], w)
		}
	}
	return out, nil
}
