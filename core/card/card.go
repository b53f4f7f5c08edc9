// Package card is the backlog, the only way Jarvis hands work to the
// orchestrator: card sets published atomically, the card lifecycle, typed
// amendments, sign-offs, the priority budget and the needs-decision relay.
package card

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// MainAgent is the author Jarvis puts on the cards it publishes, so that
// an audit can tell who wrote each card.
const MainAgent = "main-agent"

// Priority is a card's priority class, P0 (most urgent) to P3.
type Priority string

// The priority classes.
const (
	P0 Priority = "P0"
	P1 Priority = "P1"
	P2 Priority = "P2"
	P3 Priority = "P3"
)

// Priorities lists the priority classes, most urgent first.
var Priorities = []Priority{P0, P1, P2, P3}

// Valid reports whether p is one of the priority classes.
func (p Priority) Valid() bool { return slices.Contains(Priorities, p) }

// State is where a card is in its lifecycle.
type State string

// The card states. See cardTransitions for the moves between them.
const (
	// Published is waiting for a worker to claim it.
	Published State = "published"
	// AwaitingRatification had its scope expanded and waits for a
	// person to ratify it before it is dispatched again.
	AwaitingRatification State = "awaiting_ratification"
	// Claimed was taken by a worker that has not started yet.
	Claimed State = "claimed"
	// InProgress is being worked on.
	InProgress State = "in_progress"
	// NeedsDecision waits for a person to answer a worker's question.
	NeedsDecision State = "needs_decision"
	// Blocked cannot go on until something outside the card changes.
	Blocked State = "blocked"
	// Done is finished. It is final.
	Done State = "done"
	// Cancelled was abandoned. It is final.
	Cancelled State = "cancelled"
)

// States lists every card state in lifecycle order.
var States = []State{Published, AwaitingRatification, Claimed, InProgress,
	NeedsDecision, Blocked, Done, Cancelled}

// Valid reports whether s is one of the card states.
func (s State) Valid() bool { return slices.Contains(States, s) }

// Final reports whether no move leaves s.
func (s State) Final() bool { return len(transitions[s]) == 0 }

// Cause is what moves a card from one state to another.
type Cause string

// The causes of card moves.
const (
	// ByWorker is a worker (or a person) setting the state directly.
	ByWorker Cause = "worker"
	// ByQuestion is a worker raising a question (RaiseDecision).
	ByQuestion Cause = "question"
	// ByAnswer is a person answering the question, or the default option
	// applied at its deadline.
	ByAnswer Cause = "answer"
	// ByExpiry is a question's deadline passing with no answer and no
	// default option.
	ByExpiry Cause = "expiry"
	// ByScope is a scope-expanding amendment.
	ByScope Cause = "scope"
	// ByRatification is a person ratifying the card's new scope.
	ByRatification Cause = "ratification"
)

