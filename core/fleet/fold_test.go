package fleet_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

func TestDependsOnValidation(t *testing.T) {
	agents := func(deps ...[]string) []fleet.AgentConfig {
		names := []string{"ZEUS", "EVE", "JADE"}
		out := make([]fleet.AgentConfig, len(names))
		for i, n := range names {
			out[i] = fleet.AgentConfig{Name: n}
			if i < len(deps) {
				out[i].DependsOn = deps[i]
			}
		}
		return out
	}
	cases := []struct {
		name      string
		cfg       fleet.Config
		wantField string
		wantWhy   string
	}{
		{name: "dependencies and an orchestrator, any case", cfg: fleet.Config{Orchestrator: "zeus", Agents: agents(nil, nil, []string{"eve"})}},
		{name: "an unknown name", cfg: fleet.Config{Agents: agents(nil, nil, []string{"EVE", "ZUES"})},
			wantField: "fleet.agents[2].depends_on[1]", wantWhy: `no agent named "ZUES"`},
		{name: "itself", cfg: fleet.Config{Agents: agents(nil, []string{"Eve"})},
			wantField: "fleet.agents[1].depends_on[0]", wantWhy: "EVE cannot depend on itself"},
		{name: "a cycle through another", cfg: fleet.Config{Agents: agents([]string{"JADE"}, []string{"ZEUS"}, []string{"EVE"})},
			wantField: "fleet.agents[0].depends_on[0]", wantWhy: `"JADE" makes a cycle: ZEUS → JADE → EVE → ZEUS`},
		{name: "an unknown orchestrator", cfg: fleet.Config{Orchestrator: "MOS", Agents: agents()},
			wantField: "fleet.orchestrator", wantWhy: `no agent named "MOS"`},
		{name: "an orchestrator that depends on another", cfg: fleet.Config{Orchestrator: "EVE", Agents: agents(nil, []string{"JADE"})},
			wantField: "fleet.agents[1].depends_on", wantWhy: "EVE is fleet.orchestrator, which every other agent depends on: it depends on none"},
		{name: "a negative group window", cfg: fleet.Config{GroupWindow: -time.Second, Agents: agents()},
			wantField: "fleet.group_window", wantWhy: "must not be negative"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.cfg.Validate()
			if c.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if fieldOf(err) != c.wantField || !strings.Contains(err.Error(), c.wantWhy) {
				t.Fatalf("Validate() = %v, want %s: …%s…", err, c.wantField, c.wantWhy)
			}
		})
	}
}

// room is what a person in the room sees of the fleet's notices so far:
// the top-level messages by key, the last edit of each, and the replies
// in their threads.
type room struct {
	top     []string
	edited  map[string]string
	threads map[string][]string
}

func (fx *fleetFixture) room(t *testing.T) room { return fx.roomOf(t, false) }

// neverRoom is the room of the "never reported" alerts alone, which
// room leaves out.
func (fx *fleetFixture) neverRoom(t *testing.T) room { return fx.roomOf(t, true) }

func (fx *fleetFixture) roomOf(t *testing.T, never bool) room {
	t.Helper()
	waiting, err := fx.store.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	r := room{edited: map[string]string{}, threads: map[string][]string{}}
	for _, e := range waiting {
		switch {
		case strings.HasPrefix(e.Key, "fleet:never:") != never:
		case e.Kind == core.NoticeEdit:
			r.edited[e.Target] = e.Body
		case e.Kind == core.NoticeMessage && e.Thread:
			r.threads[e.Target] = append(r.threads[e.Target], e.Body)
		case e.Kind == core.NoticeMessage:
			r.top = append(r.top, e.Key)
		}
	}
	return r
}

// sweepAt sets the clock to at after fleetT0 and sweeps twice.
func (fx *fleetFixture) sweepAt(t *testing.T, at time.Duration) {
	t.Helper()
	fx.clock.Set(fleetT0.Add(at))
	for range 2 {
		if err := fx.fleet.Sweep(context.Background()); err != nil {
			t.Fatalf("Sweep() = %v", err)
		}
	}
}

