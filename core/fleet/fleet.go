// Package fleet keeps what agents report: heartbeats, journals and
// attestations, the watcher that notices silence, and the fleet status that
// answers "what is the fleet doing".
package fleet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// DefaultCadence is how often an agent is expected to heartbeat when its
// configuration does not say: once per cycle, currently daily.
const DefaultCadence = 24 * time.Hour

// MinCadence is the shortest heartbeat cadence an agent may be given.
const MinCadence = time.Second

// MaxHeartbeatNotes is the longest free-text status a heartbeat may carry,
// in characters.
const MaxHeartbeatNotes = 280

// Posture rules for an agent's attestations (AgentConfig.Posture).
const (
	PostureRequired  = "required"
	PostureForbidden = "forbidden"
)

// namePattern is what agent names, cycles and journal entry ids look
// like: they end up in paths such as journals/{agent}/C-{cycle}.md.
var namePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

// modes are the self-reported modes a heartbeat may carry.
var modes = map[string]bool{"green": true, "yellow": true, "red": true}

// AgentConfig describes one agent Jarvis expects reports from.
type AgentConfig struct {
	// Name is the agent's name as it reports it, e.g. "EVE". Matching is
	// case-insensitive; the configured spelling is the one kept.
	Name string
	// Cadence is how often the agent heartbeats; zero means DefaultCadence.
	Cadence time.Duration
	// Grace is how long past its expected time an agent's report may come
	// before it counts as late; after a start signal, how long the job
	// may run before it is late (the cadence when zero).
	Grace time.Duration
	// Schedule, instead of a cadence, says when the agent runs: a cron
	// schedule ("0 3 * * *") in TimeZone (UTC when empty), which
	// Deps.ParseSchedule reads. Its report is expected by its next run
	// after the last, plus its grace; misses are counted in the schedule's
	// interval.
	Schedule string
	TimeZone string
	// schedule is Schedule as read.
	schedule Schedule
	// Posture says whether the agent's attestations must carry a posture
	// ("required") or must not ("forbidden", the default when empty).
	Posture string
	// Budget is the agent's daily spend budget; none when zero.
	Budget Budget
	// DependsOn names the agents this one needs to work: while one of
	// them is down, this one's silence is folded into that one's alert.
	DependsOn []string
}

// Config is the fleet's part of the configuration.
type Config struct {
	Agents []AgentConfig
	// CrashLoop says how many restarts within how long are a crash loop;
	// a zero Restarts looks for none.
	CrashLoop CrashLoop
	// Orchestrator names the agent every other agent depends on; none
	// when empty.
	Orchestrator string
	// GroupWindow is how close together silence alerts of one kind must
	// come to be one message; 0 posts each on its own.
	GroupWindow time.Duration
	// Journal bounds agents' journals and the reads of them.
	Journal JournalConfig
	// MaxAddedAgents is how many agents may be added over the API or the
	// CLI; 0 means DefaultMaxAddedAgents.
	MaxAddedAgents int
	// Attestations says how the verdicts on a subject combine; a zero
	// quorum is all of the awaited agents.
	Attestations AttestationConfig
}

// DefaultMaxAddedAgents is how many agents may be added over the API or
// the CLI when the configuration does not say.
const DefaultMaxAddedAgents = 100

