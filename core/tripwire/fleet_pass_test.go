package tripwire_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// The store reads of the fleet, counted.
type (
	countedHeartbeats struct {
		fleet.HeartbeatStore
		n *atomic.Int64
	}
	countedJournal struct {
		fleet.AgentJournalStore
		n *atomic.Int64
	}
	countedAttestations struct {
		fleet.AttestationStore
		n *atomic.Int64
	}
	countedMeter struct {
		fleet.MeterStore
		n *atomic.Int64
	}
)

func (c countedHeartbeats) AgentState(ctx context.Context, agent string) (fleet.AgentState, error) {
	c.n.Add(1)
	return c.HeartbeatStore.AgentState(ctx, agent)
}

func (c countedHeartbeats) AgentStates(ctx context.Context, agents ...string) ([]fleet.AgentState, error) {
	c.n.Add(1)
	return c.HeartbeatStore.AgentStates(ctx, agents...)
}

func (c countedJournal) LatestJournal(ctx context.Context, agent string) (string, time.Time, error) {
	c.n.Add(1)
	return c.AgentJournalStore.LatestJournal(ctx, agent)
}

func (c countedJournal) LatestJournals(ctx context.Context, agents []string) (map[string]fleet.JournalMark, error) {
	c.n.Add(1)
	return c.AgentJournalStore.LatestJournals(ctx, agents)
}

func (c countedJournal) JournalCounts(ctx context.Context, cycles map[string]string) (map[string]int, error) {
	c.n.Add(1)
	return c.AgentJournalStore.JournalCounts(ctx, cycles)
}

func (c countedAttestations) PendingAttestations(ctx context.Context, now time.Time, agents []string) (map[string]int, error) {
	c.n.Add(1)
	return c.AttestationStore.PendingAttestations(ctx, now, agents)
}

func (c countedMeter) SpendOn(ctx context.Context, agent, day string) (fleet.DaySpend, error) {
	c.n.Add(1)
	return c.MeterStore.SpendOn(ctx, agent, day)
}

func (c countedMeter) SpendsOn(ctx context.Context, day string, agents []string) (map[string]fleet.DaySpend, error) {
	c.n.Add(1)
	return c.MeterStore.SpendsOn(ctx, day, agents)
}

func (c countedMeter) BootsSince(ctx context.Context, agent string, since time.Time) ([]fleet.Boot, error) {
	c.n.Add(1)
	return c.MeterStore.BootsSince(ctx, agent, since)
}

func (c countedMeter) RestartsSince(ctx context.Context, since time.Time, agents []string) (map[string]int, error) {
	c.n.Add(1)
	return c.MeterStore.RestartsSince(ctx, since, agents)
}

// fleetWorkspace is a fleet and the tripwires watching it, on a store of
// its own; reads counts the fleet's store reads.
type fleetWorkspace struct {
	st    *store.Store
	clock *coretest.Clock
	fleet *fleet.Service
	tw    *tripwire.Service
	reads *atomic.Int64
	armed map[string]armedWatch // by label
}

// armedWatch is one armed tripwire of a fleetWorkspace.
type armedWatch struct{ scope, id string }

const fleetPassAgents = 24

func fleetPassConfig(gone bool) fleet.Config {
	cfg := fleet.Config{CrashLoop: fleet.CrashLoop{Restarts: 3, Window: 10 * time.Minute}}
	for i := range fleetPassAgents {
		cfg.Agents = append(cfg.Agents, fleet.AgentConfig{Name: fmt.Sprintf("A%02d", i), Cadence: time.Hour,
			Budget: fleet.Budget{Daily: 10, Currency: "USD"}})
	}
	if gone {
		cfg.Agents = append(cfg.Agents, fleet.AgentConfig{Name: "GONE", Cadence: time.Hour})
	}
	return cfg
}