// transitions is the legal-transition table: for each state, the states
// a card may move to and the one cause allowed to make each move. Anything
// not listed is refused with ErrIllegalTransition and changes nothing.
//
//	from                   to                     by
//	published              claimed                worker (a worker takes it; its dependencies must be done)
//	published              cancelled              worker
//	published              awaiting_ratification  scope
//	claimed                in_progress            worker
//	claimed                published              worker (released without starting)
//	claimed                needs_decision         question
//	claimed                blocked                worker
//	claimed                cancelled              worker
//	claimed                awaiting_ratification  scope
//	in_progress            done                   worker
//	in_progress            needs_decision         question
//	in_progress            blocked                worker
//	in_progress            published              worker (released for another worker)
//	in_progress            cancelled              worker
//	in_progress            awaiting_ratification  scope
//	needs_decision         published              answer (re-dispatch from the checkpoint)
//	needs_decision         blocked                expiry
//	needs_decision         cancelled              worker (the open question is withdrawn)
//	blocked                in_progress            worker
//	blocked                published              worker
//	blocked                needs_decision         question
//	blocked                cancelled              worker
//	blocked                awaiting_ratification  scope
//	awaiting_ratification  published              ratification
//	awaiting_ratification  cancelled              worker
//	done, cancelled        (final; a person may reopen a done card: Reopen)
//
// A card waiting on a question keeps its scope until the question is
// answered: scope changes are refused in needs_decision.
var transitions = map[State]map[State]Cause{
	Published: {
		Claimed:              ByWorker,
		Cancelled:            ByWorker,
		AwaitingRatification: ByScope,
	},
	Claimed: {
		InProgress:           ByWorker,
		Published:            ByWorker,
		NeedsDecision:        ByQuestion,
		Blocked:              ByWorker,
		Cancelled:            ByWorker,
		AwaitingRatification: ByScope,
	},
	InProgress: {
		Done:                 ByWorker,
		NeedsDecision:        ByQuestion,
		Blocked:              ByWorker,
		Published:            ByWorker,
		Cancelled:            ByWorker,
		AwaitingRatification: ByScope,
	},
	NeedsDecision: {
		Published: ByAnswer,
		Blocked:   ByExpiry,
		Cancelled: ByWorker,
	},
	Blocked: {
		InProgress:           ByWorker,
		Published:            ByWorker,
		NeedsDecision:        ByQuestion,
		Cancelled:            ByWorker,
		AwaitingRatification: ByScope,
	},
	AwaitingRatification: {
		Published: ByRatification,
		Cancelled: ByWorker,
	},
}

// causeText says which cause alone makes a move, for error messages.
var causeText = map[Cause]string{
	ByWorker:       "only a worker's state change does that",
	ByQuestion:     "a card enters needs_decision only when a worker raises a question",
	ByAnswer:       "only an answer to the open question (or its default at the deadline) does that",
	ByExpiry:       "only the question's deadline passing does that",
	ByScope:        "only a scope-expanding amendment does that",
	ByRatification: "only a person ratifying the card does that",
}

// CheckTransition returns nil when cause may move a card from one state to
// another, and otherwise an ErrIllegalTransition that says what is allowed.
func CheckTransition(from, to State, cause Cause) error {
	if !to.Valid() {
		return core.Invalid("state", "unknown state %q; one of %s", to, joinStates(States))
	}
	moves := transitions[from]
	if len(moves) == 0 {
		return core.Refuse(core.ErrIllegalTransition, "%s → %s: %s is final", from, to, from)
	}
	by, ok := moves[to]
	if ok && by == cause {
		return nil
	}
	if ok {
		return core.Refuse(core.ErrIllegalTransition, "%s → %s: %s", from, to, causeText[by])
	}
	var allowed []State
	for _, s := range States {
		if moves[s] == cause {
			allowed = append(allowed, s)
		}
	}
	if len(allowed) == 0 {
		return core.Refuse(core.ErrIllegalTransition, "%s → %s is not allowed", from, to)
	}
	return core.Refuse(core.ErrIllegalTransition, "%s → %s is not allowed; from %s: %s", from, to, from, joinStates(allowed))
}

func joinStates(states []State) string {
	parts := make([]string, len(states))
	for i, s := range states {
		parts[i] = string(s)
	}
	return strings.Join(parts, ", ")
}

// Spec is what a card asks for. It never changes after the card is
// published; changes arrive as amendments.
type Spec struct {
	// Goal says in a sentence what the card achieves.
	Goal string
	// Acceptance lists the criteria the work is judged by.
	Acceptance []string
	// Priority is the class the card was published with.
	Priority Priority
	// DependsOn lists the cards that must be done before this one is
	// claimed.
	DependsOn []string
	// Budget is an advisory budget in free text ("2 h", "50k tokens"); it
	// is not enforced.
	Budget string
}