// Validate checks the config, naming the field at fault, e.g.
// fleet.agents[2].cadence.
func (c Config) Validate() error {
	seen := map[string]int{}
	for i, a := range c.Agents {
		field := fmt.Sprintf("fleet.agents[%d]", i)
		switch {
		case len(a.Name) > 64 || !namePattern.MatchString(a.Name):
			return core.Invalid(field+".name", "must be 1 to 64 letters, digits, '.', '_' or '-', not %q", a.Name)
		case a.Cadence < 0 || (a.Cadence > 0 && a.Cadence < MinCadence):
			return core.Invalid(field+".cadence", "must be at least %s (empty means %s), not %s", MinCadence, DefaultCadence, a.Cadence)
		case a.Schedule != "" && a.Cadence != 0:
			return core.Invalid(field+".schedule", "and a cadence were both given: give one")
		case a.Schedule == "" && a.TimeZone != "":
			return core.Invalid(field+".time_zone", "is the zone of a schedule, and no schedule was given")
		case a.Grace < 0:
			return core.Invalid(field+".grace", "must not be negative (0 gives none), not %s", a.Grace)
		case a.Posture != "" && a.Posture != PostureRequired && a.Posture != PostureForbidden:
			return core.Invalid(field+".posture", "must be %q or %q, not %q", PostureRequired, PostureForbidden, a.Posture)
		case a.Budget.Daily < 0 || math.IsNaN(a.Budget.Daily) || math.IsInf(a.Budget.Daily, 0):
			return core.Invalid(field+".budget.daily", "must not be negative (0 sets no budget), not %v", a.Budget.Daily)
		case a.Budget.Daily > 0 && !currencyPattern.MatchString(a.Budget.Currency):
			return core.Invalid(field+".budget.currency", "must be an ISO 4217 code such as USD, not %q", a.Budget.Currency)
		}
		key := strings.ToUpper(a.Name)
		if j, dup := seen[key]; dup {
			return core.Invalid(field+".name", "%q is already fleet.agents[%d]", a.Name, j)
		}
		seen[key] = i
	}
	if c.MaxAddedAgents < 0 {
		return core.Invalid("fleet.max_added_agents", "must not be negative (0 means %d), not %d", DefaultMaxAddedAgents, c.MaxAddedAgents)
	}
	if c.GroupWindow < 0 {
		return core.Invalid("fleet.group_window", "must not be negative (0 groups no alerts), not %s", c.GroupWindow)
	}
	if err := c.validateDependencies(seen); err != nil {
		return err
	}
	if err := c.Journal.Validate(); err != nil {
		return err
	}
	if err := c.Attestations.orDefault().Validate(); err != nil {
		return err
	}
	if c.CrashLoop.Restarts != 0 {
		return c.CrashLoop.Validate()
	}
	return nil
}

// roster is the configured agents with defaults applied, indexed by
// upper-cased name.
type roster struct {
	agents    []AgentConfig
	byKey     map[string]AgentConfig
	crashLoop CrashLoop
	deps      dependencies
	group     time.Duration
	journal   JournalConfig
	attest    AttestationConfig
	// since is when each agent was first expected to report: Jarvis's
	// start, or the reload that added it.
	since map[string]time.Time
}

// Heartbeat is one agent's "I am alive" for a cycle, with its self-reported
// MII and mode.
type Heartbeat struct {
	Agent string
	// Cycle is the agent's work cycle; RecordHeartbeat makes an empty one
	// the UTC date it is received on (2026-04-17).
	Cycle string
	// Timestamp is when the agent says it sent the heartbeat; RecordHeartbeat
	// makes a zero one the time it is received.
	Timestamp time.Time
	MII       float64
	// Mode is the agent's self-reported mode: green, yellow or red.
	Mode  string
	Notes string
	// Spend, when given, is what the agent spent since its last heartbeat.
	Spend *Spend
	// BootID, when given, names the agent's process: a new one is a
	// restart.
	BootID string
	// ReceivedAt is when Jarvis accepted it; set by RecordHeartbeat.
	ReceivedAt time.Time
	// Signal says what a script's ping reported: success (""),
	// SignalStart or SignalFail.
	Signal Signal
	// ExitStatus is the exit status a failure reported, when it gave one.
	ExitStatus *int
}

// HeartbeatReceipt is what an agent is told after its heartbeat is stored.
type HeartbeatReceipt struct {
	ReceivedAt     time.Time
	NextExpectedBy time.Time
	// Breaker is the state of the agent's circuit breaker ("closed",
	// "open", "half-open") read once the heartbeat committed; "" when the
	// fleet has no Deps.Breakers.
	Breaker string
	// Cards are the cards the agent works, as Deps.Work reads them once
	// the heartbeat committed: a change a person made (a NO-GO, an
	// amendment) reaches the worker in the answer.
	Cards []WorkCard
	// Attestations are the ids of the subjects open now that await the
	// agent's verdict and have none from it yet, by id: the
	// contract's "an attestation is awaited".
	Attestations []string
}

