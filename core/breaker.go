package core

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
)

// BreakerState is where an agent's circuit breaker stands.
type BreakerState string

const (
	// BreakerClosed is normal operation: the agent runs.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen means the agent is halted until a person acts.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen is a trial run after a person resumed the agent; the
	// supervisor's verification closes or re-opens it.
	BreakerHalfOpen BreakerState = "half-open"
)

// BreakerSeverity is the kind of drift that opened a breaker.
type BreakerSeverity string

// The severities of the seed.
const (
	BreakerSeverityIdentity       BreakerSeverity = "identity"
	BreakerSeveritySafety         BreakerSeverity = "safety"
	BreakerSeverityBoundary       BreakerSeverity = "boundary"
	BreakerSeverityInfrastructure BreakerSeverity = "infrastructure"
)

// BreakerSeverityAny matches every severity in a BreakerTrigger.
const BreakerSeverityAny BreakerSeverity = "any"

var breakerSeverities = []BreakerSeverity{BreakerSeverityIdentity, BreakerSeveritySafety, BreakerSeverityBoundary, BreakerSeverityInfrastructure}

// BreakerUrgency is how urgent a surfacing observation is.
type BreakerUrgency string

// The urgencies of surfacing observations.
const (
	BreakerUrgencyLow      BreakerUrgency = "low"
	BreakerUrgencyHigh     BreakerUrgency = "high"
	BreakerUrgencyCritical BreakerUrgency = "critical"
)

var breakerUrgencies = []BreakerUrgency{BreakerUrgencyLow, BreakerUrgencyHigh, BreakerUrgencyCritical}

// BreakerAction is what happened to a breaker in one transition; the audit
// trail records it.
type BreakerAction string

// The actions of the breaker state machine.
const (
	// BreakerActOpen halts the agent with a new event (from closed, or from
	// half-open when the trial shows drift again).
	BreakerActOpen BreakerAction = "open"
	// BreakerActReview records who is reviewing an open breaker.
	BreakerActReview BreakerAction = "review"
	// BreakerActResume starts the half-open trial.
	BreakerActResume BreakerAction = "resume"
	// BreakerActVerified closes a half-open breaker the supervisor verified.
	BreakerActVerified BreakerAction = "verified"
	// BreakerActVerifyFailed re-opens a half-open breaker with a new event.
	BreakerActVerifyFailed BreakerAction = "verify_failed"
	// BreakerActTimeout re-opens a half-open breaker left unverified too long.
	BreakerActTimeout BreakerAction = "timeout"
	// BreakerActOverrule closes a breaker at once on a person's word.
	BreakerActOverrule BreakerAction = "overrule"
)

// breakerMoves is the whole state machine: the actions each state allows
// and where they lead. Anything else is an illegal transition.
var breakerMoves = map[BreakerState]map[BreakerAction]BreakerState{
	BreakerClosed: {
		BreakerActOpen: BreakerOpen,
	},
	BreakerOpen: {
		BreakerActReview:   BreakerOpen,
		BreakerActResume:   BreakerHalfOpen,
		BreakerActOverrule: BreakerClosed,
	},
	BreakerHalfOpen: {
		BreakerActOpen:         BreakerOpen,
		BreakerActVerified:     BreakerClosed,
		BreakerActVerifyFailed: BreakerOpen,
		BreakerActTimeout:      BreakerOpen,
		BreakerActOverrule:     BreakerClosed,
	},
}

// breakerVerbs says each action the way a refusal names it.
var breakerVerbs = map[BreakerAction]string{
	BreakerActOpen:         "open it",
	BreakerActReview:       "review it",
	BreakerActResume:       "resume it",
	BreakerActVerified:     "verify it",
	BreakerActVerifyFailed: "verify it",
	BreakerActTimeout:      "time it out",
	BreakerActOverrule:     "reset it",
}

// nextBreakerState returns the state act leads to from from, or an
// ErrIllegalTransition.
func nextBreakerState(agent string, from BreakerState, act BreakerAction) (BreakerState, error) {
	to, ok := breakerMoves[from][act]
	if !ok {
		return "", fmt.Errorf("breaker of %s is %s, cannot %s: %w", agent, from, breakerVerbs[act], ErrIllegalTransition)
	}
	return to, nil
}