// TestFoldIntoOrchestrator: when the orchestrator falls silent, the
// agents that depend on it are named in its alert instead of alerting on
// their own; its all-clear, after a restart, closes them all, and those
// still silent get their own alert a cadence later.
func TestFoldIntoOrchestrator(t *testing.T) {
	fx := newFleetFixture(t)
	var agents []fleet.AgentConfig
	for _, n := range []string{"ZEUS", "EVE", "JADE", "HERMES", "ECHO"} {
		agents = append(agents, fleet.AgentConfig{Name: n, Cadence: time.Minute})
	}
	agents[3].DependsOn = []string{"EVE"}
	fx.cfg = fleet.Config{Agents: agents, Orchestrator: "ZEUS", GroupWindow: 30 * time.Second}
	fx.fleet = fx.newFleet(t)
	for _, a := range agents {
		fx.heartbeat(t, a.Name, "C-1")
	}

	fx.sweepAt(t, 2*time.Minute+time.Second)
	r := fx.room(t)
	if !slices.Equal(r.top, []string{"fleet:alert:ZEUS:1"}) {
		t.Fatalf("two misses of all five: top-level messages %v, want ZEUS's alert alone", r.top)
	}
	const fold4 = "\n\n4 agents that depend on it are also silent: **ECHO**, **EVE**, **HERMES**, **JADE**."
	if got := r.edited["fleet:alert:ZEUS:1"]; !strings.HasPrefix(got, "⚠️ **ZEUS** has missed 2 heartbeats") || !strings.HasSuffix(got, fold4) {
		t.Errorf("ZEUS's alert reads %q, want it to name the four", got)
	}

	fx.sweepAt(t, 3*time.Minute+time.Second)
	r = fx.room(t)
	if !slices.Equal(r.top, []string{"fleet:alert:ZEUS:1", "fleet:offline:ZEUS:1"}) {
		t.Fatalf("three misses: top-level messages %v, want ZEUS's alert and its offline notice", r.top)
	}
	offline := "fleet:offline:ZEUS:1"
	if _, ok := r.edited[offline]; ok {
		t.Errorf("the offline notice was edited: %q; it named the four when posted", r.edited[offline])
	}

	fx.clock.Set(fleetT0.Add(4 * time.Minute))
	fx.heartbeat(t, "EVE", "C-2")
	r = fx.room(t)
	want := "\n\n3 agents that depend on it are also silent: **ECHO**, **HERMES**, **JADE**. Back already: **EVE**."
	if got := r.edited[offline]; !strings.HasPrefix(got, "🔴 **ZEUS** is offline") || !strings.HasSuffix(got, want) || len(r.threads) != 0 {
		t.Errorf("EVE back: ZEUS's notice reads %q and threads %v, want EVE marked back and no reply", got, r.threads)
	}

	fx.fleet = fx.newFleet(t) // a restart keeps the fold: it is in the store
	fx.clock.Set(fleetT0.Add(5 * time.Minute))
	fx.heartbeat(t, "ZEUS", "C-2")
	fx.heartbeat(t, "EVE", "C-3")
	r = fx.room(t)
	if got := r.edited[offline]; !strings.HasPrefix(got, "✅ **Resolved** after 2m, nobody claimed it. It was: 🔴 **ZEUS** is offline") {
		t.Errorf("ZEUS back: its notice reads %q, want resolved", got)
	}
	wantReply := "✅ **ZEUS** is back: heartbeat for C-2 after 5m of silence. It counts toward attestation quorum again. " +
		"Still silent: **ECHO**, **HERMES**, **JADE**; each has its own alert if it does not report within its cadence. " +
		"All clear: the alert was open 2m, nobody claimed it."
	if got := r.threads[offline]; len(got) != 1 || got[0] != wantReply {
		t.Errorf("ZEUS back: thread %q, want %q", got, wantReply)
	}
	if len(r.top) != 2 {
		t.Errorf("ZEUS back: top-level messages %v, want no new one", r.top)
	}

	fx.sweepAt(t, 5*time.Minute+59*time.Second)
	if r = fx.room(t); len(r.top) != 2 {
		t.Fatalf("within the cadence after ZEUS came back: top-level messages %v, want no new one", r.top)
	}
	fx.sweepAt(t, 6*time.Minute+time.Second)
	r = fx.room(t)
	if len(r.top) != 3 {
		t.Fatalf("a cadence after ZEUS came back: top-level messages %v, want one alert for the three still silent", r.top)
	}
	if got := r.edited[r.top[2]]; got != "🔴 3 agents are offline: **ECHO**, **HERMES**, **JADE**. They are left out of attestation quorum until they report again." {
		t.Errorf("the three still silent: %s reads %q", r.top[2], got)
	}
}