// WorkWindow is how long a card the agent worked stays in its heartbeat
// answers after it was done or cancelled.
const WorkWindow = 24 * time.Hour

// WorkCard is a card an agent works, as its heartbeat answer shows it.
type WorkCard struct {
	ID       string
	State    string
	Revision int
}

// WorkReader reads the cards agents work: each agent's open cards, and
// those done or cancelled since since, by agent, most recently changed
// first.
type WorkReader func(ctx context.Context, agents []string, since time.Time) (map[string][]WorkCard, error)

// AgentState is what Jarvis knows of one agent's reporting: its last
// heartbeat, its on-time streak and what was last announced about it.
type AgentState struct {
	Agent string
	// Cycle is the cycle named by the most recently received heartbeat.
	Cycle          string
	LastAt         time.Time
	NextExpectedBy time.Time
	// Streak counts consecutive cycles whose first heartbeat came on time.
	Streak int
	MII    float64
	Mode   string
	Notes  string
	// Announced is what the room was last told: "" (nothing outstanding),
	// "alert" (two heartbeats missed) or "offline" (three missed).
	Announced string
	// Incident numbers the agent's silences, for notice keys.
	Incident int
	// Metered identifies the heartbeat whose spend was counted last (see
	// meterKey), so that the same heartbeat sent again is not counted
	// again.
	Metered string
	// GraceUntil, when set, holds the agent's silence alert back until
	// then: its silence was folded into the alert of an agent it depends
	// on, which resolved, and it is given a cadence to report.
	GraceUntil time.Time
}

// HeartbeatStore keeps heartbeats and each agent's reporting state.
type HeartbeatStore interface {
	// AgentState returns the agent's state; ErrNotFound before its first
	// heartbeat.
	AgentState(ctx context.Context, agent string) (AgentState, error)
	// AgentStates returns the state of the named agents, or of every agent
	// that ever reported when none are named; agents never heard from are
	// left out.
	AgentStates(ctx context.Context, agents ...string) ([]AgentState, error)
	// PutAgentStates writes agents' states, each agent at most once.
	PutAgentStates(ctx context.Context, states ...AgentState) error
	// PutHeartbeats stores heartbeats, each (agent, cycle) at most once,
	// replacing earlier ones of the same agent and cycle, and reports for
	// each whether it is its cycle's first.
	PutHeartbeats(ctx context.Context, hbs []Heartbeat) (first []bool, err error)
}

// BreakerReader reads agents' circuit breakers, whose state every
// heartbeat's answer says. breaker.Service is one.
type BreakerReader interface {
	// States returns the state of each named agent's breaker ("closed",
	// "open", "half-open"), by agent.
	States(ctx context.Context, agents []string) (map[string]string, error)
}

// HistoryWriter adds readings to the sources' history.
type HistoryWriter interface {
	AddReadings(ctx context.Context, readings []history.Reading) error
}