// BreakerResolution says how a breaker event ended.
type BreakerResolution string

// The ways an event ends.
const (
	// BreakerVerified: the supervisor's verification pass closed the breaker.
	BreakerVerified BreakerResolution = "verified"
	// BreakerOverruled: a person closed the breaker without verification.
	BreakerOverruled BreakerResolution = "overruled"
	// BreakerSuperseded: the half-open trial failed and a new event (NextID)
	// opened the breaker again.
	BreakerSuperseded BreakerResolution = "superseded"
)

// The reactions Jarvis puts on every halt notice: take the review, resume
// into a half-open trial, keep the agent halted. Closing at once (the
// overrule) is a deliberate command, `!breaker reset`, never a tap.
const (
	BreakerReactReview = "👀"
	BreakerReactResume = "▶️"
	BreakerReactKeep   = "⏹️"
)

// Limits on what the breaker takes in and lists.
const (
	MaxBreakerReason      = 2000
	MaxBreakerEvidence    = 20
	MaxBreakerEvidenceLen = 2000
	MaxBreakerActor       = 255
	MaxBreakerEvents      = 100
)

// DefaultBreakerSupervisor names the supervisor when an API call does not.
const DefaultBreakerSupervisor = "supervisor"

// BreakerSweeper is the actor the audit trail names for a half-open
// timeout.
const BreakerSweeper = "jarvis"

var breakerAgentPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// BreakerEvent is one halt of an agent: why it was opened and how it ended.
type BreakerEvent struct {
	ID       string
	Agent    string
	At       time.Time
	Severity BreakerSeverity
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
	Resolution BreakerResolution
	// NextID is the event that superseded this one.
	NextID string
}

// NoticeKey is the key of the event's halt notice; every later notice of
// the event edits it or is threaded under it.
func (e BreakerEvent) NoticeKey() string { return breakerNoticePrefix + e.ID }

const breakerNoticePrefix = "breaker:"

// BreakerRecord is an agent's breaker as stored. Version counts its
// transitions; every write compares it, so two racing transitions cannot
// both succeed.
type BreakerRecord struct {
	Agent   string
	State   BreakerState
	EventID string
	Since   time.Time
	Version int64
}

// BreakerStatus is an agent's breaker with the event that holds it open or
// half-open (nil when closed).
type BreakerStatus struct {
	BreakerRecord
	Event *BreakerEvent
}

// BreakerTransition is one row of the audit trail: who moved which breaker
// from where to where, when and why.
type BreakerTransition struct {
	Seq     int64
	Agent   string
	EventID string
	Action  BreakerAction
	From    BreakerState
	To      BreakerState
	Actor   string
	Why     string
	At      time.Time
}

// BreakerTrigger is one (urgency, severity) pair that opens a breaker by
// itself when a surfacing observation carries it.
type BreakerTrigger struct {
	Urgency BreakerUrgency `mapstructure:"urgency"`
	// Severity is a severity or "any".
	Severity BreakerSeverity `mapstructure:"severity"`
}

// BreakerConfig is the breaker section of the configuration.
type BreakerConfig struct {
	// HalfOpenTimeout, when positive, re-opens a half-open breaker that the
	// supervisor has not verified within it. Zero waits for ever.
	HalfOpenTimeout time.Duration `mapstructure:"half_open_timeout"`
	// OpenOn lists the observations that open a breaker by themselves.
	OpenOn []BreakerTrigger `mapstructure:"open_on"`
}

// DefaultBreakerConfig is the configuration when the file says nothing: no
// half-open timeout; critical observations of any severity, and high ones
// about safety, open the breaker.
func DefaultBreakerConfig() BreakerConfig {
	return BreakerConfig{OpenOn: []BreakerTrigger{
		{Urgency: BreakerUrgencyCritical, Severity: BreakerSeverityAny},
		{Urgency: BreakerUrgencyHigh, Severity: BreakerSeveritySafety},
	}}
}

