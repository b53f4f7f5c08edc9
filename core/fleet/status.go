package fleet

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// AgentReport is one agent's row in the fleet status and the snapshot:
// what is observed of it, from its last heartbeat and on-time streak to its
// journal entries this cycle, pending attestations and MII.
type AgentReport struct {
	Agent    string
	Presence AgentPresence
	// Reported is false for a configured agent never heard from.
	Reported       bool
	Cycle          string
	LastAt         time.Time
	Age            time.Duration
	NextExpectedBy time.Time
	Cadence        time.Duration
	// Grace is how long past its expected time a report may come.
	Grace time.Duration
	// Schedule and TimeZone are the agent's cron schedule, if it has one.
	Schedule, TimeZone string
	Missed             int
	Streak             int
	MII                float64
	Mode               string
	Notes              string
	// JournalCount counts the agent's journal entries in its current cycle:
	// the cycle of its most recent heartbeat or journal entry, whichever
	// came last.
	JournalCount        int
	AttestationsPending int
	// SpendToday is what the agent spent today, Budget its daily budget,
	// Restarts its restarts within the crash-loop window.
	SpendToday DaySpend
	Budget     Budget
	Restarts   int
	// Holding is what the rest of the workspace knows of the agent.
	Holding Holding
}

// attention ranks a row: lower needs attention sooner. Halts come first,
// then agents gone offline, blocked cards, late agents, questions waiting
// for a person, red and yellow modes, agents never heard from.
func (r AgentReport) attention() int {
	switch {
	case r.Holding.Breaker == breakerOpen:
		return 0
	case r.Reported && r.Presence == PresenceOffline:
		return 1
	case r.Holding.count(heldBlocked) > 0:
		return 2
	case r.Presence == PresenceLate:
		return 3
	case r.Holding.count(heldNeedsDecision) > 0:
		return 4
	case r.Mode == "red":
		return 5
	case r.Mode == "yellow":
		return 6
	case !r.Reported:
		return 7
	default:
		return 8
	}
}

// NeedsAttention says why a person should look at this agent, or "" when
// nothing is wrong.
func (r AgentReport) NeedsAttention() string {
	switch r.attention() {
	case 0:
		return "halted: its breaker is open"
	case 1:
		return fmt.Sprintf("offline, %d heartbeats missed", r.Missed)
	case 2:
		return core.Plural(r.Holding.count(heldBlocked), "blocked card", "blocked cards")
	case 3:
		return "late, " + core.Plural(r.Missed, "heartbeat", "heartbeats") + " missed"
	case 4:
		return core.Plural(r.Holding.count(heldNeedsDecision), "question", "questions") + " waiting for a person"
	case 5, 6:
		return "reports mode " + r.Mode
	case 7:
		return "has never reported"
	default:
		return ""
	}
}

// FleetStatus returns one row per configured agent, those that need
// attention first (offline, late, mode red, mode yellow, never reported),
// then by name.
func (f *Service) FleetStatus(ctx context.Context) ([]AgentReport, error) {
	rows, err := f.reports(ctx, f.roster.Load(), f.deps.Clock.Now(), nil)
	if err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	if err := f.holdingsOf(ctx, rows); err != nil {
		return nil, fmt.Errorf("fleet status: %w", err)
	}
	slices.SortStableFunc(rows, func(x, y AgentReport) int {
		if d := x.attention() - y.attention(); d != 0 {
			return d
		}
		if d := y.Missed - x.Missed; d != 0 {
			return d
		}
		return strings.Compare(x.Agent, y.Agent)
	})
	return rows, nil
}