// Deps are what the fleet service works with.
type Deps struct {
	Tx           core.Transactor
	Heartbeats   HeartbeatStore
	Journal      AgentJournalStore
	Attestations AttestationStore
	Outbox       core.Outbox
	Clock        core.Clock
	// History, when set, keeps each heartbeat's agent.mii and each change
	// of agent.status (online after a silence or at first, late, offline),
	// in the transaction that records it, for `!fleet chart` whether or not
	// a tripwire reads them.
	History HistoryWriter
	// Meter, when set, keeps spend and boots from heartbeats (budgets and
	// crash loops).
	Meter MeterStore
	// Breakers, when set, is read once per batch of heartbeats, after it
	// commits, for the state each answer says (HeartbeatReceipt.Breaker).
	Breakers BreakerReader
	// Work, when set, is read once per batch of heartbeats, after it
	// commits, for the cards each answer lists (HeartbeatReceipt.Cards).
	Work WorkReader
	// Incidents raises missed-heartbeat alerts as incidents people claim
	// (👀), and resolves them when the agent reports again.
	Incidents *oncall.Service
	// Room is the dedicated room that missed-heartbeat alerts and recovery
	// notices go to.
	Room string
	// Admins are mentioned by budget and crash-loop alerts.
	Admins []string
	// OnChange, when set, hears that agents' reported state moved (a
	// heartbeat or journal entry committed, a silence announced), so that
	// tripwires reading SourceKinds can run at once instead of at their
	// next tick.
	OnChange func()
	// Agents, when set, keeps the agents added over the API or the CLI.
	Agents AgentStore
	// ParseSchedule reads agents' cron schedules; an agent with a schedule
	// is refused without it.
	ParseSchedule ScheduleParser
	// OnJournal, when set, hears that a journal entry was committed, so
	// that the wake router, which reads the agents' current journals, can
	// run at once. Heartbeats do not change what it reads: waking it for
	// each of them had it read every current journal hundreds of times a
	// second under load, in a write transaction.
	OnJournal func()
}

// Service is the agent reporting service: heartbeats, journals, attestations,
// the missed-heartbeat watcher and the fleet snapshot.
type Service struct {
	deps   Deps
	roster atomic.Pointer[roster]
	// rosterMu orders the changes of the roster: static is the
	// configuration's agents, added those added over the API.
	rosterMu sync.Mutex
	static   Config
	added    []AddedAgent
	// holdings reads what agents hold, for the fleet view (SetHoldings).
	holdings Holdings
	// silent holds the upper-cased names of the agents whose silence
	// since the start was announced (neverDue).
	silent sync.Map
	batch  batcher

	sectionsMu sync.Mutex
	sections   []section
}

// NewService builds the fleet service for the agents of cfg.
func NewService(cfg Config, deps Deps) (*Service, error) {
	if strings.TrimSpace(deps.Room) == "" {
		return nil, core.Invalid("fleet.room", "is required")
	}
	if deps.Incidents == nil {
		return nil, core.Invalid("incidents", "the fleet raises its alerts as incidents")
	}
	f := &Service{deps: deps}
	f.batch.commit = f.commitHeartbeats
	if deps.Breakers != nil {
		f.batch.breakers = deps.Breakers.States
	}
	f.batch.work = deps.Work
	if deps.Attestations != nil {
		f.batch.awaited = deps.Attestations.AwaitedSubjects
	}
	if err := f.SetConfig(cfg); err != nil {
		return nil, err
	}
	return f, nil
}

// SetConfig replaces the configured agents (config reload). Agents removed
// keep their history but no longer appear in status or snapshots; agents
// added over the API stay.
func (f *Service) SetConfig(cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	f.rosterMu.Lock()
	defer f.rosterMu.Unlock()
	r, err := f.build(cfg, f.added)
	if err != nil {
		return err
	}
	f.static = cfg
	f.roster.Store(r)
	return nil
}