// Validate checks the config.
func (c BreakerConfig) Validate() error {
	if c.HalfOpenTimeout < 0 {
		return Invalid("breaker.half_open_timeout", "must not be negative")
	}
	for i, t := range c.OpenOn {
		field := fmt.Sprintf("breaker.open_on[%d]", i)
		if err := checkBreakerUrgency(field+".urgency", t.Urgency); err != nil {
			return err
		}
		if t.Severity != BreakerSeverityAny {
			if err := checkBreakerSeverity(field+".severity", t.Severity); err != nil {
				return err
			}
		}
	}
	return nil
}

// opens reports whether an observation opens the breaker by itself.
func (c BreakerConfig) opens(u BreakerUrgency, s BreakerSeverity) bool {
	for _, t := range c.OpenOn {
		if t.Urgency == u && (t.Severity == BreakerSeverityAny || t.Severity == s) {
			return true
		}
	}
	return false
}

// BreakerOpenInput is the supervisor's request to halt an agent.
type BreakerOpenInput struct {
	Severity BreakerSeverity
	Reason   string
	Evidence []string
	// By names the supervisor; empty means DefaultBreakerSupervisor.
	By string
}

// normalize trims the input, fills By, and checks it.
func (in *BreakerOpenInput) normalize() error {
	in.Reason = strings.TrimSpace(in.Reason)
	in.By = strings.TrimSpace(in.By)
	if in.By == "" {
		in.By = DefaultBreakerSupervisor
	}
	if err := checkBreakerSeverity("severity", in.Severity); err != nil {
		return err
	}
	switch {
	case in.Reason == "":
		return Invalid("reason", "is required")
	case utf8.RuneCountInString(in.Reason) > MaxBreakerReason:
		return Invalid("reason", "is longer than %d characters", MaxBreakerReason)
	case len(in.Evidence) > MaxBreakerEvidence:
		return Invalid("evidence", "has %d items, at most %d are allowed", len(in.Evidence), MaxBreakerEvidence)
	case utf8.RuneCountInString(in.By) > MaxBreakerActor:
		return Invalid("by", "is longer than %d characters", MaxBreakerActor)
	}
	evidence := make([]string, len(in.Evidence))
	for i, e := range in.Evidence {
		e = strings.TrimSpace(e)
		switch {
		case e == "":
			return Invalid(fmt.Sprintf("evidence[%d]", i), "is empty")
		case utf8.RuneCountInString(e) > MaxBreakerEvidenceLen:
			return Invalid(fmt.Sprintf("evidence[%d]", i), "is longer than %d characters", MaxBreakerEvidenceLen)
		}
		evidence[i] = e
	}
	in.Evidence = evidence
	return nil
}

// BreakerObservation is a surfacing observation about an agent. It opens
// the agent's breaker when the configuration says its urgency and severity
// do.
type BreakerObservation struct {
	Urgency BreakerUrgency
	BreakerOpenInput
}

func checkBreakerSeverity(field string, s BreakerSeverity) error {
	for _, known := range breakerSeverities {
		if s == known {
			return nil
		}
	}
	if s == "" {
		return Invalid(field, "is required")
	}
	return Invalid(field, "must be identity, safety, boundary or infrastructure, not %q", s)
}

func checkBreakerUrgency(field string, u BreakerUrgency) error {
	for _, known := range breakerUrgencies {
		if u == known {
			return nil
		}
	}
	if u == "" {
		return Invalid(field, "is required")
	}
	return Invalid(field, "must be low, high or critical, not %q", u)
}

// CheckBreakerAgent checks an agent name as the breaker API takes it.
func CheckBreakerAgent(agent string) error {
	if !breakerAgentPattern.MatchString(agent) {
		return Invalid("agent", "must be 1 to 64 letters, digits, '.', '_' or '-', not %q", agent)
	}
	return nil
}