// TestGroupSilences: alerts of one kind within fleet.group_window are one
// message, edited as more come and as they come back; it resolves with
// the last of them. A window of 0 groups nothing.
func TestGroupSilences(t *testing.T) {
	setup := func(t *testing.T, window time.Duration) *fleetFixture {
		fx := newFleetFixture(t)
		var agents []fleet.AgentConfig
		for _, n := range []string{"ATLAS", "DAEDALUS", "ECHO", "JADE"} {
			agents = append(agents, fleet.AgentConfig{Name: n, Cadence: time.Minute})
		}
		fx.cfg = fleet.Config{Agents: agents, GroupWindow: window}
		fx.fleet = fx.newFleet(t)
		for _, a := range agents[:3] {
			fx.heartbeat(t, a.Name, "C-1")
		}
		fx.clock.Advance(40 * time.Second)
		fx.heartbeat(t, "JADE", "C-1")
		return fx
	}
	t.Run("grouped", func(t *testing.T) {
		fx := setup(t, 30*time.Second)
		fx.sweepAt(t, 2*time.Minute+time.Second)
		r := fx.room(t)
		lead := "fleet:alert:ATLAS:1"
		if !slices.Equal(r.top, []string{lead}) {
			t.Fatalf("three late together: top-level messages %v, want one", r.top)
		}
		if got := r.edited[lead]; got != "⚠️ 3 agents have missed 2 heartbeats in a row: **ATLAS**, **DAEDALUS**, **ECHO**." {
			t.Errorf("the group reads %q", got)
		}
		fx.sweepAt(t, 2*time.Minute+41*time.Second)
		if r = fx.room(t); !slices.Equal(r.top, []string{lead, "fleet:alert:JADE:1"}) {
			t.Fatalf("JADE late 40s later: top-level messages %v, want its own alert", r.top)
		}
		fx.heartbeat(t, "DAEDALUS", "C-2")
		fx.sweepAt(t, 3*time.Minute+time.Second)
		r = fx.room(t)
		if got := r.edited[lead]; got != "⚠️ 3 agents have missed 2 heartbeats in a row: **ATLAS** (offline), **DAEDALUS** (back), **ECHO** (offline)." {
			t.Errorf("one back, two offline: the group reads %q", got)
		}
		if len(r.top) != 2 || len(r.threads) != 0 {
			t.Errorf("one back, two offline: top-level %v, threads %v; want nothing new", r.top, r.threads)
		}
		fx.heartbeat(t, "ATLAS", "C-2")
		fx.heartbeat(t, "ECHO", "C-2")
		r = fx.room(t)
		if got := r.edited[lead]; !strings.HasPrefix(got, "✅ **Resolved** after 1m, nobody claimed it.") {
			t.Errorf("all back: the group reads %q, want resolved", got)
		}
		want := "✅ All 3 are back: **ATLAS**, **DAEDALUS**, **ECHO**. All clear: the alert was open 1m, nobody claimed it."
		if got := r.threads[lead]; len(got) != 1 || got[0] != want {
			t.Errorf("all back: thread %q, want %q", got, want)
		}
	})
	t.Run("off", func(t *testing.T) {
		fx := setup(t, 0)
		fx.sweepAt(t, 2*time.Minute+time.Second)
		if r := fx.room(t); len(r.top) != 3 || len(r.edited) != 0 {
			t.Errorf("group_window 0: top-level %v, edits %v; want three alerts", r.top, r.edited)
		}
	})
}