// Card is a unit of delegated work on the backlog.
type Card struct {
	ID    string
	SetID string
	// Ref is the name the card had inside its set, if it had one.
	Ref  string
	Spec Spec
	// Priority is the card's current priority: the spec's, or the one the
	// last priority_change amendment set.
	Priority Priority
	// Author wrote the card (MainAgent for cards Jarvis publishes).
	Author string
	// RatifiedBy is the person who last ratified the card, if anyone did;
	// RatifiedRevision is the revision they ratified. Ratification
	// authorises dispatch only, never a merge: merging stays with the
	// orchestrator's reviewer of record.
	RatifiedBy       string
	RatifiedRevision int
	// SourceTrust is where the card's text came from: the weakest trust
	// of its drafts and of the account that published them, external for
	// a set an agent published over the API.
	SourceTrust core.Trust
	State       State
	// StateNote is what the last move said (a worker's note, the answer
	// that re-dispatched the card).
	StateNote string
	// Worker is the agent that claimed the card and works it; empty while
	// the card waits in the backlog. Only it may move the card or ask about
	// it (SetStateAs, RaiseDecisionAs).
	Worker string
	// Revision is 1 at publishing and grows by one with every amendment.
	Revision  int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Detail is a card with everything recorded about it.
type Detail struct {
	Card
	Amendments []Amendment
	SignOffs   []SignOff
	Decisions  []Decision
}

// Filter selects cards to list.
type Filter struct {
	// State, when set, keeps only cards in that state.
	State State
	// Limit caps the number of cards; 0 means DefaultListLimit.
	Limit int
}

// DefaultListLimit and MaxListLimit bound how many cards List
// returns.
const (
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// CardStore keeps cards. Cards are inserted with their set (CardSetStore).
type CardStore interface {
	// Card returns the card with the given id, or ErrNotFound.
	Card(ctx context.Context, id string) (Card, error)
	// CardsByID returns each of the given cards that exists, by id.
	CardsByID(ctx context.Context, ids []string) (map[string]Card, error)
	// ListCards returns cards by current priority, then age.
	ListCards(ctx context.Context, f Filter) ([]Card, error)
	// CardStates returns the state of each of the given cards that exists.
	CardStates(ctx context.Context, ids []string) (map[string]State, error)
	// UpdateCard writes the mutable fields of next (priority, ratification,
	// state, note, revision, updated time) if the card is still in prev's
	// state and revision, and returns ErrConflict otherwise. The spec is
	// never written.
	UpdateCard(ctx context.Context, next, prev Card) error
	// CountCards counts the cards in a state.
	CountCards(ctx context.Context, state State) (int, error)
	// CardsOfWorkers returns the cards the named agents work: the open
	// ones, and those done or cancelled since since, most recently
	// changed first.
	CardsOfWorkers(ctx context.Context, workers []string, since time.Time) ([]Work, error)
}

// Store is everything the card service keeps.
type Store interface {
	CardStore
	SetStore
	DraftStore
	AmendmentStore
	DecisionStore
	BudgetStore
}

// Service is the backlog through which Jarvis hands work to the
// orchestrator: card sets drafted and published atomically, the card
// lifecycle, amendments, reviewer sign-offs, the priority budget and the
// needs-decision relay.
type Service struct {
	deps   Deps
	budget map[Priority]BudgetRule
	ids    core.IDSource
}

// Deps are what the card service works with.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Room is the dedicated room questions and ratification requests go to.
	Room string
	// Admins are asked when a card has no ratifier, and may always answer
	// and ratify.
	Admins []string
	// WorkerNotes, when set, returns what a worker journaled about a card,
	// oldest first, for the report its ratifier gets when it is done.
	WorkerNotes func(ctx context.Context, worker, cardID string) ([]WorkerNote, error)
	// OnChange, when set, hears that cards moved or appeared, once the
	// change is committed. The lead wires it to tripwire.Service.Reevaluate
	// with SourceKinds, so that tripwires on cards trip at once.
	OnChange func(ctx context.Context)
}

// errNoRoom means the service was wired without a room, so it cannot ask
// anybody anything; it is a wiring mistake, not bad input.
var errNoRoom = errors.New("the card service has no room for questions and ratification requests")

// NewService returns the card service. cfg must have passed Validate.
func NewService(cfg Config, deps Deps) *Service {
	return &Service{deps: deps, budget: cfg.rules()}
}

// changed tells OnChange that cards moved or appeared.
func (c *Service) changed(ctx context.Context) {
	if c.deps.OnChange != nil {
		c.deps.OnChange(ctx)
	}
}

// Get returns a card with its amendments, sign-offs and questions.
func (c *Service) Get(ctx context.Context, id string) (Detail, error) {
	var d Detail
	card, err := c.deps.Store.Card(ctx, id)
	if err != nil {
		return d, fmt.Errorf("get card %q: %w", id, err)
	}
	d.Card = card
	if d.Amendments, err = c.deps.Store.Amendments(ctx, id); err != nil {
		return d, fmt.Errorf("get card %q amendments: %w", id, err)
	}
	if d.SignOffs, err = c.deps.Store.SignOffs(ctx, id); err != nil {
		return d, fmt.Errorf("get card %q sign-offs: %w", id, err)
	}
	if d.Decisions, err = c.deps.Store.DecisionsOfCard(ctx, id); err != nil {
		return d, fmt.Errorf("get card %q questions: %w", id, err)
	}
	return d, nil
}

// List returns cards, most urgent first, optionally only those in a state.
func (c *Service) List(ctx context.Context, f Filter) ([]Card, error) {
	if f.State != "" && !f.State.Valid() {
		return nil, core.Invalid("state", "unknown state %q; one of %s", f.State, joinStates(States))
	}
	switch {
	case f.Limit < 0 || f.Limit > MaxListLimit:
		return nil, core.Invalid("limit", "must be between 1 and %d", MaxListLimit)
	case f.Limit == 0:
		f.Limit = DefaultListLimit
	}
	cards, err := c.deps.Store.ListCards(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("list cards: %w", err)
	}
	return cards, nil
}

// Count counts the cards in a state. It backs the cards.needs_decision and
// cards.blocked tripwire sources.
func (c *Service) Count(ctx context.Context, state State) (int, error) {
	if !state.Valid() {
		return 0, core.Invalid("state", "unknown state %q", state)
	}
	n, err := c.deps.Store.CountCards(ctx, state)
	if err != nil {
		return 0, fmt.Errorf("count %s cards: %w", state, err)
	}
	return n, nil
}

// StateOf returns a card's state. It backs the card.state tripwire source.
func (c *Service) StateOf(ctx context.Context, id string) (State, error) {
	card, err := c.deps.Store.Card(ctx, id)
	if err != nil {
		return "", fmt.Errorf("card %q: %w", id, err)
	}
	return card.State, nil
}

// MaxStateNote is the longest note a state change may carry.
const MaxStateNote = 2000

// SetState moves a card as a worker does (ByWorker), with an optional
// note. Claiming a card whose dependencies are not all done is refused with
// ErrConflict. Cancelling a card that waits on a question withdraws the
// question and says so in the room.
func (c *Service) SetState(ctx context.Context, id string, to State, note string) (Card, error) {
	return c.SetStateAs(ctx, "", id, to, note)
}

// SetStateAs is SetState by the agent worker: its claim makes it the
// card's worker, and a card another agent works is refused with
// ErrForbidden. An empty worker is no particular agent (a person, a test).
func (c *Service) SetStateAs(ctx context.Context, worker, id string, to State, note string) (Card, error) {
	note = strings.TrimSpace(note)
	if len(note) > MaxStateNote {
		return Card{}, core.Invalid("note", "longer than %d bytes", MaxStateNote)
	}
	var out Card
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		card, err := c.deps.Store.Card(ctx, id)
		if err != nil {
			return err
		}
		if err := checkWorker(card, worker); err != nil {
			return err
		}
		if err := CheckTransition(card.State, to, ByWorker); err != nil {
			return err
		}
		if to == Claimed && worker != "" {
			card.Worker = worker
		}
		if to == Claimed {
			if err := c.checkDependencies(ctx, card); err != nil {
				return err
			}
		}
		if card.State == NeedsDecision {
			if err := c.withdrawDecision(ctx, card); err != nil {
				return err
			}
		}
		if out, err = c.move(ctx, card, to, note); err != nil {
			return err
		}
		return c.report(ctx, out)
	})
	if err != nil {
		return Card{}, fmt.Errorf("set card %q state: %w", id, err)
	}
	c.changed(ctx)
	return out, nil
}