// BreakerStore keeps breakers, their events and the audit trail.
type BreakerStore interface {
	// Get returns an agent's breaker; an agent never opened is closed at
	// version 0.
	Get(ctx context.Context, agent string) (BreakerRecord, error)
	// List returns every breaker ever opened, by agent name.
	List(ctx context.Context) ([]BreakerRecord, error)
	// HalfOpenBefore returns the breakers half-open since t or earlier.
	HalfOpenBefore(ctx context.Context, t time.Time) ([]BreakerRecord, error)
	// Move writes rec if the stored version is still version (0 when there
	// is no row yet); otherwise it returns ErrConflict. The stored version
	// becomes version+1.
	Move(ctx context.Context, rec BreakerRecord, version int64) error
	// AddEvent writes a new event.
	AddEvent(ctx context.Context, e BreakerEvent) error
	// UpdateEvent writes an event's review and resolution fields.
	UpdateEvent(ctx context.Context, e BreakerEvent) error
	// Event returns an event, or ErrNotFound.
	Event(ctx context.Context, id string) (BreakerEvent, error)
	// Events returns an agent's latest events, newest first.
	Events(ctx context.Context, agent string, limit int) ([]BreakerEvent, error)
	// AddTransition appends to the audit trail and returns the row's seq.
	AddTransition(ctx context.Context, t BreakerTransition) (int64, error)
	// Transitions returns the audit trail of an event, oldest first.
	Transitions(ctx context.Context, eventID string) ([]BreakerTransition, error)
}

// Breakers is the circuit breaker service: one Closed / Open / Half-Open
// state machine per agent. Every transition is written with its audit row
// and its notices in one transaction.
type Breakers struct {
	// Room is the dedicated room halt notices go to.
	Room string
	// Admins are mentioned in every halt notice.
	Admins []string
	// Fence, when set, runs inside every write transaction before anything
	// is written; an error aborts the write (the workspace lease).
	Fence func(ctx context.Context) error
	// OnChange, when set, hears the agent whose breaker changed state, after
	// the change is committed (to re-evaluate breaker.state tripwires).
	OnChange func(agent string)

	cfg    BreakerConfig
	store  BreakerStore
	tx     Transactor
	outbox Outbox
	clock  Clock
}

// NewBreakers returns the breaker service. cfg must have passed Validate.
func NewBreakers(cfg BreakerConfig, store BreakerStore, tx Transactor, outbox Outbox, clock Clock) *Breakers {
	return &Breakers{cfg: cfg, store: store, tx: tx, outbox: outbox, clock: clock}
}

// write runs fn in a transaction behind the fence. fn returns the agent
// whose breaker changed state, if any, and OnChange hears of it after the
// commit.
func (b *Breakers) write(ctx context.Context, fn func(ctx context.Context) (changed string, err error)) error {
	var changed string
	err := b.tx.InTx(ctx, func(ctx context.Context) error {
		if b.Fence != nil {
			if err := b.Fence(ctx); err != nil {
				return err
			}
		}
		var err error
		changed, err = fn(ctx)
		return err
	})
	if err == nil && changed != "" && b.OnChange != nil {
		b.OnChange(changed)
	}
	return err
}

// breakerChanged returns agent when the state moved, for write.
func breakerChanged(agent string, from, to BreakerState) string {
	if from == to {
		return ""
	}
	return agent
}

// Status returns an agent's breaker; an agent never halted is closed.
func (b *Breakers) Status(ctx context.Context, agent string) (BreakerStatus, error) {
	if err := CheckBreakerAgent(agent); err != nil {
		return BreakerStatus{}, err
	}
	rec, err := b.store.Get(ctx, agent)
	if err != nil {
		return BreakerStatus{}, fmt.Errorf("breaker of %s: %w", agent, err)
	}
	return b.status(ctx, rec)
}