// newFleetWorkspace builds a workspace whose fleet source kinds are read
// many agents at once or, when oneByOne, each (kind, agent) on its own.
func newFleetWorkspace(t *testing.T, oneByOne bool) *fleetWorkspace {
	t.Helper()
	st := testdb.OpenStore(t, store.SQLite)
	w := &fleetWorkspace{st: st, clock: coretest.NewClock(time.Date(2026, 4, 17, 9, 0, 0, 0, time.UTC)), reads: &atomic.Int64{},
		armed: map[string]armedWatch{}}
	wired := services.Wiring{Store: st, Clock: w.clock, Room: "!jarvis:example.org"}
	incidents := wired.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	f := wired.Fleet(t, fleetPassConfig(true), func(d *fleet.Deps) {
		d.Heartbeats = countedHeartbeats{st.Heartbeats(), w.reads}
		d.Journal = countedJournal{st.AgentJournal(), w.reads}
		d.Attestations = countedAttestations{st.Attestations(), w.reads}
		d.Meter = countedMeter{st.Meter(), w.reads}
		d.Incidents = incidents
	})
	w.fleet = f
	reg := core.NewSourceRegistry()
	if oneByOne {
		all := core.NewSourceRegistry()
		f.RegisterSources(all)
		for _, k := range all.Kinds() {
			k.ResolveMany = nil
			reg.Register(k)
		}
	} else {
		f.RegisterSources(reg)
	}
	w.tw = wired.Tripwires(testconfig.Tripwires(), reg)
	return w
}

// fleetWatches are the tripwires armed on each agent, one per fleet kind.
var fleetWatches = []struct {
	kind string
	cond tripwire.Condition
}{
	{fleet.SourceAgentStatus, tripwire.Condition{Op: tripwire.OpEQ, Threshold: "offline"}},
	{fleet.SourceAgentMII, tripwire.Condition{Op: tripwire.OpLT, Threshold: 0.6}},
	{fleet.SourceAgentMode, tripwire.Condition{Op: tripwire.OpEQ, Threshold: "red"}},
	{fleet.SourceAgentHeartbeatAge, tripwire.Condition{Op: tripwire.OpGT, Threshold: 3600.0}},
	{fleet.SourceAgentJournalCount, tripwire.Condition{Op: tripwire.OpGT, Threshold: 1.0}},
	{fleet.SourceAgentSpendToday, tripwire.Condition{Op: tripwire.OpGT, Threshold: 1.0}},
	{fleet.SourceAgentCrashLoop, tripwire.Condition{Op: tripwire.OpGT, Threshold: 0.0}},
	{fleet.SourceAgentSilence, tripwire.Condition{Op: tripwire.OpGT, Threshold: 5400.0}},
}

// populate arms the tripwires and has a quarter of the agents never
// report, a quarter report, a quarter journal twice as well and a quarter
// restart, their MII, mode and spend varying; then it drops GONE from
// the configuration.
func (w *fleetWorkspace) populate(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	agents := []string{"GONE"}
	for i := range fleetPassAgents {
		agents = append(agents, fmt.Sprintf("A%02d", i))
	}
	for _, agent := range agents {
		for _, watch := range fleetWatches {
			label, scope := watch.kind+" of "+agent, "@owner-"+agent+":example.org"
			def, err := w.tw.Arm(ctx, scope, tripwire.Draft{Label: label, Rationale: "it runs the nightly jobs",
				Source: core.SourceRef{Kind: watch.kind, Param: agent}, Condition: watch.cond,
				Action: &tripwire.Action{Journal: true, Push: true}})
			if err != nil {
				t.Fatalf("arm %s: %v", label, err)
			}
			w.armed[label] = armedWatch{scope: scope, id: def.ID}
		}
	}
	for i := range fleetPassAgents {
		agent := fmt.Sprintf("A%02d", i)
		if i%4 == 0 {
			continue
		}
		hb := fleet.Heartbeat{Agent: agent, Cycle: "C-1", Timestamp: w.clock.Now(), MII: 0.4 + float64(i)/50,
			Mode: []string{"green", "yellow", "red"}[i%3], Spend: &fleet.Spend{Cost: float64(i) / 8, Currency: "USD"}, BootID: "boot-1"}
		if _, err := w.fleet.RecordHeartbeat(ctx, hb); err != nil {
			t.Fatalf("heartbeat of %s: %v", agent, err)
		}
		switch i % 4 {
		case 2:
			for _, id := range []string{"e1", "e2"} {
				_, err := w.fleet.AppendJournal(ctx, fleet.AgentJournalEntry{Agent: agent, Cycle: "C-2", EntryID: id, Title: "t", Content: id,
					ContentSignature: fleet.ContentSignature(id), SignalWeight: 0.5, Timestamp: w.clock.Now()})
				if err != nil {
					t.Fatalf("journal of %s: %v", agent, err)
				}
			}
		case 3:
			hb.BootID, hb.Timestamp = "boot-2", hb.Timestamp.Add(time.Second)
			if _, err := w.fleet.RecordHeartbeat(ctx, hb); err != nil {
				t.Fatalf("restart of %s: %v", agent, err)
			}
		}
	}
	if err := w.fleet.SetConfig(fleetPassConfig(false)); err != nil {
		t.Fatal(err)
	}
}