// TestFoldAndGroupNeverReported: agents that never reported are folded
// into the alert of the orchestrator that never reported either, and,
// with no dependencies, grouped into one alert, edited as each reports;
// the first heartbeat resolves an agent's alert. Those folded into an
// alert that resolves get their own at the next sweep.
func TestFoldAndGroupNeverReported(t *testing.T) {
	setup := func(t *testing.T, orchestrator string) *fleetFixture {
		fx := newFleetFixture(t)
		var agents []fleet.AgentConfig
		for _, n := range []string{"ZEUS", "EVE", "JADE"} {
			agents = append(agents, fleet.AgentConfig{Name: n, Cadence: time.Minute})
		}
		fx.cfg = fleet.Config{Agents: agents, Orchestrator: orchestrator, GroupWindow: 30 * time.Second}
		fx.fleet = fx.newFleet(t)
		return fx
	}
	t.Run("folded into the orchestrator's", func(t *testing.T) {
		fx := setup(t, "ZEUS")
		fx.sweepAt(t, time.Minute+time.Second)
		r := fx.neverRoom(t)
		if !slices.Equal(r.top, []string{"fleet:never:ZEUS"}) {
			t.Fatalf("none reported: top-level messages %v, want ZEUS's alone", r.top)
		}
		if got := r.edited["fleet:never:ZEUS"]; !strings.HasPrefix(got, "⚠️ **ZEUS** has never reported") ||
			!strings.HasSuffix(got, "\n\n2 agents that depend on it are also silent: **EVE**, **JADE**.") {
			t.Errorf("ZEUS's alert reads %q, want it to name the two", got)
		}
		if id, ok := fleet.IncidentOf("fleet:never:ZEUS"); !ok || id != "never:ZEUS" {
			t.Errorf("IncidentOf(fleet:never:ZEUS) = %q, %v", id, ok)
		}
		fx.clock.Set(fleetT0.Add(2 * time.Minute))
		fx.heartbeat(t, "ZEUS", "C-1")
		r = fx.neverRoom(t)
		if got := r.edited["fleet:never:ZEUS"]; !strings.HasPrefix(got, "✅ **Resolved** after 59s, nobody claimed it.") {
			t.Errorf("ZEUS reported: its alert reads %q, want resolved", got)
		}
		want := "✅ **ZEUS** reported for the first time: heartbeat for C-1. Never reported yet: **EVE**, **JADE**; each gets its own alert. " +
			"All clear: the alert was open 59s, nobody claimed it."
		if got := r.threads["fleet:never:ZEUS"]; len(got) != 1 || got[0] != want {
			t.Errorf("ZEUS reported: thread %q, want %q", got, want)
		}
		fx.sweepAt(t, 2*time.Minute+time.Second)
		if r = fx.neverRoom(t); !slices.Equal(r.top, []string{"fleet:never:ZEUS", "fleet:never:EVE", "fleet:never:JADE"}) {
			t.Errorf("the sweep after: top-level messages %v, want EVE's and JADE's own", r.top)
		}
	})
	t.Run("grouped", func(t *testing.T) {
		fx := setup(t, "")
		fx.sweepAt(t, time.Minute+time.Second)
		r := fx.neverRoom(t)
		lead := "fleet:never:ZEUS"
		if !slices.Equal(r.top, []string{lead}) {
			t.Fatalf("none reported: top-level messages %v, want one", r.top)
		}
		if got := r.edited[lead]; got != "⚠️ 3 agents have never reported: **EVE**, **JADE**, **ZEUS**. Are they running, with their tokens?" {
			t.Errorf("the group reads %q", got)
		}
		fx.heartbeat(t, "EVE", "C-1")
		if got := fx.neverRoom(t).edited[lead]; got != "⚠️ 3 agents have never reported: **EVE** (reported), **JADE**, **ZEUS**. Are they running, with their tokens?" {
			t.Errorf("EVE reported: the group reads %q", got)
		}
		fx.heartbeat(t, "JADE", "C-1")
		fx.heartbeat(t, "ZEUS", "C-1")
		r = fx.neverRoom(t)
		want := "✅ All 3 have reported: **EVE**, **JADE**, **ZEUS**. All clear: the alert was open 0s, nobody claimed it."
		if got := r.threads[lead]; len(got) != 1 || got[0] != want {
			t.Errorf("all reported: thread %q, want %q", got, want)
		}
		if len(r.top) != 1 {
			t.Errorf("all reported: top-level messages %v, want no new one", r.top)
		}
	})
}