// StatusAll returns the breaker of every agent ever halted, by name.
func (b *Breakers) StatusAll(ctx context.Context) ([]BreakerStatus, error) {
	recs, err := b.store.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("list breakers: %w", err)
	}
	out := make([]BreakerStatus, 0, len(recs))
	for _, rec := range recs {
		st, err := b.status(ctx, rec)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

func (b *Breakers) status(ctx context.Context, rec BreakerRecord) (BreakerStatus, error) {
	st := BreakerStatus{BreakerRecord: rec}
	if rec.State == BreakerClosed {
		return st, nil
	}
	ev, err := b.store.Event(ctx, rec.EventID)
	if err != nil {
		return st, fmt.Errorf("breaker of %s: event %s: %w", rec.Agent, rec.EventID, err)
	}
	st.Event = &ev
	return st, nil
}

// ResolveState is the resolver of the breaker.state tripwire source: the
// state of an agent's breaker (closed, open, half-open).
func (b *Breakers) ResolveState(ctx context.Context, agent string) (string, error) {
	st, err := b.Status(ctx, agent)
	return string(st.State), err
}

// Events returns an agent's latest n events, newest first; n is clamped to
// 1..MaxBreakerEvents.
func (b *Breakers) Events(ctx context.Context, agent string, n int) ([]BreakerEvent, error) {
	if err := CheckBreakerAgent(agent); err != nil {
		return nil, err
	}
	n = max(1, min(n, MaxBreakerEvents))
	evs, err := b.store.Events(ctx, agent, n)
	if err != nil {
		return nil, fmt.Errorf("breaker events of %s: %w", agent, err)
	}
	return evs, nil
}

// Event returns one event.
func (b *Breakers) Event(ctx context.Context, id string) (BreakerEvent, error) {
	ev, err := b.store.Event(ctx, id)
	if err != nil {
		return ev, fmt.Errorf("breaker event %s: %w", id, err)
	}
	return ev, nil
}

// EventByNoticeKey returns the event whose halt notice has the given key,
// so that a reaction on the notice can be mapped to its event.
func (b *Breakers) EventByNoticeKey(ctx context.Context, key string) (BreakerEvent, error) {
	id, ok := strings.CutPrefix(key, breakerNoticePrefix)
	if !ok || id == "" || strings.Contains(id, ":") {
		return BreakerEvent{}, fmt.Errorf("notice %q is not a halt notice: %w", key, ErrNotFound)
	}
	return b.Event(ctx, id)
}

// History returns the audit trail of an event, oldest first.
func (b *Breakers) History(ctx context.Context, eventID string) ([]BreakerTransition, error) {
	ts, err := b.store.Transitions(ctx, eventID)
	if err != nil {
		return nil, fmt.Errorf("history of breaker event %s: %w", eventID, err)
	}
	return ts, nil
}

// Open halts an agent on the supervisor's word: a new event, the halt
// notice and its reactions. A breaker already open is an illegal
// transition; a half-open one re-opens, superseding the trial's event.
func (b *Breakers) Open(ctx context.Context, agent string, in BreakerOpenInput) (BreakerEvent, error) {
	if err := CheckBreakerAgent(agent); err != nil {
		return BreakerEvent{}, err
	}
	if err := in.normalize(); err != nil {
		return BreakerEvent{}, err
	}
	var st BreakerStatus
	err := b.write(ctx, func(ctx context.Context) (string, error) {
		rec, err := b.store.Get(ctx, agent)
		if err != nil {
			return "", err
		}
		st, err = b.open(ctx, rec, BreakerActOpen, in)
		return agent, err
	})
	if err != nil {
		return BreakerEvent{}, fmt.Errorf("open breaker of %s: %w", agent, err)
	}
	return *st.Event, nil
}

// Observe takes a surfacing observation. When the configuration says it
// opens the breaker and the breaker is closed or half-open, it opens it as
// Open does and returns the new event with opened true; otherwise it
// changes nothing.
func (b *Breakers) Observe(ctx context.Context, agent string, obs BreakerObservation) (ev BreakerEvent, opened bool, err error) {
	if err := CheckBreakerAgent(agent); err != nil {
		return ev, false, err
	}
	if err := checkBreakerUrgency("urgency", obs.Urgency); err != nil {
		return ev, false, err
	}
	in := obs.BreakerOpenInput
	if err := in.normalize(); err != nil {
		return ev, false, err
	}
	if !b.cfg.opens(obs.Urgency, in.Severity) {
		return ev, false, nil
	}
	err = b.write(ctx, func(ctx context.Context) (string, error) {
		rec, err := b.store.Get(ctx, agent)
		if err != nil || rec.State == BreakerOpen {
			return "", err
		}
		st, err := b.open(ctx, rec, BreakerActOpen, in)
		if err != nil {
			return "", err
		}
		ev, opened = *st.Event, true
		return agent, nil
	})
	if err != nil {
		return BreakerEvent{}, false, fmt.Errorf("observe %s: %w", agent, err)
	}
	return ev, opened, nil
}

// Review records that a person is reviewing the open event, without
// changing the state.
func (b *Breakers) Review(ctx context.Context, eventID, who string) (BreakerStatus, error) {
	return b.onEvent(ctx, eventID, who, BreakerActReview, func(ctx context.Context, rec BreakerRecord, ev BreakerEvent, now time.Time) (BreakerEvent, string, error) {
		ev.ReviewedBy, ev.ReviewedAt = who, now
		return ev, "reviewing", b.store.UpdateEvent(ctx, ev)
	})
}

// Resume starts the half-open trial of the open event. Of several
// concurrent resumes exactly one succeeds; the others find the breaker
// half-open and get ErrIllegalTransition.
func (b *Breakers) Resume(ctx context.Context, eventID, who string) (BreakerStatus, error) {
	return b.onEvent(ctx, eventID, who, BreakerActResume, nil)
}

// Reset overrules the breaker: a person closes it at once, open or
// half-open, without verification. The overrule is logged with who did it.
func (b *Breakers) Reset(ctx context.Context, eventID, who string) (BreakerStatus, error) {
	return b.onEvent(ctx, eventID, who, BreakerActOverrule, func(ctx context.Context, rec BreakerRecord, ev BreakerEvent, now time.Time) (BreakerEvent, string, error) {
		ev.ResolvedAt, ev.ResolvedBy, ev.Resolution = now, who, BreakerOverruled
		return ev, "overruled by " + who, b.store.UpdateEvent(ctx, ev)
	})
}

// eventChange updates the event of a transition and gives the audit
// row's why.
type eventChange func(ctx context.Context, rec BreakerRecord, ev BreakerEvent, now time.Time) (BreakerEvent, string, error)

// onEvent applies a person's action to the event that holds an agent's
// breaker; an event that is not the current one is an illegal transition.
func (b *Breakers) onEvent(ctx context.Context, eventID, who string, act BreakerAction, change eventChange) (BreakerStatus, error) {
	who = strings.TrimSpace(who)
	if who == "" {
		return BreakerStatus{}, Invalid("who", "is required")
	}
	var st BreakerStatus
	err := b.write(ctx, func(ctx context.Context) (string, error) {
		ev, err := b.store.Event(ctx, eventID)
		if err != nil {
			return "", err
		}
		rec, err := b.store.Get(ctx, ev.Agent)
		if err != nil {
			return "", err
		}
		if rec.State == BreakerClosed || rec.EventID != eventID {
			return "", fmt.Errorf("breaker of %s is %s and event %s is over, cannot %s: %w",
				rec.Agent, rec.State, eventID, breakerVerbs[act], ErrIllegalTransition)
		}
		st, err = b.transition(ctx, rec, ev, act, who, "", change)
		return breakerChanged(rec.Agent, rec.State, st.State), err
	})
	if err != nil {
		return BreakerStatus{}, fmt.Errorf("%s breaker event %s: %w", act, eventID, err)
	}
	return st, nil
}

// Verify is the supervisor's verification pass over a half-open breaker:
// ok closes it; not ok opens it again with a new event linked to the
// trial's, and note is then required as its reason.
func (b *Breakers) Verify(ctx context.Context, agent string, ok bool, note, by string) (BreakerStatus, error) {
	if err := CheckBreakerAgent(agent); err != nil {
		return BreakerStatus{}, err
	}
	note, by = strings.TrimSpace(note), strings.TrimSpace(by)
	if by == "" {
		by = DefaultBreakerSupervisor
	}
	switch {
	case !ok && note == "":
		return BreakerStatus{}, Invalid("note", "is required when ok is false: say what is still wrong")
	case utf8.RuneCountInString(note) > MaxBreakerReason:
		return BreakerStatus{}, Invalid("note", "is longer than %d characters", MaxBreakerReason)
	case utf8.RuneCountInString(by) > MaxBreakerActor:
		return BreakerStatus{}, Invalid("by", "is longer than %d characters", MaxBreakerActor)
	}
	var st BreakerStatus
	err := b.write(ctx, func(ctx context.Context) (string, error) {
		rec, err := b.store.Get(ctx, agent)
		if err != nil {
			return "", err
		}
		if rec.State != BreakerHalfOpen {
			_, err := nextBreakerState(agent, rec.State, BreakerActVerified)
			return "", err
		}
		ev, err := b.store.Event(ctx, rec.EventID)
		if err != nil {
			return "", err
		}
		if !ok {
			st, err = b.open(ctx, rec, BreakerActVerifyFailed, BreakerOpenInput{Severity: ev.Severity, Reason: note, By: by})
			return agent, err
		}
		st, err = b.transition(ctx, rec, ev, BreakerActVerified, by, note, func(ctx context.Context, rec BreakerRecord, ev BreakerEvent, now time.Time) (BreakerEvent, string, error) {
			ev.ResolvedAt, ev.ResolvedBy, ev.Resolution = now, by, BreakerVerified
			return ev, "", b.store.UpdateEvent(ctx, ev)
		})
		return agent, err
	})
	if err != nil {
		return BreakerStatus{}, fmt.Errorf("verify breaker of %s: %w", agent, err)
	}
	return st, nil
}

// Sweep re-opens every half-open breaker left unverified for longer than
// the half-open timeout (never closes one), and returns how many it
// re-opened. Without a timeout it does nothing. Run it every few seconds.
func (b *Breakers) Sweep(ctx context.Context) (int, error) {
	if b.cfg.HalfOpenTimeout <= 0 {
		return 0, nil
	}
	recs, err := b.store.HalfOpenBefore(ctx, b.clock.Now().Add(-b.cfg.HalfOpenTimeout))
	if err != nil {
		return 0, fmt.Errorf("sweep breakers: %w", err)
	}
	n := 0
	for _, stale := range recs {
		err := b.write(ctx, func(ctx context.Context) (string, error) {
			rec, err := b.store.Get(ctx, stale.Agent)
			if err != nil || rec.Version != stale.Version {
				return "", err // moved on since the listing
			}
			ev, err := b.store.Event(ctx, rec.EventID)
			if err != nil {
				return "", err
			}
			why := fmt.Sprintf("not verified within %s", breakerDuration(b.cfg.HalfOpenTimeout))
			if _, err = b.transition(ctx, rec, ev, BreakerActTimeout, BreakerSweeper, why, nil); err != nil {
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
func (b *Breakers) transition(ctx context.Context, rec BreakerRecord, ev BreakerEvent, act BreakerAction, actor, why string, change eventChange) (BreakerStatus, error) {
	to, err := nextBreakerState(rec.Agent, rec.State, act)
	if err != nil {
		return BreakerStatus{}, err
	}
	now := b.clock.Now()
	if change != nil {
		var changeWhy string
		if ev, changeWhy, err = change(ctx, rec, ev, now); err != nil {
			return BreakerStatus{}, err
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
		return BreakerStatus{}, err
	}
	seq, err := b.store.AddTransition(ctx, BreakerTransition{Agent: rec.Agent, EventID: ev.ID, Action: act,
		From: rec.State, To: to, Actor: actor, Why: why, At: now})
	if err != nil {
		return BreakerStatus{}, err
	}
	if err := b.notifyTransition(ctx, seq, ev, next, act, actor, why, ""); err != nil {
		return BreakerStatus{}, err
	}
	return BreakerStatus{BreakerRecord: next, Event: &ev}, nil
}

// open halts the agent with a new event from rec's state (closed or
// half-open). From half-open the trial's event is superseded: it is
// resolved, linked to the new one, and its notice edited and answered.
func (b *Breakers) open(ctx context.Context, rec BreakerRecord, act BreakerAction, in BreakerOpenInput) (BreakerStatus, error) {
	to, err := nextBreakerState(rec.Agent, rec.State, act)
	if err != nil {
		if rec.State == BreakerOpen {
			err = fmt.Errorf("%w (event %s)", err, rec.EventID)
		}
		return BreakerStatus{}, err
	}
	now := b.clock.Now()
	ev := BreakerEvent{ID: newBreakerEventID(), Agent: rec.Agent, At: now, Severity: in.Severity,
		Reason: in.Reason, Evidence: in.Evidence, OpenedBy: in.By}
	var prev BreakerEvent
	if rec.State == BreakerHalfOpen {
		if prev, err = b.store.Event(ctx, rec.EventID); err != nil {
			return BreakerStatus{}, err
		}
		ev.PreviousID = prev.ID
		prev.ResolvedAt, prev.ResolvedBy, prev.Resolution, prev.NextID = now, in.By, BreakerSuperseded, ev.ID
	}
	if err := b.store.AddEvent(ctx, ev); err != nil {
		return BreakerStatus{}, err
	}
	if prev.ID != "" {
		if err := b.store.UpdateEvent(ctx, prev); err != nil {
			return BreakerStatus{}, err
		}
	}
	next := BreakerRecord{Agent: rec.Agent, State: to, EventID: ev.ID, Since: now, Version: rec.Version + 1}
	if err := b.move(ctx, next, rec.Version); err != nil {
		return BreakerStatus{}, err
	}
	seq, err := b.store.AddTransition(ctx, BreakerTransition{Agent: rec.Agent, EventID: ev.ID, Action: act,
		From: rec.State, To: to, Actor: in.By, Why: in.Reason, At: now})
	if err != nil {
		return BreakerStatus{}, err
	}
	if prev.ID != "" {
		if err := b.notifyTransition(ctx, seq, prev, next, act, in.By, in.Reason, ev.ID); err != nil {
			return BreakerStatus{}, err
		}
	}
	return BreakerStatus{BreakerRecord: next, Event: &ev}, b.notifyHalt(ctx, ev, next)
}

// move writes the breaker's new record with a compare-and-swap. Losing
// the race to another transition is an illegal transition too: the move
// was made from a state that is no longer current.
func (b *Breakers) move(ctx context.Context, rec BreakerRecord, version int64) error {
	err := b.store.Move(ctx, rec, version)
	if errors.Is(err, ErrConflict) {
		return fmt.Errorf("%w: %w", ErrIllegalTransition, err)
	}
	return err
}

// notifyHalt enqueues the halt notice of a new event and the three
// reactions people answer it with.
func (b *Breakers) notifyHalt(ctx context.Context, ev BreakerEvent, rec BreakerRecord) error {
	key := ev.NoticeKey()
	notices := []Notice{{Key: key, RoomID: b.Room, Kind: NoticeMessage, Mentions: b.Admins,
		Body: breakerNoticeBody(ev, rec, b.Admins, b.cfg.HalfOpenTimeout, breakerOpenLine(ev))}}
	for _, r := range []struct{ name, emoji string }{{"review", BreakerReactReview}, {"resume", BreakerReactResume}, {"reset", BreakerReactKeep}} {
		notices = append(notices, Notice{Key: key + ":react:" + r.name, RoomID: b.Room, Kind: NoticeReaction, Target: key, Body: r.emoji})
	}
	return b.enqueue(ctx, notices)
}

// notifyTransition enqueues, for the audit row seq, the edit that brings
// the event's halt notice up to date and the threaded reply that tells
// what happened. nextID is the event that superseded ev, if any.
func (b *Breakers) notifyTransition(ctx context.Context, seq int64, ev BreakerEvent, rec BreakerRecord, act BreakerAction, actor, why, nextID string) error {
	key := ev.NoticeKey()
	status, reply := breakerTransitionText(ev, rec, act, actor, why, nextID, b.cfg.HalfOpenTimeout)
	var mentions []string
	if act == BreakerActTimeout {
		mentions = b.Admins
	}
	return b.enqueue(ctx, []Notice{
		{Key: fmt.Sprintf("%s:%d:edit", key, seq), RoomID: b.Room, Kind: NoticeEdit, Target: key,
			Body: breakerNoticeBody(ev, rec, b.Admins, b.cfg.HalfOpenTimeout, status)},
		{Key: fmt.Sprintf("%s:%d:reply", key, seq), RoomID: b.Room, Kind: NoticeMessage, Target: key, Thread: true,
			Mentions: mentions, Body: reply},
	})
}

func (b *Breakers) enqueue(ctx context.Context, notices []Notice) error {
	for _, n := range notices {
		if err := b.outbox.Enqueue(ctx, n); err != nil && !errors.Is(err, ErrDuplicate) {
			return err
		}
	}
	return nil
}

// newBreakerEventID returns "brk_" and 8 random hex digits: short enough
// to type in `!breaker reset brk_…`.
func newBreakerEventID() string {
	var b [4]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return "brk_" + hex.EncodeToString(b[:])
}