// pass re-evaluates the fleet's tripwires as a fleet change does, and
// returns the report and how many store reads it made.
func (w *fleetWorkspace) pass(t *testing.T) (tripwire.TickReport, int64) {
	t.Helper()
	w.reads.Store(0)
	r, err := w.tw.Reevaluate(context.Background(), fleet.SourceKinds...)
	if err != nil {
		t.Fatalf("pass: %v", err)
	}
	return r, w.reads.Load()
}

// outcome is what each tripwire shows after the passes: its status, last
// error and the observations of its trips, by label.
func (w *fleetWorkspace) outcome(t *testing.T) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for label, a := range w.armed {
		def, err := w.tw.Get(ctx, a.scope, a.id)
		if err != nil {
			t.Fatalf("get %s: %v", label, err)
		}
		events, err := w.tw.History(ctx, a.scope, a.id, 0)
		if err != nil {
			t.Fatalf("history of %s: %v", label, err)
		}
		line := fmt.Sprintf("%s: %s %q", label, def.Status, def.LastError)
		for _, ev := range events {
			line += fmt.Sprintf(" | %v %v %s", ev.ObservedValue, ev.ObservedContext, ev.Summary)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// TestPassReadsTheFleetAtOnce: a pass over the eight fleet kinds of 24
// agents (and of one no longer configured) reads the store six times,
// not six times per (kind, agent), and the tripwires come out as they do
// when each source is read on its own: the same trips with the same
// observations, the same resets, the same source errors.
func TestPassReadsTheFleetAtOnce(t *testing.T) {
	many, one := newFleetWorkspace(t, false), newFleetWorkspace(t, true)
	for _, w := range []*fleetWorkspace{many, one} {
		w.populate(t)
	}
	sources := (fleetPassAgents + 1) * len(fleetWatches)
	for _, step := range []struct {
		name  string
		after time.Duration
	}{
		{"at once", 0},
		{"some agents go late and silent", 90 * time.Minute},
		{"offline", 3 * time.Hour},
	} {
		t.Run(step.name, func(t *testing.T) {
			many.clock.Advance(step.after)
			one.clock.Advance(step.after)
			rMany, readsMany := many.pass(t)
			rOne, readsOne := one.pass(t)
			t.Logf("pass: %+v; %d store reads at once, %d one by one", rMany, readsMany, readsOne)
			if fmt.Sprint(rMany) != fmt.Sprint(rOne) {
				t.Errorf("pass reading many at once: %+v; one by one: %+v", rMany, rOne)
			}
			if rMany.Sources != sources || rMany.Evaluated != sources {
				t.Errorf("pass: %+v; want %d sources read and tripwires evaluated", rMany, sources)
			}
			// GONE's eight sources fail: it is no longer configured.
			if rMany.SourceErrors < len(fleetWatches) {
				t.Errorf("pass: %d source errors, want at least GONE's %d", rMany.SourceErrors, len(fleetWatches))
			}
			if readsMany != 6 {
				t.Errorf("pass reading many at once made %d store reads, want 6", readsMany)
			}
			if readsOne < int64(6*(sources-len(fleetWatches))) {
				t.Errorf("pass reading one by one made %d store reads, want 6 a source", readsOne)
			}
			if a, b := many.outcome(t), one.outcome(t); !slices.Equal(a, b) {
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Errorf("at once:    %s\none by one: %s", a[i], b[i])
					}
				}
			}
		})
	}
	if r, _ := many.pass(t); r.Fired != 0 {
		t.Errorf("the same pass again: %+v, want nothing more fired", r)
	}
	if out := many.outcome(t); !slices.ContainsFunc(out, func(s string) bool {
		return s == `agent.status of GONE: armed "agent.status[GONE]: param: \"GONE\" is not a configured agent"`
	}) {
		t.Errorf("GONE's status tripwire: %q; want its source error", out)
	}
}