// build makes the roster of the configuration's agents and those added
// over the API, defaults applied. An added agent named as a configured
// one is left out: the file's is the one that counts; its dependencies on
// agents no longer there are dropped.
func (f *Service) build(cfg Config, added []AddedAgent) (*roster, error) {
	cfg.Agents = slices.Clone(cfg.Agents)
	known := map[string]bool{}
	for _, a := range cfg.Agents {
		known[strings.ToUpper(a.Name)] = true
	}
	for _, a := range added {
		if !known[strings.ToUpper(a.Name)] {
			known[strings.ToUpper(a.Name)] = true
			cfg.Agents = append(cfg.Agents, a.config())
		}
	}
	for i := range cfg.Agents {
		cfg.Agents[i].DependsOn = slices.DeleteFunc(slices.Clone(cfg.Agents[i].DependsOn), func(d string) bool { return !known[strings.ToUpper(d)] })
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	r := &roster{byKey: map[string]AgentConfig{}, crashLoop: cfg.CrashLoop, since: map[string]time.Time{}, group: cfg.GroupWindow,
		journal: cfg.Journal.orDefault(), attest: cfg.Attestations.orDefault()}
	prev := f.roster.Load()
	r.deps = cfg.dependencies()
	for i, a := range cfg.Agents {
		if a.Schedule != "" {
			if f.deps.ParseSchedule == nil {
				return nil, core.Invalid(fmt.Sprintf("fleet.agents[%d].schedule", i), "cannot be read here")
			}
			var err error
			if a.schedule, err = f.deps.ParseSchedule(fmt.Sprintf("fleet.agents[%d]", i), a.Schedule, a.TimeZone); err != nil {
				return nil, err
			}
			a.Cadence = interval(a.schedule, f.deps.Clock.Now())
		}
		if a.Cadence == 0 {
			a.Cadence = DefaultCadence
		}
		if a.Posture == "" {
			a.Posture = PostureForbidden
		}
		r.agents = append(r.agents, a)
		key := strings.ToUpper(a.Name)
		r.byKey[key] = a
		r.since[key] = f.deps.Clock.Now()
		if prev != nil {
			if at, ok := prev.since[key]; ok {
				r.since[key] = at
			}
		}
	}
	return r, nil
}

// Agents returns the configured agents, defaults applied.
func (f *Service) Agents() []AgentConfig {
	return append([]AgentConfig(nil), f.roster.Load().agents...)
}

// AgentName gives a configured agent's name as the configuration spells
// it, or name as given when no agent is configured so.
func (f *Service) AgentName(name string) string {
	if a, err := f.lookupAgent("agent", name); err == nil {
		return a.Name
	}
	return name
}

// LookupAgent finds a configured agent by name, case-insensitively; an
// unknown name is an ErrInvalid naming field.
func (f *Service) LookupAgent(field, name string) (AgentConfig, error) {
	return f.lookupAgent(field, name)
}

// lookupAgent finds a configured agent by name, case-insensitively; field
// names the input the name came from.
func (f *Service) lookupAgent(field, name string) (AgentConfig, error) {
	return f.roster.Load().lookup(field, name)
}

// lookup finds a configured agent by name, ignoring case.
func (r *roster) lookup(field, name string) (AgentConfig, error) {
	if name == "" {
		return AgentConfig{}, core.Invalid(field, "is required")
	}
	a, ok := r.byKey[strings.ToUpper(name)]
	if !ok {
		return AgentConfig{}, core.Invalid(field, "%q is not a configured agent", name)
	}
	return a, nil
}

// queuedBeat is a validated heartbeat on its way to the store, with the
// cadence its agent had when it arrived.
type queuedBeat struct {
	hb    Heartbeat
	agent AgentConfig
}

// RecordHeartbeat validates and stores a heartbeat (upsert per agent and
// cycle: resubmitting replaces, without penalty). Concurrent heartbeats are
// written together in one transaction; each returns only after its
// transaction commits. It must not be called inside a transaction.
func (f *Service) RecordHeartbeat(ctx context.Context, hb Heartbeat) (HeartbeatReceipt, error) {
	a, err := f.lookupAgent("agent", hb.Agent)
	if err != nil {
		return HeartbeatReceipt{}, err
	}
	hb.Agent = a.Name
	now := f.deps.Clock.Now()
	if hb.Cycle == "" {
		hb.Cycle = now.UTC().Format(time.DateOnly)
	}
	if hb.Timestamp.IsZero() {
		hb.Timestamp = now
	}
	if hb.Signal == SignalFail {
		hb.Mode = "red"
		if hb.Notes == "" {
			hb.Notes = failWhat(hb)
		}
	}
	if err := validateHeartbeat(hb); err != nil {
		return HeartbeatReceipt{}, err
	}
	if err := validateMeter(hb, a); err != nil {
		return HeartbeatReceipt{}, err
	}
	hb.ReceivedAt = now
	done, err := f.batch.do(ctx, queuedBeat{hb: hb, agent: a})
	if err != nil {
		return HeartbeatReceipt{}, fmt.Errorf("record heartbeat of %s for %s: %w", hb.Agent, hb.Cycle, err)
	}
	return HeartbeatReceipt{ReceivedAt: hb.ReceivedAt, NextExpectedBy: nextExpected(a, hb), Breaker: done.breaker,
		Cards: done.work, Attestations: done.awaited}, nil
}

func validateHeartbeat(hb Heartbeat) error {
	switch {
	case !namePattern.MatchString(hb.Cycle):
		return core.Invalid("cycle", "must be 1 to 128 letters, digits, '.', '_' or '-', such as C-284")
	case math.IsNaN(hb.MII) || hb.MII < 0 || hb.MII > 1:
		return core.Invalid("mii", "must be between 0 and 1, not %v", hb.MII)
	case hb.Signal != SignalSuccess && hb.Signal != SignalStart && hb.Signal != SignalFail:
		return core.Invalid("signal", "must be start or fail, not %q", hb.Signal)
	case !modes[hb.Mode]:
		return core.Invalid("mode_self_report", "must be green, yellow or red, not %q", hb.Mode)
	case utf8.RuneCountInString(hb.Notes) > MaxHeartbeatNotes:
		return core.Invalid("notes", "must be at most %d characters, not %d", MaxHeartbeatNotes, utf8.RuneCountInString(hb.Notes))
	}
	return nil
}

// beatKey identifies the heartbeat slot an upsert replaces.
type beatKey struct{ agent, cycle string }

// commitHeartbeats writes a batch of heartbeats in one transaction, with
// one statement for the heartbeats and one for the agents' states. A
// batch of heartbeats that are all usual (see usual) touches nothing but
// its agents' rows, whose states it locks first: the transaction is
// marked core.LockedReads, and one that finds a beat that is not usual
// leaves it to run again at full isolation.
func (f *Service) commitHeartbeats(ctx context.Context, beats []queuedBeat) error {
	err := f.deps.Tx.InTx(core.LockedReads(ctx), func(ctx context.Context) error {
		// Of several heartbeats for one agent and cycle, the last replaces
		// the others.
		last := map[beatKey]int{}
		var agents []string
		for i, b := range beats {
			last[beatKey{b.hb.Agent, b.hb.Cycle}] = i
			if !slices.Contains(agents, b.hb.Agent) {
				agents = append(agents, b.hb.Agent)
			}
		}
		var rows []Heartbeat
		for i, b := range beats {
			if last[beatKey{b.hb.Agent, b.hb.Cycle}] == i {
				rows = append(rows, b.hb)
			}
		}
		// The states first: with locked reads, that locks the agents'
		// rows before their heartbeats' are written.
		stored, err := f.deps.Heartbeats.AgentStates(ctx, agents...)
		if err != nil {
			return err
		}
		states := map[string]AgentState{}
		for _, st := range stored {
			states[st.Agent] = st
		}
		first, err := f.deps.Heartbeats.PutHeartbeats(ctx, rows)
		if err != nil {
			return err
		}
		isFirst := map[beatKey]bool{}
		for i, hb := range rows {
			isFirst[beatKey{hb.Agent, hb.Cycle}] = first[i]
		}
		readings := make([]history.Reading, 0, len(rows))
		for _, b := range beats {
			key := beatKey{b.hb.Agent, b.hb.Cycle}
			st, ok := states[b.hb.Agent]
			if core.ReadsLocked(ctx) && !usual(st, ok, b.hb) {
				return core.ErrBeyondLockedReads
			}
			if !ok {
				st = AgentState{Agent: b.hb.Agent}
			}
			hb := b.hb
			if hb.Spend != nil {
				// An agent that got no answer sends the same heartbeat
				// again: it replaces the stored one, but its spend was
				// counted the first time.
				if key := meterKey(hb); key == st.Metered {
					hb.Spend = nil
				} else {
					st.Metered = key
				}
			}
			if !ok || st.Announced != "" || !st.GraceUntil.IsZero() {
				// The agent's first heartbeat, or its first after a silence
				// (announced, or folded into another's alert that resolved).
				readings = append(readings, history.Reading{Source: core.SourceRef{Kind: SourceAgentStatus, Param: b.hb.Agent}, At: b.hb.ReceivedAt, Value: string(PresenceOnline)})
			}
			if !ok {
				if err := f.resolveNever(ctx, b.hb); err != nil {
					return err
				}
			}
			if err := f.failureEpisode(ctx, st, b); err != nil {
				return err
			}
			if st, err = f.applyHeartbeat(ctx, st, b, isFirst[key]); err != nil {
				return err
			}
			if err := f.meter(ctx, b.agent, hb); err != nil {
				return err
			}
			states[b.hb.Agent] = st
			isFirst[key] = false
		}
		updated := make([]AgentState, len(agents))
		for i, agent := range agents {
			updated[i] = states[agent]
		}
		if err := f.deps.Heartbeats.PutAgentStates(ctx, updated...); err != nil {
			return err
		}
		for _, hb := range rows {
			readings = append(readings, history.Reading{Source: core.SourceRef{Kind: SourceAgentMII, Param: hb.Agent}, At: hb.ReceivedAt, Value: hb.MII})
		}
		return f.addReadings(ctx, readings...)
	})
	if err == nil {
		f.changed()
	}
	return err
}

// usual reports whether hb, given its agent's state st (known, or the
// agent's first report), may change nothing but that state, its own row,
// its agent's readings and the day's spend (one upsert that adds to it),
// and read nothing else that another transaction could be changing but
// its agent's latest boot: what a transaction of locked reads may do.
// Only a heartbeat of the agent writes its boots and its spend, and with
// them its state, whose lock orders them. A usual heartbeat that would
// still do more (a new boot, a budget notice) says so when it finds it.
func usual(st AgentState, known bool, hb Heartbeat) bool {
	switch {
	case !known, st.Announced != "", !st.GraceUntil.IsZero():
		// A first report, or the first after a silence: alerts resolve.
		return false
	case hb.Signal == SignalFail, hb.Signal == SignalSuccess && st.Mode == "red":
		// A failure episode begins, goes on or ends.
		return false
	}
	return true
}

// addReadings keeps readings of the fleet's sources, when a history is
// kept.
func (f *Service) addReadings(ctx context.Context, readings ...history.Reading) error {
	if f.deps.History == nil {
		return nil
	}
	return f.deps.History.AddReadings(ctx, readings)
}

func (f *Service) changed() {
	if f.deps.OnChange != nil {
		f.deps.OnChange()
	}
}

// applyHeartbeat advances an agent's state by one heartbeat: its streak
// grows when a new cycle's first heartbeat comes on time, and when its
// silence had been announced the recovery notice is posted.
func (f *Service) applyHeartbeat(ctx context.Context, st AgentState, b queuedBeat, first bool) (AgentState, error) {
	hb := b.hb
	if first && hb.Cycle != st.Cycle && hb.Signal != SignalStart {
		if !st.LastAt.IsZero() && !hb.ReceivedAt.After(st.NextExpectedBy) {
			st.Streak++
		} else {
			st.Streak = 1
		}
	}
	if st.Announced != "" {
		if err := f.resolveSilence(ctx, st, hb); err != nil {
			return st, err
		}
		st.Announced = ""
	}
	st.GraceUntil = time.Time{}
	st.Cycle, st.LastAt, st.NextExpectedBy = hb.Cycle, hb.ReceivedAt, nextExpected(b.agent, hb)
	if hb.Signal == SignalStart && st.Mode != "" {
		// A start says nothing of how the job went: a failure stays
		// red until a success.
		return st, nil
	}
	st.MII, st.Mode, st.Notes = hb.MII, hb.Mode, hb.Notes
	return st, nil
}

// announce enqueues a fleet notice; a key already in the outbox was
// announced before and is not an error.
func (f *Service) announce(ctx context.Context, n core.Notice) error {
	if err := f.deps.Outbox.Enqueue(ctx, n); err != nil && !errors.Is(err, core.ErrDuplicate) {
		return err
	}
	return nil
}
