// Package wake is the event/wake router: it reconciles the conditions
// that hold now against what it has said, and speaks only of what changed.
package wake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// State is what the router remembers of a condition.
type State struct {
	Key         string
	Fingerprint string
	NotifiedAt  time.Time
	Active      bool
	Count       int
}

// Store keeps the router's memory; it survives restarts, so a restart
// does not notify again.
type Store interface {
	WakeStates(ctx context.Context) ([]State, error)
	// PutWakeStates records states; of two with one key, the later counts.
	PutWakeStates(ctx context.Context, states []State) error
	// ConsumeEvents records source events and returns those it had not
	// recorded before.
	ConsumeEvents(ctx context.Context, events []Event, at time.Time) (map[Event]bool, error)
}

// Event names a source event, which the router acts on once.
type Event struct {
	Source string
	ID     string
}

// Source reports the conditions that hold now.
type Source struct {
	Name string
	List func(ctx context.Context) ([]core.WakeCondition, error)
}

// Router is the shared, level-triggered reconciler that decides what to
// surface to people: it wakes on change only, with a back-off per
// condition, and never says the same thing twice.
type Router struct {
	deps Deps

	mu sync.Mutex
}

// Deps are what the router works with.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Room is the dedicated room wake notices go to.
	Room string
	// Sources report the conditions that hold now.
	Sources []Source
	// Incidents, when set, keeps the conditions that are alerts as
	// on-call incidents.
	Incidents Incidents
}

// IncidentKind is the kind of the on-call incidents of alert conditions;
// their subject is the condition's key.
const IncidentKind = "wake"

// Incidents are the on-call incidents (core/oncall) alert conditions are.
type Incidents interface {
	// Raise posts n as the alert of incident id, about subject, with 👀;
	// an incident already open keeps its opening and its owner.
	Raise(ctx context.Context, id, kind, subject string, n core.Notice) error
	// Resolve closes incident id, saying said in the alert's thread.
	Resolve(ctx context.Context, id, said string) error
	// OpenIncident returns the ID of the open incident of kind about
	// subject, if there is one.
	OpenIncident(ctx context.Context, kind, subject string) (string, bool, error)
}

// noticeKey is the key of the count-th notice of condition key.
func noticeKey(key string, count int) string { return fmt.Sprintf("wake:%s:%d", key, count) }

// ConditionOf returns the condition whose notice has key,
// wake:<condition>:<count>.
func ConditionOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "wake:")
	i := strings.LastIndexByte(rest, ':')
	if !ok || i <= 0 {
		return "", false
	}
	_, err := strconv.Atoi(rest[i+1:])
	return rest[:i], err == nil
}

// NewRouter builds the router.
func NewRouter(deps Deps) *Router {
	return &Router{deps: deps}
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
	r.mu.Lock()
	defer r.mu.Unlock()
	var res ReconcileResult
	now := r.deps.Clock.Now()
	err := r.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		// A run the store repeats after a serialization failure counts
		// afresh.
		res = ReconcileResult{}
		// The sources are read inside the transaction: a list read before
		// another reconcile committed would clear what that one just said,
		// and the next would say it again.
		var current []core.WakeCondition
		for _, src := range r.deps.Sources {
			conds, err := src.List(ctx)
			if err != nil {
				return fmt.Errorf("wake source %s: %w", src.Name, err)
			}
			current = append(current, conds...)
		}
		res.Conditions = len(current)
		states, err := r.deps.Store.WakeStates(ctx)
		if err != nil {
			return err
		}
		known := make(map[string]State, len(states))
		for _, s := range states {
			known[s.Key] = s
		}
		var events []Event
		for _, c := range current {
			if c.EventID != "" {
				events = append(events, Event{Source: c.Source, ID: c.EventID})
			}
		}
		var first map[Event]bool
		if len(events) > 0 {
			if first, err = r.deps.Store.ConsumeEvents(ctx, events, now); err != nil {
				return err
			}
		}
		var notices []core.Notice
		var changed []State
		seen := make(map[string]bool, len(current))
		for _, c := range current {
			seen[c.Key] = true
			if !decide(c, known[c.Key], first, now) {
				continue
			}
			s := known[c.Key]
			s.Key, s.Fingerprint, s.NotifiedAt, s.Active = c.Key, c.Fingerprint, now, true
			s.Count++
			n := core.Notice{Key: noticeKey(c.Key, s.Count), RoomID: r.deps.Room, Kind: core.NoticeMessage, Body: Render(c), Mentions: c.Mentions}
			if c.Alert && r.deps.Incidents != nil {
				if err := r.raise(ctx, c.Key, n); err != nil {
					return err
				}
			} else {
				notices = append(notices, n)
			}
			changed = append(changed, s)
			res.Notified++
		}
		for _, s := range states {
			if s.Active && !seen[s.Key] {
				s.Active = false
				changed = append(changed, s)
				res.Cleared++
				if err := r.resolve(ctx, s.Key); err != nil {
					return err
				}
			}
		}
		if err := r.deps.Outbox.Enqueue(ctx, notices...); err != nil {
			return err
		}
		return r.deps.Store.PutWakeStates(ctx, changed)
	})
	return res, err
}

// raise posts n, a notice of alert condition key, as its incident: the
// incident open for the condition, or a new one named after n.
func (r *Router) raise(ctx context.Context, key string, n core.Notice) error {
	id, open, err := r.deps.Incidents.OpenIncident(ctx, IncidentKind, key)
	if err != nil {
		return err
	}
	if !open {
		id = n.Key
	}
	return r.deps.Incidents.Raise(ctx, id, IncidentKind, key, n)
}

// resolve closes the incident of condition key, which no longer holds,
// if it has one open.
func (r *Router) resolve(ctx context.Context, key string) error {
	if r.deps.Incidents == nil {
		return nil
	}
	id, open, err := r.deps.Incidents.OpenIncident(ctx, IncidentKind, key)
	if err != nil || !open {
		return err
	}
	return r.deps.Incidents.Resolve(ctx, id, "✅ This no longer needs attention.")
}

// decide is the hysteresis: notify a condition that is new, that became
// active again, whose fingerprint changed, or whose back-off has passed;
// a condition carrying a source event id is acted on once per id, the
// first time first holds it.
func decide(c core.WakeCondition, s State, first map[Event]bool, now time.Time) bool {
	if c.EventID != "" {
		ev := Event{Source: c.Source, ID: c.EventID}
		if !first[ev] {
			return false
		}
		delete(first, ev) // a second condition with the event in this pass is not new
		return true
	}
	switch {
	case s.Key == "", !s.Active, s.Fingerprint != c.Fingerprint:
		return true
	case c.Backoff > 0 && !now.Before(s.NotifiedAt.Add(c.Backoff)):
		return true
	}
	return false
}

// Render renders a condition in the fixed frame: the headline is
// Jarvis's, and every piece of workspace data sits in a code span tagged
// with its source, so text inside a payload can never pose as Jarvis's
// own words.
func Render(c core.WakeCondition) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Needs attention: %s**\n", c.Title)
	for _, f := range c.Fields {
		fmt.Fprintf(&b, "- %s (from %s): %s\n", f.Name, c.Source, core.CodeSpan(f.Value))
	}
	return strings.TrimSpace(b.String())
}