// checkWorker refuses, with ErrForbidden, an agent that would move or ask
// about a card another agent works.
func checkWorker(card Card, worker string) error {
	if worker == "" || card.Worker == "" || strings.EqualFold(card.Worker, worker) {
		return nil
	}
	return core.Refuse(core.ErrForbidden, "card %s is worked by %s; only it may move the card or ask about it, not %s",
		card.ID, card.Worker, worker)
}

// move writes a card's new state and note; the caller has checked the move.
// A card back in the backlog (published) has no worker any more.
func (c *Service) move(ctx context.Context, card Card, to State, note string) (Card, error) {
	next := card
	next.State = to
	next.StateNote = note
	if to == Published {
		next.Worker = ""
	}
	next.UpdatedAt = c.deps.Clock.Now()
	if err := c.deps.Store.UpdateCard(ctx, next, card); err != nil {
		return Card{}, err
	}
	return next, nil
}

// checkDependencies returns ErrConflict unless every card that card
// depends on is done.
func (c *Service) checkDependencies(ctx context.Context, card Card) error {
	if len(card.Spec.DependsOn) == 0 {
		return nil
	}
	states, err := c.deps.Store.CardStates(ctx, card.Spec.DependsOn)
	if err != nil {
		return err
	}
	for _, dep := range card.Spec.DependsOn {
		if st := states[dep]; st != Done {
			return core.Refuse(core.ErrConflict, "card %s depends on %s, which is %s", card.ID, dep, st)
		}
	}
	return nil
}