// reports builds the rows of the given agents of ros (all of them when
// agents is nil) as of now, with a few queries for all of them: their
// states, latest journal entries, journal counts, pending attestations,
// spend today and restarts, one query each.
func (f *Service) reports(ctx context.Context, ros *roster, now time.Time, agents []AgentConfig) ([]AgentReport, error) {
	if agents == nil {
		agents = ros.agents
	}
	if len(agents) == 0 {
		return []AgentReport{}, nil
	}
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	states, err := f.deps.Heartbeats.AgentStates(ctx, names...)
	if err != nil {
		return nil, err
	}
	byAgent := make(map[string]AgentState, len(states))
	for _, st := range states {
		byAgent[st.Agent] = st
	}
	latest, err := f.deps.Journal.LatestJournals(ctx, names)
	if err != nil {
		return nil, err
	}
	rows := make([]AgentReport, len(agents))
	cycles := map[string]string{}
	for i, a := range agents {
		st, reported := byAgent[a.Name]
		r := AgentReport{Agent: a.Name, Reported: reported, Cadence: a.Cadence, Grace: a.Grace, Schedule: a.Schedule, TimeZone: a.zone(), Presence: PresenceOffline, Budget: a.Budget}
		cycle, cycleAt := "", time.Time{}
		if reported {
			r.Missed = missedHeartbeats(st, a.Cadence, now)
			r.Presence = presenceOf(r.Missed)
			r.Cycle, r.LastAt, r.Age, r.NextExpectedBy = st.Cycle, st.LastAt, now.Sub(st.LastAt), st.NextExpectedBy
			r.Streak, r.MII, r.Mode, r.Notes = st.Streak, st.MII, st.Mode, st.Notes
			cycle, cycleAt = st.Cycle, st.LastAt
		}
		if j, ok := latest[a.Name]; ok && j.At.After(cycleAt) {
			cycle = j.Cycle
		}
		if cycle != "" {
			cycles[a.Name] = cycle
		}
		rows[i] = r
	}
	counts, err := f.deps.Journal.JournalCounts(ctx, cycles)
	if err != nil {
		return nil, err
	}
	pending, err := f.deps.Attestations.PendingAttestations(ctx, now, names)
	if err != nil {
		return nil, err
	}
	var spends map[string]DaySpend
	var restarts map[string]int
	if f.deps.Meter != nil {
		if spends, err = f.deps.Meter.SpendsOn(ctx, day(now), names); err != nil {
			return nil, err
		}
		if restarts, err = f.deps.Meter.RestartsSince(ctx, now.Add(-ros.crashLoop.Window), names); err != nil {
			return nil, err
		}
	}
	for i := range rows {
		r := &rows[i]
		r.JournalCount, r.AttestationsPending, r.SpendToday, r.Restarts = counts[r.Agent], pending[r.Agent], spends[r.Agent], restarts[r.Agent]
	}
	return rows, nil
}

// Section supplies one extra named section of the fleet snapshot, such
// as circuit breakers or cards.
type Section func(ctx context.Context) (any, error)

type section struct {
	name string
	fn   Section
}

// Snapshot is the aggregate of every agent's state for the operator
// dashboard, with the sections other services add.
type Snapshot struct {
	GeneratedAt time.Time
	Agents      []AgentReport
	// Sections maps a section name to its value, or to {"error": "..."}
	// when its provider failed.
	Sections map[string]any
}

// AddSnapshotSection registers a snapshot section. Names are unique; "agents"
// and "generated_at" are taken. A duplicate panics at start-up.
func (f *Service) AddSnapshotSection(name string, fn Section) {
	f.sectionsMu.Lock()
	defer f.sectionsMu.Unlock()
	if name == "" || name == "agents" || name == "generated_at" || slices.ContainsFunc(f.sections, func(s section) bool { return s.name == name }) {
		panic(fmt.Sprintf("fleet snapshot section %q is already taken", name))
	}
	f.sections = append(f.sections, section{name: name, fn: fn})
}

// Snapshot returns the fleet snapshot: every agent's row (attention first)
// and the registered sections.
func (f *Service) Snapshot(ctx context.Context) (Snapshot, error) {
	rows, err := f.FleetStatus(ctx)
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{GeneratedAt: f.deps.Clock.Now(), Agents: rows, Sections: map[string]any{}}
	f.sectionsMu.Lock()
	sections := slices.Clone(f.sections)
	f.sectionsMu.Unlock()
	for _, s := range sections {
		v, err := s.fn(ctx)
		if err != nil {
			v = map[string]any{"error": err.Error()}
		}
		snap.Sections[s.name] = v
	}
	return snap, nil
}

