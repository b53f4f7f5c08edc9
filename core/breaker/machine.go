// Package breaker is the per-agent circuit breaker: the Closed, Open and
// Half-Open state machine, its audited transitions, halt notices and the
// human review that lifts a halt.
package breaker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// State is where an agent's circuit breaker stands.
type State string

const (
	// Closed is normal operation: the agent runs.
	Closed State = "closed"
	// Open means the agent is halted until a person acts.
	Open State = "open"
	// HalfOpen is a trial run after a person resumed the agent; the
	// supervisor's verification closes or re-opens it.
	HalfOpen State = "half-open"
)

// Severity is the kind of drift that opened a breaker.
type Severity string

// The severities of the seed.
const (
	SeverityIdentity       Severity = "identity"
	SeveritySafety         Severity = "safety"
	SeverityBoundary       Severity = "boundary"
	SeverityInfrastructure Severity = "infrastructure"
)

// SeverityAny matches every severity in a Trigger.
const SeverityAny Severity = "any"

var severities = []Severity{SeverityIdentity, SeveritySafety, SeverityBoundary, SeverityInfrastructure}

// Urgency is how urgent a surfacing observation is.
type Urgency string

// The urgencies of surfacing observations.
const (
	UrgencyLow      Urgency = "low"
	UrgencyHigh     Urgency = "high"
	UrgencyCritical Urgency = "critical"
)

var urgencies = []Urgency{UrgencyLow, UrgencyHigh, UrgencyCritical}

// Action is what happened to a breaker in one transition; the audit
// trail records it.
type Action string

// The actions of the breaker state machine.
const (
	// ActOpen halts the agent with a new event (from closed, or from
	// half-open when the trial shows drift again).
	ActOpen Action = "open"
	// ActReview records who is reviewing an open breaker.
	ActReview Action = "review"
	// ActResume starts the half-open trial.
	ActResume Action = "resume"
	// ActVerified closes a half-open breaker the supervisor verified.
	ActVerified Action = "verified"
	// ActVerifyFailed re-opens a half-open breaker with a new event.
	ActVerifyFailed Action = "verify_failed"
	// ActTimeout re-opens a half-open breaker left unverified too long.
	ActTimeout Action = "timeout"
	// ActOverrule closes a breaker at once on a person's word.
	ActOverrule Action = "overrule"
)

// moves is the whole state machine: the actions each state allows
// and where they lead. Anything else is an illegal transition.
var moves = map[State]map[Action]State{
	Closed: {
		ActOpen: Open,
	},
	Open: {
		ActReview:   Open,
		ActResume:   HalfOpen,
		ActOverrule: Closed,
	},
	HalfOpen: {
		ActOpen:         Open,
		ActVerified:     Closed,
		ActVerifyFailed: Open,
		ActTimeout:      Open,
		ActOverrule:     Closed,
	},
}

// verbs says each action the way a refusal names it.
var verbs = map[Action]string{
	ActOpen:         "open it",
	ActReview:       "review it",
	ActResume:       "resume it",
	ActVerified:     "verify it",
	ActVerifyFailed: "verify it",
	ActTimeout:      "time it out",
	ActOverrule:     "reset it",
	ActKeep:         "keep it halted",
}

// nextState returns the state act leads to from from, or an
// ErrIllegalTransition.
func nextState(agent string, from State, act Action) (State, error) {
	to, ok := moves[from][act]
	if !ok {
		return "", fmt.Errorf("breaker of %s is %s, cannot %s: %w", agent, from, verbs[act], core.ErrIllegalTransition)
	}
	return to, nil
}

// Resolution says how a breaker event ended.
type Resolution string

// The ways an event ends.
const (
	// Verified: the supervisor's verification pass closed the breaker.
	Verified Resolution = "verified"
	// Overruled: a person closed the breaker without verification.
	Overruled Resolution = "overruled"
	// Superseded: the half-open trial failed and a new event (NextID)
	// opened the breaker again.
	Superseded Resolution = "superseded"
)

// The reactions Jarvis puts on every halt notice: take the review, resume
// into a half-open trial, keep the agent halted. Closing at once (the
// overrule) is a deliberate command, `!breaker reset`, never a tap.
const (
	ReactReview = "👀"
	ReactResume = "▶️"
	ReactKeep   = "⏹️"
)