// Ratify publishes a card waiting for ratification: after a
// scope-expanding amendment, or published from a bridged account. who must
// be the card's ratifier or an admin (anyone when neither exists), writing
// from Matrix or from a linked account (trust at least linked: never a
// relay or a puppet linked to nobody); they become its ratifier at the
// current revision.
func (c *Service) Ratify(ctx context.Context, id, who string, trust core.Trust) (Card, error) {
	if strings.TrimSpace(who) == "" {
		return Card{}, core.Invalid("who", "is required")
	}
	if !trust.AtLeast(core.TrustLinked) {
		return Card{}, fmt.Errorf("ratify card %q: %w", id,
			core.Refuse(core.ErrForbidden, "ratification comes from a Matrix account or one linked to it, not from %s trust", trust))
	}
	var out Card
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		card, err := c.deps.Store.Card(ctx, id)
		if err != nil {
			return err
		}
		if err := CheckTransition(card.State, Published, ByRatification); err != nil {
			return err
		}
		if !c.mayDecide(c.askFor(card), who) {
			return core.Refuse(core.ErrForbidden, "%s may not ratify card %s; ask %s", who, card.ID, strings.Join(c.askFor(card), ", "))
		}
		next := card
		next.State = Published
		next.StateNote = fmt.Sprintf("ratified at revision %d by %s", card.Revision, who)
		next.RatifiedBy = who
		next.RatifiedRevision = card.Revision
		next.UpdatedAt = c.deps.Clock.Now()
		if err := c.deps.Store.UpdateCard(ctx, next, card); err != nil {
			return err
		}
		out = next
		return nil
	})
	if err != nil {
		return Card{}, fmt.Errorf("ratify card %q: %w", id, err)
	}
	c.changed(ctx)
	return out, nil
}

// askFor returns the people to ask about a card: its ratifier, or the
// admins when it has none.
func (c *Service) askFor(card Card) []string {
	if card.RatifiedBy != "" {
		return []string{card.RatifiedBy}
	}
	return slices.Clone(c.deps.Admins)
}

// mayDecide reports whether who may answer or ratify for the people asked:
// one of them, an admin, the operator at the workspace's console (an
// admin, named core.ConsolePrefix + their user, a name only the console
// gives), or anyone when there is nobody to ask at all.
func (c *Service) mayDecide(asked []string, who string) bool {
	if len(asked) == 0 && len(c.deps.Admins) == 0 {
		return true
	}
	return slices.Contains(asked, who) || slices.Contains(c.deps.Admins, who) || strings.HasPrefix(who, core.ConsolePrefix)
}
