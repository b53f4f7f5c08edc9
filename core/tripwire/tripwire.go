// Package tripwire is the personal tripwires protocol: the standing "watch
// this and tell me when it changes" rules a person arms with a rationale,
// their conditions, the evaluator, templates and personal tokens.
package tripwire

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base32"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// Status is where a tripwire stands.
type Status string

// Tripwire statuses. Armed and tripped tripwires are evaluated; disabled
// and quarantined ones are not.
const (
	Armed       Status = "armed"
	Tripped     Status = "tripped"
	Disabled    Status = "disabled"
	Quarantined Status = "quarantined"
)

// Active reports whether the evaluator looks at tripwires in this status.
func (s Status) Active() bool { return s == Armed || s == Tripped }

// SelfScope is the scope of a single-operator instance; every other scope
// is a citizen's Matrix user ID.
const SelfScope = "self"

// Tripwire limits and defaults.
const (
	MaxLabelLength         = 120
	MaxRationaleLength     = 2000
	DefaultCooldownSeconds = 3600
	MaxCooldownSeconds     = 30 * 24 * 3600
	// TripHistoryCap is how many trip events a tripwire keeps; the oldest go.
	TripHistoryCap = 100
	// TripJournalCap is how many trip events a scope's journal keeps.
	TripJournalCap = 200
	// PushQueueCap is how many unread push events a scope keeps; overflow
	// drops the oldest.
	PushQueueCap = 50
	// CreationLimit is how many tripwires one citizen may create within
	// CreationWindow.
	CreationLimit  = 50
	CreationWindow = time.Hour
	// MaxSkipLog is the most tripwires.skip_log.per_tripwire may say.
	MaxSkipLog = 10000
)

// Action says what a firing does besides recording the trip in the
// tripwire's history: add it to the scope's journal, and push it to the
// citizen, even in their quiet hours when urgent. The default is journal
// only.
type Action struct {
	Journal bool `json:"journal"`
	Push    bool `json:"push"`
	Urgent  bool `json:"urgent"`
}

// DefaultAction is a quiet record: journal, no push.
var DefaultAction = Action{Journal: true}