// Limits on what the breaker takes in and lists.
const (
	MaxReason      = 2000
	MaxEvidence    = 20
	MaxEvidenceLen = 2000
	MaxActor       = 255
	MaxEvents      = 100
)

// DefaultSupervisor names the supervisor when an API call does not.
const DefaultSupervisor = "supervisor"

// Sweeper is the actor the audit trail names for a half-open
// timeout.
const Sweeper = "jarvis"

var agentPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Event is one halt of an agent: why it was opened and how it ended.
type Event struct {
	ID       string
	Agent    string
	At       time.Time
	Severity Severity
	Reason   string
	Evidence []string
	// OpenedBy names the supervisor that opened it.
	OpenedBy string
	// PreviousID is the event whose half-open trial failed into this one.
	PreviousID string
	// ReviewedBy is the last person who said they are reviewing it.
	ReviewedBy string
	ReviewedAt time.Time
	// ResolvedAt, ResolvedBy and Resolution are set when the event ends:
	// ResolvedBy is a person's Matrix ID or a supervisor's name.
	ResolvedAt time.Time
	ResolvedBy string
	Resolution Resolution
	// NextID is the event that superseded this one.
	NextID string
}

// NoticeKey is the key of the event's halt notice; every later notice of
// the event edits it or is threaded under it.
func (e Event) NoticeKey() string { return noticePrefix + e.ID }

const noticePrefix = "breaker:"

// Record is an agent's breaker as stored. Version counts its
// transitions; every write compares it, so two racing transitions cannot
// both succeed.
type Record struct {
	Agent   string
	State   State
	EventID string
	Since   time.Time
	Version int64
}

// Status is an agent's breaker with the event that holds it open or
// half-open (nil when closed).
type Status struct {
	Record
	Event *Event
}

// Transition is one row of the audit trail: who moved which breaker
// from where to where, when and why.
type Transition struct {
	Seq     int64
	Agent   string
	EventID string
	Action  Action
	From    State
	To      State
	Actor   string
	Why     string
	At      time.Time
}

// Trigger is one (urgency, severity) pair that opens a breaker by
// itself when a surfacing observation carries it.
type Trigger struct {
	Urgency Urgency
	// Severity is a severity or "any".
	Severity Severity
}

// Config is the breaker section of the configuration.
type Config struct {
	// HalfOpenTimeout, when positive, re-opens a half-open breaker that the
	// supervisor has not verified within it. Zero waits for ever.
	HalfOpenTimeout time.Duration
	// OpenOn lists the observations that open a breaker by themselves.
	OpenOn []Trigger
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.HalfOpenTimeout < 0 {
		return core.Invalid("breaker.half_open_timeout", "must not be negative")
	}
	for i, t := range c.OpenOn {
		field := fmt.Sprintf("breaker.open_on[%d]", i)
		if err := checkBreakerUrgency(field+".urgency", t.Urgency); err != nil {
			return err
		}
		if t.Severity != SeverityAny {
			if err := checkBreakerSeverity(field+".severity", t.Severity); err != nil {
				return err
			}
		}
	}
	return nil
}

// opens reports whether an observation opens the breaker by itself.
func (c Config) opens(u Urgency, s Severity) bool {
	for _, t := range c.OpenOn {
		if t.Urgency == u && (t.Severity == SeverityAny || t.Severity == s) {
			return true
		}
	}
	return false
}

// OpenInput is the supervisor's request to halt an agent.
type OpenInput struct {
	Severity Severity
	Reason   string
	Evidence []string
	// By names the supervisor; empty means DefaultSupervisor.
	By string
}

