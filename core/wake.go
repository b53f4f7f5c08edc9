package core

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// WakeCondition is one thing worth a person's attention, as its source sees
// it now: a blocked card, an open breaker, a pending approval. Sources
// are level-triggered: they report every condition that holds, each
// time they are asked, and the router decides what is news.
type WakeCondition struct {
	// Key names the condition across reconciles, e.g. "card-blocked:c_1".
	Key string
	// Source says where the data came from ("cards", "heartbeats"); it is
	// shown beside every field.
	Source string
	// EventID, when set, is the source's own event id: the router acts on
	// each one at most once, even across restarts.
	EventID string
	// Fingerprint is the state that matters; a change notifies again.
	Fingerprint string
	// Title is the fixed frame's headline, chosen by the source's code
	// (never taken from workspace data).
	Title string
	// Fields are the workspace data, shown only inside delimited fields.
	Fields []WakeField
	// Backoff, when positive, notifies again after this long even if
	// nothing changed; zero notifies once per change.
	Backoff time.Duration
	// Mentions are the people the notice pings.
	Mentions []string
}

// WakeField is one piece of workspace data in a wake notice.
type WakeField struct {
	Name  string
	Value string
}

// WakeState is what the router remembers of a condition.
type WakeState struct {
	Key         string
	Fingerprint string
	NotifiedAt  time.Time
	Active      bool
	Count       int
}

// WakeStore keeps the router's memory; it survives restarts, so a restart
// does not notify again.
type WakeStore interface {
	WakeStates(ctx context.Context) ([]WakeState, error)
	PutWakeState(ctx context.Context, s WakeState) error
	// ConsumeEvent records a source event id; false means it was consumed
	// before.
	ConsumeEvent(ctx context.Context, source, eventID string, at time.Time) (bool, error)
}

// ConditionSource reports the conditions that hold now.
type ConditionSource struct {
	Name string
	List func(ctx context.Context) ([]WakeCondition, error)
}

// Router is the shared, level-triggered reconciler that decides what to
// surface to people: it wakes on change only, with a back-off per
// condition, and never says the same thing twice.
type Router struct {
	Room    string
	Sources []ConditionSource

	store  WakeStore
	tx     Transactor
	outbox Outbox
	clock  Clock
}

// NewRouter builds the router.
func NewRouter(store WakeStore, tx Transactor, outbox Outbox, clock Clock) *Router {
	return &Router{store: store, tx: tx, outbox: outbox, clock: clock}
}

// ReconcileResult says what one reconcile did.
type ReconcileResult struct {
	Conditions int
	Notified   int
	Cleared    int
}

// Reconcile asks every source for what holds now and notifies what is
// new, changed, or past its back-off, in one transaction.
func (r *Router) Reconcile(ctx context.Context) (ReconcileResult, error) {
	var res ReconcileResult
	var current []WakeCondition
	for _, src := range r.Sources {
		conds, err := src.List(ctx)
		if err != nil {
			return res, fmt.Errorf("wake source %s: %w", src.Name, err)
		}
		current = append(current, conds...)
	}
	res.Conditions = len(current)
	now := r.clock.Now()
	err := r.tx.InTx(ctx, func(ctx context.Context) error {
		states, err := r.store.WakeStates(ctx)
		if err != nil {
			return err
		}
		known := make(map[string]WakeState, len(states))
		for _, s := range states {
			known[s.Key] = s
		}
		seen := make(map[string]bool, len(current))
		for _, c := range current {
			seen[c.Key] = true
			notify, err := r.decide(ctx, c, known[c.Key], now)
			if err != nil {
				return err
			}
			if !notify {
				continue
			}
			s := known[c.Key]
			s.Key, s.Fingerprint, s.NotifiedAt, s.Active = c.Key, c.Fingerprint, now, true
			s.Count++
			if err := r.outbox.Enqueue(ctx, Notice{
				Key: fmt.Sprintf("wake:%s:%d", c.Key, s.Count), RoomID: r.Room, Kind: NoticeMessage,
				Body: RenderWake(c), Mentions: c.Mentions,
			}); err != nil {
				return err
			}
			if err := r.store.PutWakeState(ctx, s); err != nil {
				return err
			}
			res.Notified++
		}
		for _, s := range states {
			if s.Active && !seen[s.Key] {
				s.Active = false
				if err := r.store.PutWakeState(ctx, s); err != nil {
					return err
				}
				res.Cleared++
			}
		}
		return nil
	})
	return res, err
}

// decide is the hysteresis: notify a condition that is new, that became
// active again, whose fingerprint changed, or whose back-off has passed;
// a condition carrying a source event id is acted on once per id.
func (r *Router) decide(ctx context.Context, c WakeCondition, s WakeState, now time.Time) (bool, error) {
	if c.EventID != "" {
		first, err := r.store.ConsumeEvent(ctx, c.Source, c.EventID, now)
		if err != nil || !first {
			return false, err
		}
		return true, nil
	}
	switch {
	case s.Key == "", !s.Active, s.Fingerprint != c.Fingerprint:
		return true, nil
	case c.Backoff > 0 && !now.Before(s.NotifiedAt.Add(c.Backoff)):
		return true, nil
	}
	return false, nil
}

// RenderWake renders a condition in the fixed frame: the headline is
// Jarvis's, and every piece of workspace data sits in a code span tagged
// with its source, so text inside a payload can never pose as Jarvis's
// own words.
func RenderWake(c WakeCondition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Needs attention: %s**\n", c.Title)
	for _, f := range c.Fields {
		fmt.Fprintf(&b, "- %s (from %s): %s\n", f.Name, c.Source, CodeSpan(f.Value))
	}
	return strings.TrimSpace(b.String())
}