// UnmarshalJSON reads an action; a field left out takes its default
// (journal on, push off).
func (a *Action) UnmarshalJSON(data []byte) error {
	var raw struct {
		Journal *bool `json:"journal"`
		Push    *bool `json:"push"`
		Urgent  bool  `json:"urgent"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	*a = DefaultAction
	a.Urgent = raw.Urgent
	if raw.Journal != nil {
		a.Journal = *raw.Journal
	}
	if raw.Push != nil {
		a.Push = *raw.Push
	}
	return nil
}

// Definition is a standing observation rule: watch a source, test
// a condition, and record (and optionally push) a trip when it matches.
type Definition struct {
	// ID is "tw_" + creation time + random part; unguessable, never reused.
	ID        string `json:"id"`
	Label     string `json:"label"`
	Rationale string `json:"rationale"`
	// SourceTrust is where the rationale came from: external when any of
	// it was written through a bridge or came from an outside payload.
	SourceTrust     core.Trust     `json:"source_trust"`
	Source          core.SourceRef `json:"source"`
	Condition       Condition      `json:"condition"`
	Action          Action         `json:"action"`
	CooldownSeconds int            `json:"cooldown_seconds"`
	Status          Status         `json:"status"`
	CreatedAt       time.Time      `json:"created_at"`
	UpdatedAt       time.Time      `json:"updated_at"`
	LastTrippedAt   *time.Time     `json:"last_tripped_at"`
	LastResetAt     *time.Time     `json:"last_reset_at"`
	// QuarantineReason says why a quarantined tripwire was stopped.
	QuarantineReason string `json:"quarantine_reason,omitempty"`
	// LastError says why the last pass could not read the tripwire's
	// sources; empty when it could. Source errors are never fires, so this
	// is how a quiet tripwire shows that something is wrong.
	LastError string `json:"last_error,omitempty"`
}

// validateSettings checks what a person may edit after arming.
func (d Definition) validateSettings() error {
	switch {
	case d.Label == "":
		return core.Invalid("label", "is required")
	case utf8.RuneCountInString(d.Label) > MaxLabelLength:
		return core.Invalid("label", "is longer than %d characters", MaxLabelLength)
	case strings.IndexFunc(d.Label, unicode.IsControl) >= 0:
		return core.Invalid("label", "must be one line")
	case d.Rationale == "":
		return core.Invalid("rationale", "is required: say why this tripwire exists")
	case utf8.RuneCountInString(d.Rationale) > MaxRationaleLength:
		return core.Invalid("rationale", "is longer than %d characters", MaxRationaleLength)
	case !d.Action.Journal && !d.Action.Push:
		return core.Invalid("action", "journal or push must be on")
	case d.Action.Urgent && !d.Action.Push:
		return core.Invalid("action", "urgent needs push: an urgent tripwire messages you even in your quiet hours")
	case d.CooldownSeconds < 0 || d.CooldownSeconds > MaxCooldownSeconds:
		return core.Invalid("cooldown_seconds", "must be between 0 and %d", MaxCooldownSeconds)
	}
	return nil
}

// Validate checks a definition against the source registry; the error
// names the field at fault.
func (d Definition) Validate(reg *core.SourceRegistry) error {
	if err := d.validateSettings(); err != nil {
		return err
	}
	if err := reg.Check("source", d.Source); err != nil {
		return err
	}
	return d.Condition.validate("condition", false, reg)
}

// Draft is what a person or agent asks to arm; left-out action and
// cooldown take their defaults.
type Draft struct {
	Label     string `json:"label"`
	Rationale string `json:"rationale"`
	// SourceTrust is where the rationale came from; native when empty.
	SourceTrust     core.Trust     `json:"source_trust,omitempty"`
	Source          core.SourceRef `json:"source"`
	Condition       Condition      `json:"condition"`
	Action          *Action        `json:"action,omitempty"`
	CooldownSeconds *int           `json:"cooldown_seconds,omitempty"`
}

// Patch changes an armed tripwire; nil fields stay as they are.
// Source and condition cannot change: arm a new tripwire instead, so that
// history always describes one rule.
type Patch struct {
	Label     *string `json:"label,omitempty"`
	Rationale *string `json:"rationale,omitempty"`
	// RationaleTrust is where a new rationale came from (native when
	// empty); the tripwire's SourceTrust becomes external once any of its
	// rationales was.
	RationaleTrust  core.Trust `json:"rationale_trust,omitempty"`
	Action          *Action    `json:"action,omitempty"`
	CooldownSeconds *int       `json:"cooldown_seconds,omitempty"`
	// Status may be set to armed (enable, or release from quarantine) or
	// disabled.
	Status *Status `json:"status,omitempty"`
}

// Sources are the sources a tripwire reads, each once: its own and those
// its sub-conditions name.
func (d Definition) Sources() []core.SourceRef {
	out := []core.SourceRef{d.Source}
	for _, c := range d.Condition.Conditions {
		if c.Source != nil && !slices.Contains(out, *c.Source) {
			out = append(out, *c.Source)
		}
	}
	return out
}

// Record is a definition with its scope and the state the
// evaluator keeps about it.
type Record struct {
	Definition
	Scope string
	// TripSeq counts the tripwire's firings; trip notices are keyed by it.
	TripSeq int64
	// TripPushed is true when the latest firing was pushed, so its reset
	// replies in that notice's thread.
	TripPushed bool
	// LastObserved is the JSON array of the last value of each condition
	// leaf, kept for changed; empty when nothing was observed.
	LastObserved string
	// ErrorStreak counts consecutive passes whose sources failed.
	ErrorStreak int
	// FlapSince is when flapping started to count (the last release).
	FlapSince       time.Time
	QuarantineCount int
	// SnoozedUntil is when its owner's 💤 on a trip push ends: until
	// then its trips are journaled, not pushed. Zero when not snoozed.
	SnoozedUntil time.Time
}

// rearm puts a disabled or quarantined tripwire back to work with a clean
// slate: no error streak, no flapping count, no last observation (so a
// changed condition does not fire on what happened while it slept).
func (r *Record) rearm(now time.Time) {
	r.Status = Armed
	r.ErrorStreak, r.LastError = 0, ""
	r.QuarantineReason = ""
	r.LastObserved = ""
	r.FlapSince = now
}

// TripEvent is the immutable record of one firing.
type TripEvent struct {
	TripwireID string `json:"tripwire_id"`
	// Trip is the firing's number for this tripwire (1, 2, …).
	Trip            int64          `json:"trip"`
	Label           string         `json:"label"`
	Timestamp       time.Time      `json:"timestamp"`
	ObservedValue   any            `json:"observed_value"`
	ObservedContext map[string]any `json:"observed_context"`
	Summary         string         `json:"summary"`
}

// JournalEntry is a trip event in a scope's journal.
type JournalEntry struct {
	Seq int64 `json:"seq"`
	TripEvent
	// Unread is true when the citizen had not looked at the journal since.
	Unread bool `json:"unread"`
}

// JournalQuery selects journal entries.
type JournalQuery struct {
	// Limit caps the entries returned (default and maximum TripJournalCap).
	Limit int
	// UnreadOnly returns only what was noted since the citizen last looked,
	// oldest first; otherwise the latest entries are returned, oldest first.
	UnreadOnly bool
	// MarkRead moves the read cursor past the entries returned.
	MarkRead bool
}

// JournalPage is a slice of the journal and how much of it is unread.
type JournalPage struct {
	Entries []JournalEntry `json:"entries"`
	// Unread counts the entries after the read cursor, before this look.
	Unread int `json:"unread"`
	// Cursor is the read cursor after this look.
	Cursor int64 `json:"cursor"`
}

// Store keeps tripwires, their trips and the evaluator's state.
// Every read and write a citizen causes is scoped.
type Store interface {
	// InsertTripwire writes a new tripwire.
	InsertTripwire(ctx context.Context, rec Record) error
	// MoveScope gives every tripwire of scope from, with its trips in
	// history, journal and push queue, to scope to, under a new revision
	// (so the evaluator takes it in, as any write), and says how many of
	// them were not deleted.
	MoveScope(ctx context.Context, from, to string) (int, error)
	// Tripwire returns one of scope's tripwires; another scope's is ErrNotFound.
	Tripwire(ctx context.Context, scope, id string) (Record, error)
	// ListTripwires lists scope's tripwires, oldest first.
	ListTripwires(ctx context.Context, scope string) ([]Record, error)
	// SaveTripwire writes back a tripwire a person changed.
	SaveTripwire(ctx context.Context, rec Record) error
	// DeleteTripwire deletes one of scope's tripwires; its trips stay.
	DeleteTripwire(ctx context.Context, scope, id string, at time.Time) error
	// CountTripwires counts scope's tripwires that are not deleted.
	CountTripwires(ctx context.Context, scope string) (int, error)
	// CountCreations counts the tripwires scope created since the given
	// time, deleted ones included.
	CountCreations(ctx context.Context, scope string, since time.Time) (int, error)
	// RecordCreation notes a creation and forgets scope's creations older
	// than at minus window.
	RecordCreation(ctx context.Context, scope string, at time.Time, window time.Duration) error
	// History returns up to limit of the latest trips of one of scope's
	// tripwires (deleted or not), oldest first.
	History(ctx context.Context, scope, id string, limit int) ([]TripEvent, error)
	// JournalAfter returns up to limit journal entries after seq, oldest first.
	JournalAfter(ctx context.Context, scope string, seq int64, limit int) ([]JournalEntry, error)
	// LatestJournal returns the latest limit journal entries, oldest first.
	LatestJournal(ctx context.Context, scope string, limit int) ([]JournalEntry, error)
	// CountJournalAfter counts the journal entries after seq.
	CountJournalAfter(ctx context.Context, scope string, seq int64) (int, error)
	// JournalCursor returns the seq the citizen has read up to (0 at first).
	JournalCursor(ctx context.Context, scope string) (int64, error)
	// SetJournalCursor moves the read cursor.
	SetJournalCursor(ctx context.Context, scope string, seq int64) error
	// TakePush removes and returns scope's push queue, oldest first.
	TakePush(ctx context.Context, scope string) ([]TripEvent, error)
	// SnoozeTripwire puts off the pushes of one of scope's tripwires
	// until until; another scope's is ErrNotFound.
	SnoozeTripwire(ctx context.Context, scope, id string, until time.Time) error

	// ChangedTripwires returns the evaluator's view of the tripwires
	// written after revision rev, whatever their status (deleted ones
	// included), and the latest revision. Every write to a tripwire's
	// state takes a new revision. From revision 0 it returns every
	// tripwire not deleted.
	ChangedTripwires(ctx context.Context, rev int64) ([]State, int64, error)
	// TripwireSpecs loads the source and condition of the given tripwires.
	TripwireSpecs(ctx context.Context, ids []string) ([]Spec, error)
	// TripwireRecords loads the given tripwires whole.
	TripwireRecords(ctx context.Context, ids []string) ([]Record, error)
	// RecentTrips returns the times of the given tripwires' trips since a time.
	RecentTrips(ctx context.Context, ids []string, since time.Time) (map[string][]time.Time, error)
	// ApplyTick writes the outcome of an evaluator pass, keeping history,
	// journal and push queue within their caps, and the skip log of each
	// of w.TrimSkips to its newest w.KeepSkips.
	ApplyTick(ctx context.Context, w TickWrites) error
	// SkipLog reads a tripwire's skip log: the counts since since, and up
	// to limit of the latest skips since since, oldest first.
	SkipLog(ctx context.Context, id string, since time.Time, limit int) (SkipLogRead, error)
}

// Config is the tripwires part of the configuration.
type Config struct {
	// Tick is how often the evaluator runs.
	Tick time.Duration
	// Quarantine says when a tripwire is stopped for review.
	Quarantine QuarantineConfig
	// MaxPerPerson is how many tripwires one scope may have at once
	// (armed, tripped or quarantined); arming one more is ErrRateLimited.
	MaxPerPerson int
	// Backtest bounds the work of backtests.
	Backtest BacktestConfig
	// FetchBudget bounds what one person's network sources take of a pass.
	FetchBudget FetchBudget
	// SkipLog bounds the log of skipped evaluations.
	SkipLog SkipLogConfig
}

// BacktestConfig bounds backtests: how much history one reads, and how
// many run at once.
type BacktestConfig struct {
	// MaxReadings is how many points of each source's history one reads,
	// the newest.
	MaxReadings int
	// Concurrent is how many run at once in all, ConcurrentPerPerson how
	// many for one scope; one more is ErrRateLimited.
	Concurrent          int
	ConcurrentPerPerson int
}

// FetchBudget bounds the network sources (url-fetch, rss, the snapshot)
// of one person in one evaluator pass: at most Workers fetched at once,
// and those not read within Time are source errors of that pass. The
// evaluator fetches them outside its lock, so that sources of Jarvis's own
// state never wait for them.
type FetchBudget struct {
	Time    time.Duration
	Workers int
}

// QuarantineConfig sets when a tripwire is quarantined: it flapped (more
// than FlapCycles fire/reset cycles within FlapWindow), or its sources
// failed SourceErrors passes in a row.
type QuarantineConfig struct {
	FlapCycles   int
	FlapWindow   time.Duration
	SourceErrors int
}

// Validate checks the config.
func (c Config) Validate() error {
	switch q := c.Quarantine; {
	case c.Tick < time.Second:
		return core.Invalid("tripwires.tick", "must be at least 1s")
	case q.FlapCycles < 1 || q.FlapCycles >= TripHistoryCap:
		return core.Invalid("tripwires.quarantine.flap_cycles", "must be between 1 and %d", TripHistoryCap-1)
	case q.FlapWindow < time.Minute:
		return core.Invalid("tripwires.quarantine.flap_window", "must be at least 1m")
	case q.SourceErrors < 1:
		return core.Invalid("tripwires.quarantine.source_errors", "must be at least 1")
	case c.MaxPerPerson < 1:
		return core.Invalid("tripwires.max_per_person", "must be at least 1")
	case c.Backtest.MaxReadings < 1:
		return core.Invalid("tripwires.backtest.max_readings", "must be at least 1")
	case c.Backtest.Concurrent < 1:
		return core.Invalid("tripwires.backtest.concurrent", "must be at least 1")
	case c.Backtest.ConcurrentPerPerson < 1 || c.Backtest.ConcurrentPerPerson > c.Backtest.Concurrent:
		return core.Invalid("tripwires.backtest.concurrent_per_person", "must be between 1 and tripwires.backtest.concurrent")
	case c.FetchBudget.Time < time.Second:
		return core.Invalid("tripwires.fetch_budget.time", "must be at least 1s")
	case c.FetchBudget.Workers < 1:
		return core.Invalid("tripwires.fetch_budget.workers", "must be at least 1")
	case c.SkipLog.PerTripwire < 1 || c.SkipLog.PerTripwire > MaxSkipLog:
		return core.Invalid("tripwires.skip_log.per_tripwire", "must be between 1 and %d", MaxSkipLog)
	}
	return nil
}

// Deps are what the tripwire service works with.
type Deps struct {
	Store   Store
	Tokens  TokenStore
	Tx      core.Transactor
	Outbox  core.Outbox
	Sources *core.SourceRegistry
	Clock   core.Clock
	// History keeps what the evaluator reads, for backtests; nil keeps
	// nothing.
	History history.Store
	// Room is the dedicated room; notices of the "self" scope go there.
	Room string
	// Quiet holds the trip pushes of people in their quiet hours; nil
	// holds none.
	Quiet Quiet
	// Incidents, when set, keeps the trips of shared tripwires, pushed
	// to the room, as on-call incidents.
	Incidents Incidents
	// Chat, when set, says when a person waits for Jarvis's answer: a
	// pass steps aside for it before it reads the sources, while it
	// evaluates and before its transaction, for at most ChatPause in all.
	Chat      *core.ChatFirst
	ChatPause time.Duration
	// Silences holds the trip pushes a maintenance window silences; nil
	// holds none.
	Silences Silences
}

// Incidents are the on-call incidents (core/oncall) the trips of shared
// tripwires are.
type Incidents interface {
	// Raise posts n as the alert of incident id, about subject.
	Raise(ctx context.Context, id, kind, subject string, n core.Notice) error
	// Resolve closes incident id, saying said in the alert's thread;
	// core.ErrNotFound when no incident has the ID.
	Resolve(ctx context.Context, id, said string) error
}

// Silences are the maintenance windows (`!silence`) that hold trips.
type Silences interface {
	// Silencing reads the silences that hold now, once per evaluator
	// pass, in ctx's transaction; nil when none does.
	Silencing(ctx context.Context) (Silencing, error)
}

// Silencing is what the silences that held at the start of a pass hold,
// in ctx's transaction.
type Silencing interface {
	// HoldTrip keeps a trip of one of scope's tripwires, which reads
	// sources, from being pushed when a silence holds one of them, and
	// reports whether it did.
	HoldTrip(ctx context.Context, scope string, sources []core.SourceRef, label string) (bool, error)
	// Cleared ends the silences held until a tripwire of scope reading
	// sources resets.
	Cleared(ctx context.Context, scope string, sources []core.SourceRef) error
}

// Quiet holds a person's trip pushes, urgent ones aside, during their
// quiet hours and gathers their journal-only trips for a daily digest, in
// ctx's transaction. An evaluator pass hands it all its trips at once.
type Quiet interface {
	// Keep takes the trips of one pass, none of them urgent: a push is
	// kept for its owner's digest instead of pushed when now is in their
	// quiet hours, a trip that is journaled and not pushed is kept for
	// their daily digest when they asked for one. It reports, in the
	// order of trips, which pushes it held.
	Keep(ctx context.Context, trips []Trip, now time.Time) ([]bool, error)
}

// Service is the personal tripwire engine: citizens arm standing
// observation rules, the evaluator tests them, and trips are journaled and
// optionally pushed. Every method takes the citizen's scope; one citizen
// never sees, changes or hears of another's tripwires.
type Service struct {
	cfg  Config
	deps Deps

	evalMu sync.Mutex
	view   *evalView // guarded by evalMu

	backtests *backtestSlots
}

// NewService returns the service.
func NewService(cfg Config, deps Deps) *Service {
	return &Service{cfg: cfg, deps: deps, view: newEvalView(),
		backtests: &backtestSlots{cfg: cfg.Backtest, byScope: map[string]int{}}}
}

// Sources returns the source registry (the chat parser matches aliases).
func (s *Service) Sources() *core.SourceRegistry { return s.deps.Sources }

// CheckScope checks that a scope is "self", a Matrix user ID, or a
// console user (core.ConsolePrefix + name), whose pushes go to their
// console.
func CheckScope(scope string) error {
	local, server, ok := strings.Cut(strings.TrimPrefix(scope, "@"), ":")
	switch {
	case scope == SelfScope:
		return nil
	case strings.HasPrefix(scope, core.ConsolePrefix) && len(scope) > len(core.ConsolePrefix) && len(scope) <= 255 &&
		strings.IndexFunc(scope, unicode.IsSpace) < 0:
		return nil
	case !strings.HasPrefix(scope, "@") || !ok || local == "" || server == "" || len(scope) > 255 ||
		strings.IndexFunc(scope, unicode.IsSpace) >= 0:
		return core.Invalid("scope", "must be %q or a Matrix user ID like @alice:example.org", SelfScope)
	}
	return nil
}

// Arm creates and arms a tripwire in scope. More than CreationLimit
// creations within CreationWindow, or more than the configured
// MaxPerPerson tripwires at once, is ErrRateLimited, and creates nothing.
func (s *Service) Arm(ctx context.Context, scope string, d Draft) (Definition, error) {
	if err := CheckScope(scope); err != nil {
		return Definition{}, err
	}
	now := msTime(s.deps.Clock.Now())
	def, err := s.define(d, now)
	if err != nil {
		return Definition{}, err
	}
	rec := Record{Scope: scope, Definition: def}
	err = s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		n, err := s.deps.Store.CountCreations(ctx, scope, now.Add(-CreationWindow))
		if err != nil {
			return err
		}
		if n >= CreationLimit {
			return core.Refuse(core.ErrRateLimited, "you armed %d tripwires in the last hour, the most I take in an hour", CreationLimit)
		}
		if n, err = s.deps.Store.CountTripwires(ctx, scope); err != nil {
			return err
		}
		if n >= s.cfg.MaxPerPerson {
			return core.Refuse(core.ErrRateLimited, "you have %d tripwires, the most one person may have (tripwires.max_per_person); delete one to arm another", n)
		}
		if err := s.deps.Store.InsertTripwire(ctx, rec); err != nil {
			return err
		}
		return s.deps.Store.RecordCreation(ctx, scope, now, CreationWindow)
	})
	if err != nil {
		return Definition{}, fmt.Errorf("arm tripwire %q: %w", rec.Label, err)
	}
	return rec.Definition, nil
}

// define makes the armed tripwire a draft describes, with the defaults
// for what it leaves out, and validates it.
func (s *Service) define(d Draft, now time.Time) (Definition, error) {
	def := Definition{
		ID:              newID(now),
		Label:           strings.TrimSpace(d.Label),
		Rationale:       strings.TrimSpace(d.Rationale),
		SourceTrust:     cmp.Or(d.SourceTrust, core.TrustNative),
		Source:          core.SourceRef{Kind: strings.TrimSpace(d.Source.Kind), Param: strings.TrimSpace(d.Source.Param)},
		Condition:       d.Condition,
		Action:          DefaultAction,
		CooldownSeconds: DefaultCooldownSeconds,
		Status:          Armed,
		CreatedAt:       now,
		UpdatedAt:       now,
	}
	if d.Action != nil {
		def.Action = *d.Action
	}
	if d.CooldownSeconds != nil {
		def.CooldownSeconds = *d.CooldownSeconds
	}
	if err := def.Validate(s.deps.Sources); err != nil {
		return Definition{}, err
	}
	if _, err := compileCondition(def.Source, def.Condition); err != nil {
		return Definition{}, core.Invalid("condition", "%v", err)
	}
	return def, nil
}

// BacktestDraft says what the tripwire a draft describes would have done
// over the last span, arming nothing.
func (s *Service) BacktestDraft(ctx context.Context, scope string, d Draft, span time.Duration) (Backtest, error) {
	if err := CheckScope(scope); err != nil {
		return Backtest{}, err
	}
	def, err := s.define(d, msTime(s.deps.Clock.Now()))
	if err != nil {
		return Backtest{}, err
	}
	return s.Backtest(ctx, scope, def, span)
}

// Get returns one of scope's tripwires.
func (s *Service) Get(ctx context.Context, scope, id string) (Definition, error) {
	if err := CheckScope(scope); err != nil {
		return Definition{}, err
	}
	rec, err := s.deps.Store.Tripwire(ctx, scope, id)
	if err != nil {
		return Definition{}, fmt.Errorf("get tripwire %q: %w", id, err)
	}
	return rec.Definition, nil
}

// List returns scope's tripwires, oldest first.
func (s *Service) List(ctx context.Context, scope string) ([]Definition, error) {
	if err := CheckScope(scope); err != nil {
		return nil, err
	}
	recs, err := s.deps.Store.ListTripwires(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("list tripwires: %w", err)
	}
	defs := make([]Definition, len(recs))
	for i, r := range recs {
		defs[i] = r.Definition
	}
	return defs, nil
}

// Update changes one of scope's tripwires.
func (s *Service) Update(ctx context.Context, scope, id string, p Patch) (Definition, error) {
	if err := CheckScope(scope); err != nil {
		return Definition{}, err
	}
	var out Definition
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		rec, err := s.deps.Store.Tripwire(ctx, scope, id)
		if err != nil {
			return err
		}
		now := msTime(s.deps.Clock.Now())
		if p.Label != nil {
			rec.Label = strings.TrimSpace(*p.Label)
		}
		if p.Rationale != nil {
			rec.Rationale = strings.TrimSpace(*p.Rationale)
			rec.SourceTrust = core.Derive(cmp.Or(rec.SourceTrust, core.TrustNative), cmp.Or(p.RationaleTrust, core.TrustNative))
		}
		if p.Action != nil {
			rec.Action = *p.Action
		}
		if p.CooldownSeconds != nil {
			rec.CooldownSeconds = *p.CooldownSeconds
		}
		if p.Status != nil {
			switch *p.Status {
			case Armed:
				if !rec.Status.Active() {
					rec.rearm(now)
				}
			case Disabled:
				rec.Status = Disabled
			default:
				return core.Invalid("status", "can be set to %s or %s", Armed, Disabled)
			}
		}
		if err := rec.validateSettings(); err != nil {
			return err
		}
		rec.UpdatedAt = now
		out = rec.Definition
		return s.deps.Store.SaveTripwire(ctx, rec)
	})
	if err != nil {
		return Definition{}, fmt.Errorf("update tripwire %q: %w", id, err)
	}
	return out, nil
}

// Disable stops evaluating a tripwire until it is enabled.
func (s *Service) Disable(ctx context.Context, scope, id string) (Definition, error) {
	st := Disabled
	return s.Update(ctx, scope, id, Patch{Status: &st})
}

// Enable re-arms a disabled or quarantined tripwire; an armed or tripped
// one stays as it is.
func (s *Service) Enable(ctx context.Context, scope, id string) (Definition, error) {
	st := Armed
	return s.Update(ctx, scope, id, Patch{Status: &st})
}

// Release re-arms a quarantined tripwire after the citizen reviewed it.
func (s *Service) Release(ctx context.Context, scope, id string) (Definition, error) {
	def, err := s.Get(ctx, scope, id)
	if err != nil {
		return Definition{}, err
	}
	if def.Status != Quarantined {
		return Definition{}, fmt.Errorf("release tripwire %q: it is %s, not quarantined: %w", id, def.Status, core.ErrIllegalTransition)
	}
	return s.Enable(ctx, scope, id)
}

// SetPush turns push notices of a tripwire on or off.
func (s *Service) SetPush(ctx context.Context, scope, id string, on bool) (Definition, error) {
	def, err := s.Get(ctx, scope, id)
	if err != nil {
		return Definition{}, err
	}
	action := def.Action
	action.Push, action.Urgent = on, action.Urgent && on
	return s.Update(ctx, scope, id, Patch{Action: &action})
}

// SetCooldown sets the minimum time between a tripwire's firings.
func (s *Service) SetCooldown(ctx context.Context, scope, id string, cooldown time.Duration) (Definition, error) {
	secs := int(cooldown / time.Second)
	return s.Update(ctx, scope, id, Patch{CooldownSeconds: &secs})
}

// Delete deletes one of scope's tripwires. Its trips stay in the history
// and journal.
func (s *Service) Delete(ctx context.Context, scope, id string) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	if err := s.deps.Store.DeleteTripwire(ctx, scope, id, s.deps.Clock.Now()); err != nil {
		return fmt.Errorf("delete tripwire %q: %w", id, err)
	}
	return nil
}

// History returns up to limit of a tripwire's latest trips, oldest first
// (limit 0 means all that are kept). The history of a deleted tripwire is
// still there.
func (s *Service) History(ctx context.Context, scope, id string, limit int) ([]TripEvent, error) {
	if err := CheckScope(scope); err != nil {
		return nil, err
	}
	if limit <= 0 || limit > TripHistoryCap {
		limit = TripHistoryCap
	}
	events, err := s.deps.Store.History(ctx, scope, id, limit)
	if err == nil && len(events) == 0 {
		_, err = s.deps.Store.Tripwire(ctx, scope, id)
	}
	if err != nil {
		return nil, fmt.Errorf("tripwire %q history: %w", id, err)
	}
	return events, nil
}

// Journal returns what Jarvis noticed in scope: the latest trips, or only
// those since the citizen last looked, and optionally marks them read.
func (s *Service) Journal(ctx context.Context, scope string, q JournalQuery) (JournalPage, error) {
	if err := CheckScope(scope); err != nil {
		return JournalPage{}, err
	}
	if q.Limit <= 0 || q.Limit > TripJournalCap {
		q.Limit = TripJournalCap
	}
	var page JournalPage
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		cursor, err := s.deps.Store.JournalCursor(ctx, scope)
		if err != nil {
			return err
		}
		if page.Unread, err = s.deps.Store.CountJournalAfter(ctx, scope, cursor); err != nil {
			return err
		}
		if q.UnreadOnly {
			page.Entries, err = s.deps.Store.JournalAfter(ctx, scope, cursor, q.Limit)
		} else {
			page.Entries, err = s.deps.Store.LatestJournal(ctx, scope, q.Limit)
		}
		if err != nil {
			return err
		}
		page.Cursor = cursor
		for i := range page.Entries {
			page.Entries[i].Unread = page.Entries[i].Seq > cursor
			if q.MarkRead {
				page.Cursor = max(page.Cursor, page.Entries[i].Seq)
			}
		}
		if page.Cursor == cursor {
			return nil
		}
		return s.deps.Store.SetJournalCursor(ctx, scope, page.Cursor)
	})
	if err != nil {
		return JournalPage{}, fmt.Errorf("read tripwire journal: %w", err)
	}
	if page.Entries == nil {
		page.Entries = []JournalEntry{}
	}
	return page, nil
}

// ConsumePush drains scope's push queue, oldest first. Delivery is at most
// once: the events are gone once returned.
func (s *Service) ConsumePush(ctx context.Context, scope string) ([]TripEvent, error) {
	if err := CheckScope(scope); err != nil {
		return nil, err
	}
	var events []TripEvent
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) (err error) {
		events, err = s.deps.Store.TakePush(ctx, scope)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("consume push queue: %w", err)
	}
	if events == nil {
		events = []TripEvent{}
	}
	return events, nil
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// newID returns "tw_<creation time, base 36>_<80 random bits>".
func newID(now time.Time) string {
	return "tw_" + strconv.FormatInt(now.UnixMilli(), 36) + "_" + randomToken(10)
}

// randomToken returns n random bytes in lower-case base32.
func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails: since Go 1.24 crypto/rand crashes instead
	return idEncoding.EncodeToString(b)
}

// msTime drops what a millisecond timestamp in the store cannot keep.
func msTime(t time.Time) time.Time { return time.UnixMilli(t.UnixMilli()).UTC() }