// normalize trims the input, fills By, and checks it.
func (in *OpenInput) normalize() error {
	in.Reason = strings.TrimSpace(in.Reason)
	in.By = strings.TrimSpace(in.By)
	if in.By == "" {
		in.By = DefaultSupervisor
	}
	if err := checkBreakerSeverity("severity", in.Severity); err != nil {
		return err
	}
	switch {
	case in.Reason == "":
		return core.Invalid("reason", "is required")
	case utf8.RuneCountInString(in.Reason) > MaxReason:
		return core.Invalid("reason", "is longer than %d characters", MaxReason)
	case len(in.Evidence) > MaxEvidence:
		return core.Invalid("evidence", "has %d items, at most %d are allowed", len(in.Evidence), MaxEvidence)
	case utf8.RuneCountInString(in.By) > MaxActor:
		return core.Invalid("by", "is longer than %d characters", MaxActor)
	}
	evidence := make([]string, len(in.Evidence))
	for i, e := range in.Evidence {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return core.Invalid(fmt.Sprintf("evidence[%d]", i), "is empty")
		case utf8.RuneCountInString(e) > MaxEvidenceLen:
			return core.Invalid(fmt.Sprintf("evidence[%d]", i), "is longer than %d characters", MaxEvidenceLen)
		}
		evidence[i] = e
	}
	in.Evidence = evidence
	return nil
}

// Observation is a surfacing observation about an agent. It opens
// the agent's breaker when the configuration says its urgency and severity
// do.
type Observation struct {
	Urgency Urgency
	OpenInput
}

func checkBreakerSeverity(field string, s Severity) error {
	for _, known := range severities {
		if s == known {
			return nil
		}
	}
	if s == "" {
		return core.Invalid(field, "is required")
	}
	return core.Invalid(field, "must be identity, safety, boundary or infrastructure, not %q", s)
}

func checkBreakerUrgency(field string, u Urgency) error {
	for _, known := range urgencies {
		if u == known {
			return nil
		}
	}
	if u == "" {
		return core.Invalid(field, "is required")
	}
	return core.Invalid(field, "must be low, high or critical, not %q", u)
}

// CheckAgent checks an agent name as the breaker API takes it.
func CheckAgent(agent string) error {
	if !agentPattern.MatchString(agent) {
		return core.Invalid("agent", "must be 1 to 64 letters, digits, '.', '_' or '-', not %q", agent)
	}
	return nil
}

// Store keeps breakers, their events and the audit trail.
type Store interface {
	// Get returns an agent's breaker; an agent never opened is closed at
	// version 0.
	Get(ctx context.Context, agent string) (Record, error)
	// List returns every breaker ever opened, by agent name.
	List(ctx context.Context) ([]Record, error)
	// Some returns the breakers of the named agents that were ever
	// opened.
	Some(ctx context.Context, agents []string) ([]Record, error)
	// HalfOpenBefore returns the breakers half-open since t or earlier.
	HalfOpenBefore(ctx context.Context, t time.Time) ([]Record, error)
	// Move writes rec if the stored version is still version (0 when there
	// is no row yet); otherwise it returns ErrConflict. The stored version
	// becomes version+1.
	Move(ctx context.Context, rec Record, version int64) error
	// AddEvent writes a new event.
	AddEvent(ctx context.Context, e Event) error
	// UpdateEvent writes an event's review and resolution fields.
	UpdateEvent(ctx context.Context, e Event) error
	// Event returns an event, or ErrNotFound.
	Event(ctx context.Context, id string) (Event, error)
	// Events returns an agent's latest events, newest first.
	Events(ctx context.Context, agent string, limit int) ([]Event, error)
	// AddTransition appends to the audit trail and returns the row's seq.
	AddTransition(ctx context.Context, t Transition) (int64, error)
	// Transitions returns the audit trail of an event, oldest first.
	Transitions(ctx context.Context, eventID string) ([]Transition, error)
}

// Deps are what the breaker service works with.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Room is the dedicated room halt notices go to.
	Room string
	// Admins are mentioned in every halt notice.
	Admins []string
	// OnChange, when set, hears the agent whose breaker changed state, after
	// the change is committed (to re-evaluate breaker.state tripwires).
	OnChange func(agent string)
	// Incidents, when set, keeps every halt as an on-call incident: the
	// review claims it, a resume or an overrule resolves it.
	Incidents *oncall.Service
}

// Service is the circuit breaker service: one Closed / Open / Half-Open
// state machine per agent. Every transition is written with its audit row
// and its notices in one transaction.
type Service struct {
	cfg  Config
	deps Deps
}

// NewService returns the breaker service. cfg must have passed Validate.
func NewService(cfg Config, deps Deps) *Service {
	return &Service{cfg: cfg, deps: deps}
}