// Render renders fleet status rows as Markdown that also reads well as
// plain text: one line per agent (status, last heartbeat age, streak, MII,
// mode, notes), then what needs attention first.
func Render(rows []AgentReport) string {
	if len(rows) == 0 {
		return "No agents are configured (fleet.agents)."
	}
	var b strings.Builder
	var attention []string
	for _, r := range rows {
		b.WriteString(renderFleetRow(r))
		b.WriteByte('\n')
		if why := r.NeedsAttention(); why != "" {
			attention = append(attention, fmt.Sprintf("**%s** (%s)", core.EscapeMarkdown(r.Agent), why))
		}
	}
	b.WriteByte('\n')
	if len(attention) == 0 {
		b.WriteString("Nothing needs attention: every agent is on time.")
	} else {
		b.WriteString("Needs attention first: " + strings.Join(attention, ", ") + ".")
	}
	return b.String()
}

// spendText says what an agent spent today, against its budget when it
// has one, or "" when it reported no spend.
func spendText(r AgentReport) string {
	s := r.SpendToday
	if s.Cost == 0 && s.TokensIn == 0 && s.TokensOut == 0 {
		return ""
	}
	text := "spent " + money(s.Cost, s.Currency) + " today"
	if r.Budget.Daily > 0 {
		text += fmt.Sprintf(" (%s of %s)", percent(s.Cost/r.Budget.Daily), money(r.Budget.Daily, r.Budget.Currency))
	}
	if s.TokensIn+s.TokensOut > 0 {
		text += fmt.Sprintf(", %d tokens in, %d out", s.TokensIn, s.TokensOut)
	}
	return text
}

var presenceIcon = map[AgentPresence]string{PresenceOnline: "🟢", PresenceLate: "🟡", PresenceOffline: "🔴"}

func renderFleetRow(r AgentReport) string {
	if !r.Reported {
		line := fmt.Sprintf("- ⚪ **%s** never reported (%s)", core.EscapeMarkdown(r.Agent), expectedText(r))
		if held := holdingText(r.Holding); held != "" {
			line += " · " + held
		}
		return line
	}
	parts := []string{
		fmt.Sprintf("- %s **%s** %s", presenceIcon[r.Presence], core.EscapeMarkdown(r.Agent), r.Presence),
		fmt.Sprintf("last heartbeat %s ago (%s)", core.HumanDuration(r.Age), core.EscapeMarkdown(r.Cycle)),
		fmt.Sprintf("streak %d", r.Streak),
		fmt.Sprintf("MII %.2f", r.MII),
		"mode " + core.EscapeMarkdown(r.Mode),
	}
	if r.Schedule != "" || r.Grace > 0 {
		parts = append(parts, expectedText(r))
	}
	if spend := spendText(r); spend != "" {
		parts = append(parts, spend)
	}
	if r.Restarts > 0 {
		parts = append(parts, core.Plural(r.Restarts, "restart", "restarts")+" lately")
	}
	if held := holdingText(r.Holding); held != "" {
		parts = append(parts, held)
	}
	if notes := strings.Join(strings.Fields(r.Notes), " "); notes != "" {
		parts = append(parts, "“"+core.EscapeMarkdown(notes)+"”")
	}
	return strings.Join(parts, " · ")
}

// expectedText says when an agent is expected: "expected every 1h", with
// ", grace 10m" when it has one, or "scheduled `0 3 * * *` UTC, grace 0s".
func expectedText(r AgentReport) string {
	switch {
	case r.Schedule != "":
		return fmt.Sprintf("scheduled %s %s, grace %s", core.CodeSpan(r.Schedule), core.EscapeMarkdown(r.TimeZone), core.HumanDuration(r.Grace))
	case r.Grace > 0:
		return fmt.Sprintf("expected every %s, grace %s", core.HumanDuration(r.Cadence), core.HumanDuration(r.Grace))
	}
	return "expected every " + core.HumanDuration(r.Cadence)
}