// write runs fn in a transaction. fn returns the agent
// whose breaker changed state, if any, and OnChange hears of it after the
// commit.
func (b *Service) write(ctx context.Context, fn func(ctx context.Context) (changed string, err error)) error {
	var changed string
	err := b.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		changed, err = fn(ctx)
		return err
	})
	if err == nil && changed != "" && b.deps.OnChange != nil {
		b.deps.OnChange(changed)
	}
	return err
}

// changed returns agent when the state moved, for write.
func changed(agent string, from, to State) string {
	if from == to {
		return ""
	}
	return agent
}

// Status returns an agent's breaker; an agent never halted is closed.
func (b *Service) Status(ctx context.Context, agent string) (Status, error) {
	if err := CheckAgent(agent); err != nil {
		return Status{}, err
	}
	rec, err := b.deps.Store.Get(ctx, agent)
	if err != nil {
		return Status{}, fmt.Errorf("breaker of %s: %w", agent, err)
	}
	return b.status(ctx, rec)
}

// States returns the state of each named agent's breaker, by agent, in
// one read: closed for an agent never halted. The fleet answers a batch of
// heartbeats with it (fleet.BreakerReader), which is why the states are
// plain strings.
func (b *Service) States(ctx context.Context, agents []string) (map[string]string, error) {
	recs, err := b.deps.Store.Some(ctx, agents)
	if err != nil {
		return nil, fmt.Errorf("breakers of %d agents: %w", len(agents), err)
	}
	out := make(map[string]string, len(agents))
	for _, agent := range agents {
		out[agent] = string(Closed)
	}
	for _, rec := range recs {
		out[rec.Agent] = string(rec.State)
	}
	return out, nil
}

// StatusAll returns the breaker of every agent ever halted, by name.
func (b *Service) StatusAll(ctx context.Context) ([]Status, error) {
	recs, err := b.deps.Store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list breakers: %w", err)
	}
	out := make([]Status, 0, len(recs))
	for _, rec := range recs {
		st, err := b.status(ctx, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (b *Service) status(ctx context.Context, rec Record) (Status, error) {
	st := Status{Record: rec}
	if rec.State == Closed {
		return st, nil
	}
	ev, err := b.deps.Store.Event(ctx, rec.EventID)
	if err != nil {
		return st, fmt.Errorf("breaker of %s: event %s: %w", rec.Agent, rec.EventID, err)
	}
	st.Event = &ev
	return st, nil
}

// ResolveState is the resolver of the breaker.state tripwire source: the
// state of an agent's breaker (closed, open, half-open), read as
// ResolveStates reads many.
func (b *Service) ResolveState(ctx context.Context, agent string) (string, error) {
	states, errs := b.ResolveStates(ctx, []string{agent})
	return states[0], errs[0]
}

// ResolveStates is ResolveState for many agents at once: one read of
// their breakers, and the event of each open or half-open one, as Status
// reads it.
func (b *Service) ResolveStates(ctx context.Context, agents []string) ([]string, []error) {
	states, errs := make([]string, len(agents)), make([]error, len(agents))
	recs, listErr := b.deps.Store.Some(ctx, agents)
	byAgent := make(map[string]Record, len(recs))
	for _, rec := range recs {
		byAgent[rec.Agent] = rec
	}
	for i, agent := range agents {
		if errs[i] = CheckAgent(agent); errs[i] != nil {
			continue
		}
		if listErr != nil {
			errs[i] = fmt.Errorf("breaker of %s: %w", agent, listErr)
			continue
		}
		rec, ok := byAgent[agent]
		if !ok {
			rec = Record{Agent: agent, State: Closed}
		}
		st, err := b.status(ctx, rec)
		states[i], errs[i] = string(st.State), err
	}
	return states, errs
}

// Events returns an agent's latest n events, newest first; n is clamped to
// 1..MaxEvents.
func (b *Service) Events(ctx context.Context, agent string, n int) ([]Event, error) {
	if err := CheckAgent(agent); err != nil {
		return nil, err
	}
	n = max(1, min(n, MaxEvents))
	evs, err := b.deps.Store.Events(ctx, agent, n)
	if err != nil {
		return nil, fmt.Errorf("breaker events of %s: %w", agent, err)
	}
	return evs, nil
}

// Event returns one event.
func (b *Service) Event(ctx context.Context, id string) (Event, error) {
	ev, err := b.deps.Store.Event(ctx, id)
	if err != nil {
		return ev, fmt.Errorf("breaker event %s: %w", id, err)
	}
	return ev, nil
}

// EventByNoticeKey returns the event whose halt notice has the given key,
// so that a reaction on the notice can be mapped to its event.
func (b *Service) EventByNoticeKey(ctx context.Context, key string) (Event, error) {
	id, ok := strings.CutPrefix(key, noticePrefix)
	if !ok || id == "" || strings.Contains(id, ":") {
		return Event{}, fmt.Errorf("notice %q is not a halt notice: %w", key, core.ErrNotFound)
	}
	return b.Event(ctx, id)
}

// History returns the audit trail of an event, oldest first.
func (b *Service) History(ctx context.Context, eventID string) ([]Transition, error) {
	ts, err := b.deps.Store.Transitions(ctx, eventID)
	if err != nil {
		return nil, fmt.Errorf("history of breaker event %s: %w", eventID, err)
	}
	return ts, nil
}

// Open halts an agent on the supervisor's word: a new event, the halt
// notice and its reactions. A breaker already open is an illegal
// transition; a half-open one re-opens, superseding the trial's event.
func (b *Service) Open(ctx context.Context, agent string, in OpenInput) (Event, error) {
	if err := CheckAgent(agent); err != nil {
		return Event{}, err
	}
	if err := in.normalize(); err != nil {
		return Event{}, err
	}
	var st Status
	err := b.write(ctx, func(ctx context.Context) (string, error) {
		rec, err := b.deps.Store.Get(ctx, agent)
		if err != nil {
			return "", err
		}
		st, err = b.open(ctx, rec, ActOpen, in)
		return agent, err
	})
	if err != nil {
		return Event{}, fmt.Errorf("open breaker of %s: %w", agent, err)
	}
	return *st.Event, nil
}

// Observe takes a surfacing observation. When the configuration says it
// opens the breaker and the breaker is closed or half-open, it opens it as
// Open does and returns the new event with opened true; otherwise it
// changes nothing.
func (b *Service) Observe(ctx context.Context, agent string, obs Observation) (ev Event, opened bool, err error) {
	if err := CheckAgent(agent); err != nil {
		return ev, false, err
	}
	if err := checkBreakerUrgency("urgency", obs.Urgency); err != nil {
		return ev, false, err
	}
	in := obs.OpenInput
	if err := in.normalize(); err != nil {
		return ev, false, err
	}
	if !b.cfg.opens(obs.Urgency, in.Severity) {
		return ev, false, nil
	}
	err = b.write(ctx, func(ctx context.Context) (string, error) {
		rec, err := b.deps.Store.Get(ctx, agent)
		if err != nil || rec.State == Open {
			return "", err
		}
		st, err := b.open(ctx, rec, ActOpen, in)
		if err != nil {
			return "", err
		}
		ev, opened = *st.Event, true
		return agent, nil
	})
	if err != nil {
		return Event{}, false, fmt.Errorf("observe %s: %w", agent, err)
	}
	return ev, opened, nil
}

// Review records that a person is reviewing the open event, without
// changing the state.
func (b *Service) Review(ctx context.Context, eventID, who string) (Status, error) {
	return b.onEvent(ctx, eventID, who, ActReview, func(ctx context.Context, rec Record, ev Event, now time.Time) (Event, string, error) {
		if err := b.claimHalt(ctx, ev, who); err != nil {
			return ev, "", err
		}
		ev.ReviewedBy, ev.ReviewedAt = who, now
		return ev, "reviewing", b.deps.Store.UpdateEvent(ctx, ev)
	})
}

// Resume starts the half-open trial of the open event. Of several
// concurrent resumes exactly one succeeds; the others find the breaker
// half-open and get ErrIllegalTransition.
func (b *Service) Resume(ctx context.Context, eventID, who string) (Status, error) {
	return b.onEvent(ctx, eventID, who, ActResume, nil)
}

// Reset overrules the breaker: a person closes it at once, open or
// half-open, without verification. The overrule is logged with who did it.
func (b *Service) Reset(ctx context.Context, eventID, who string) (Status, error) {
	return b.onEvent(ctx, eventID, who, ActOverrule, func(ctx context.Context, rec Record, ev Event, now time.Time) (Event, string, error) {
		ev.ResolvedAt, ev.ResolvedBy, ev.Resolution = now, who, Overruled
		return ev, "overruled by " + who, b.deps.Store.UpdateEvent(ctx, ev)
	})
}

// eventChange updates the event of a transition and gives the audit
// row's why.
type eventChange func(ctx context.Context, rec Record, ev Event, now time.Time) (Event, string, error)

// onEvent applies a person's action to the event that holds an agent's
// breaker; an event that is not the current one is an illegal transition.
func (b *Service) onEvent(ctx context.Context, eventID, who string, act Action, change eventChange) (Status, error) {
	who, err := actor(who)
	if err != nil {
		return Status{}, err
	}
	var st Status
	err = b.write(ctx, func(ctx context.Context) (string, error) {
		ev, rec, err := b.liveEvent(ctx, eventID, act)
		if err != nil {
			return "", err
		}
		st, err = b.transition(ctx, rec, ev, act, who, "", change)
		return changed(rec.Agent, rec.State, st.State), err
	})
	if err != nil {
		return Status{}, fmt.Errorf("%s breaker event %s: %w", act, eventID, err)
	}
	return st, nil
}

// actor is who acts on a breaker, trimmed; it is required.
func actor(who string) (string, error) {
	who = strings.TrimSpace(who)
	if who == "" {
		return "", core.Invalid("who", "is required")
	}
	return who, nil
}

// liveEvent reads breaker event eventID and its agent's breaker, which act
// needs to be still on it: an event whose breaker closed or moved on to
// another event is over.
func (b *Service) liveEvent(ctx context.Context, eventID string, act Action) (Event, Record, error) {
	ev, err := b.deps.Store.Event(ctx, eventID)
	if err != nil {
		return Event{}, Record{}, err
	}
	rec, err := b.deps.Store.Get(ctx, ev.Agent)
	if err != nil {
		return Event{}, Record{}, err
	}
	if rec.State == Closed || rec.EventID != eventID {
		return Event{}, Record{}, fmt.Errorf("breaker of %s is %s and event %s is over, cannot %s: %w",
			rec.Agent, rec.State, eventID, verbs[act], core.ErrIllegalTransition)
	}
	return ev, rec, nil
}

// Verify is the supervisor's verification pass over a half-open breaker:
// ok closes it; not ok opens it again with a new event linked to the
// trial's, and note is then required as its reason.
func (b *Service) Verify(ctx context.Context, agent string, ok bool, note, by string) (Status, error) {
	if err := CheckAgent(agent); err != nil {
		return Status{}, err
	}
	note, by = strings.TrimSpace(note), strings.TrimSpace(by)
	if by == "" {
		by = DefaultSupervisor
	}
	switch {
	case !ok && note == "":
		return Status{}, core.Invalid("note", "is required when ok is false: say what is still wrong")
	case utf8.RuneCountInString(note) > MaxReason:
		return Status{}, core.Invalid("note", "is longer than %d characters", MaxReason)
	case utf8.RuneCountInString(by) > MaxActor:
		return Status{}, core.Invalid("by", "is longer than %d characters", MaxActor)
	}
	var st Status
	err := b.write(ctx, func(ctx context.Context) (string, error) {
		rec, err := b.deps.Store.Get(ctx, agent)
		if err != nil {
			return "", err
		}
		if rec.State != HalfOpen {
			_, err := nextState(agent, rec.State, ActVerified)
			return "", err
		}
		ev, err := b.deps.Store.Event(ctx, rec.EventID)
		if err != nil {
			return "", err
		}
		if !ok {
			st, err = b.open(ctx, rec, ActVerifyFailed, OpenInput{Severity: ev.Severity, Reason: note, By: by})
			return agent, err
		}
		st, err = b.transition(ctx, rec, ev, ActVerified, by, note, func(ctx context.Context, rec Record, ev Event, now time.Time) (Event, string, error) {
			ev.ResolvedAt, ev.ResolvedBy, ev.Resolution = now, by, Verified
			return ev, "", b.deps.Store.UpdateEvent(ctx, ev)
		})
		return agent, err
	})
	if err != nil {
		return Status{}, fmt.Errorf("verify breaker of %s: %w", agent, err)
	}
	return st, nil
}

// Sweep re-opens every half-open breaker left unverified for longer than
// the half-open timeout (never closes one), and returns how many it
// re-opened. Without a timeout it does nothing. Run it every few seconds.
func (b *Service) Sweep(ctx context.Context) (int, error) {
	if b.cfg.HalfOpenTimeout <= 0 {
		return 0, nil
	}
	recs, err := b.deps.Store.HalfOpenBefore(ctx, b.deps.Clock.Now().Add(-b.cfg.HalfOpenTimeout))
	if err != nil {
		return 0, fmt.Errorf("sweep breakers: %w", err)
	}
	n := 0
	for _, stale := range recs {
		err := b.write(ctx, func(ctx context.Context) (string, error) {
			rec, err := b.deps.Store.Get(ctx, stale.Agent)
			if err != nil || rec.Version != stale.Version {
				return "", err // moved on since the listing
			}
			ev, err := b.deps.Store.Event(ctx, rec.EventID)
			if err != nil {
				return "", err
			}
			why := fmt.Sprintf("not verified within %s", core.ShortDuration(b.cfg.HalfOpenTimeout))
			if _, err = b.transition(ctx, rec, ev, ActTimeout, Sweeper, why, nil); err != nil {
				return "", err
			}
			n++
			return rec.Agent, nil
		})
		if err != nil {
			return n, fmt.Errorf("sweep breaker of %s: %w", stale.Agent, err)
		}
	}
	return n, nil
}

// transition moves rec by act for ev's sake: it checks the machine allows
// the move, applies change to the event (when given), writes the state
// with a compare-and-swap, the audit row, and the edit and threaded reply
// on the halt notice.
func (b *Service) transition(ctx context.Context, rec Record, ev Event, act Action, actor, why string, change eventChange) (Status, error) {
	to, err := nextState(rec.Agent, rec.State, act)
	if err != nil {
		return Status{}, err
	}
	now := b.deps.Clock.Now()
	if change != nil {
		var changeWhy string
		if ev, changeWhy, err = change(ctx, rec, ev, now); err != nil {
			return Status{}, err
		}
		if why == "" {
			why = changeWhy
		}
	}
	next := rec
	next.Version++
	if to != rec.State {
		next.State, next.Since = to, now
	}
	// Every transition, even one that keeps the state, compares and bumps
	// the version, so that it cannot interleave with another.
	if err := b.move(ctx, next, rec.Version); err != nil {
		return Status{}, err
	}
	seq, err := b.deps.Store.AddTransition(ctx, Transition{Agent: rec.Agent, EventID: ev.ID, Action: act,
		From: rec.State, To: to, Actor: actor, Why: why, At: now})
	if err != nil {
		return Status{}, err
	}
	if err := b.notifyTransition(ctx, seq, ev, next, act, actor, why, ""); err != nil {
		return Status{}, err
	}
	return Status{Record: next, Event: &ev}, nil
}

// open halts the agent with a new event from rec's state (closed or
// half-open). From half-open the trial's event is superseded: it is
// resolved, linked to the new one, and its notice edited and answered.
func (b *Service) open(ctx context.Context, rec Record, act Action, in OpenInput) (Status, error) {
	to, err := nextState(rec.Agent, rec.State, act)
	if err != nil {
		if rec.State == Open {
			err = fmt.Errorf("%w (event %s)", err, rec.EventID)
		}
		return Status{}, err
	}
	now := b.deps.Clock.Now()
	ev := Event{ID: newEventID(), Agent: rec.Agent, At: now, Severity: in.Severity,
		Reason: in.Reason, Evidence: in.Evidence, OpenedBy: in.By}
	var prev Event
	if rec.State == HalfOpen {
		if prev, err = b.deps.Store.Event(ctx, rec.EventID); err != nil {
			return Status{}, err
		}
		ev.PreviousID = prev.ID
		prev.ResolvedAt, prev.ResolvedBy, prev.Resolution, prev.NextID = now, in.By, Superseded, ev.ID
	}
	if err := b.deps.Store.AddEvent(ctx, ev); err != nil {
		return Status{}, err
	}
	if prev.ID != "" {
		if err := b.deps.Store.UpdateEvent(ctx, prev); err != nil {
			return Status{}, err
		}
	}
	next := Record{Agent: rec.Agent, State: to, EventID: ev.ID, Since: now, Version: rec.Version + 1}
	if err := b.move(ctx, next, rec.Version); err != nil {
		return Status{}, err
	}
	seq, err := b.deps.Store.AddTransition(ctx, Transition{Agent: rec.Agent, EventID: ev.ID, Action: act,
		From: rec.State, To: to, Actor: in.By, Why: in.Reason, At: now})
	if err != nil {
		return Status{}, err
	}
	if prev.ID != "" {
		if err := b.notifyTransition(ctx, seq, prev, next, act, in.By, in.Reason, ev.ID); err != nil {
			return Status{}, err
		}
	}
	return Status{Record: next, Event: &ev}, b.notifyHalt(ctx, ev, next)
}

// move writes the breaker's new record with a compare-and-swap. Losing
// the race to another transition is an illegal transition too: the move
// was made from a state that is no longer current.
func (b *Service) move(ctx context.Context, rec Record, version int64) error {
	err := b.deps.Store.Move(ctx, rec, version)
	if errors.Is(err, core.ErrConflict) {
		return fmt.Errorf("%w: %w", core.ErrIllegalTransition, err)
	}
	return err
}

// notifyHalt enqueues the halt notice of a new event and the three
// reactions people answer it with, and 💤 when halts are incidents.
func (b *Service) notifyHalt(ctx context.Context, ev Event, rec Record) error {
	key := ev.NoticeKey()
	notices := []core.Notice{{Key: key, RoomID: b.deps.Room, Kind: core.NoticeMessage, Mentions: b.deps.Admins,
		Body: noticeBody(ev, rec, b.deps.Admins, b.cfg.HalfOpenTimeout, openLine(ev))}}
	type reaction struct{ name, emoji string }
	reactions := []reaction{{"review", ReactReview}, {"resume", ReactResume}, {"reset", ReactKeep}}
	if b.deps.Incidents != nil {
		reactions = append(reactions, reaction{"snooze", oncall.SnoozeReaction})
	}
	for _, r := range reactions {
		notices = append(notices, core.Notice{Key: key + ":react:" + r.name, RoomID: b.deps.Room, Kind: core.NoticeReaction, Target: key, Body: r.emoji})
	}
	if err := b.trackHalt(ctx, ev, notices[0]); err != nil {
		return err
	}
	return b.enqueue(ctx, notices)
}

// notifyTransition enqueues, for the audit row seq, the edit that brings
// the event's halt notice up to date and the threaded reply that tells
// what happened. nextID is the event that superseded ev, if any.
func (b *Service) notifyTransition(ctx context.Context, seq int64, ev Event, rec Record, act Action, actor, why, nextID string) error {
	key := ev.NoticeKey()
	status, reply := transitionText(ev, rec, act, actor, why, nextID, b.cfg.HalfOpenTimeout)
	resolvedStatus, resolvedReply, err := b.resolveHalt(ctx, ev, act)
	if err != nil {
		return err
	}
	status, reply = status+resolvedStatus, reply+resolvedReply
	body, err := b.haltBody(ctx, ev, rec, status)
	if err != nil {
		return err
	}
	var mentions []string
	if act == ActTimeout {
		mentions = b.deps.Admins
	}
	return b.enqueue(ctx, []core.Notice{
		{Key: fmt.Sprintf("%s:%d:edit", key, seq), RoomID: b.deps.Room, Kind: core.NoticeEdit, Target: key, Body: body},
		{Key: fmt.Sprintf("%s:%d:reply", key, seq), RoomID: b.deps.Room, Kind: core.NoticeMessage, Target: key, Thread: true,
			Mentions: mentions, Body: reply},
	})
}

func (b *Service) enqueue(ctx context.Context, notices []core.Notice) error {
	for _, n := range notices {
		// A halt, and what becomes of it, goes before any flood.
		n.Urgent = true
		if err := b.deps.Outbox.Enqueue(ctx, n); err != nil && !errors.Is(err, core.ErrDuplicate) {
			return err
		}
	}
	return nil
}

// newEventID returns "brk_" and 8 random hex digits: short enough
// to type in `!breaker reset brk_…`.
func newEventID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "brk_" + hex.EncodeToString(b[:])
}
