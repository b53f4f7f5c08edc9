package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// newStatusFixture builds a fleet in a known mixed state at T0+3h30m:
// JADE offline, HERMES late, ZEUS reporting red, AUREA never heard from,
// EVE fine with two journal entries; a subject awaits EVE and ZEUS, and
// ZEUS has attested.
func newStatusFixture(t *testing.T) *fleetFixture {
	t.Helper()
	fx := newFleetFixture(t)
	fx.cfg = fleet.Config{Agents: []fleet.AgentConfig{
		{Name: "EVE"}, {Name: "ZEUS"}, {Name: "HERMES", Cadence: time.Hour}, {Name: "AUREA", Posture: "required"}, {Name: "JADE", Cadence: time.Hour},
	}}
	fx.fleet = fx.newFleet(t)
	ctx := context.Background()
	fx.heartbeat(t, "JADE", "C-284")
	fx.clock.Advance(time.Hour)
	fx.heartbeat(t, "EVE", "C-284")
	fx.heartbeat(t, "HERMES", "C-284")
	if _, err := fx.fleet.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: "ZEUS", Cycle: "C-284", Timestamp: fx.clock.Now(), MII: 0.5, Mode: "red", Notes: "disk *full*\nagain"}); err != nil {
		t.Fatalf("ZEUS heartbeat: %v", err)
	}
	journal := func(agent, cycle, id string) {
		t.Helper()
		_, err := fx.fleet.AppendJournal(ctx, fleet.AgentJournalEntry{Agent: agent, Cycle: cycle, EntryID: id, Title: "t", Content: id,
			ContentSignature: fleet.ContentSignature(id), SignalWeight: 0.5, Timestamp: fx.clock.Now()})
		if err != nil {
			t.Fatalf("journal %s: %v", id, err)
		}
	}
	journal("EVE", "C-283", "eve-283-1")
	fx.clock.Advance(time.Minute)
	journal("EVE", "C-284", "eve-284-1")
	journal("EVE", "C-284", "eve-284-2")
	// ZEUS's journal for the next cycle arrives before its heartbeat.
	journal("ZEUS", "C-285", "zeus-285-1")
	fx.clock.Set(fleetT0.Add(3*time.Hour + 28*time.Minute))
	if _, _, err := fx.fleet.OpenSubject(ctx, fleet.AttestationSubject{ID: "seal-1", Hash: "sha256:abc", Agents: []string{"EVE", "ZEUS"}}); err != nil {
		t.Fatalf("open subject: %v", err)
	}
	if _, err := fx.fleet.Attest(ctx, signed(fleet.Attestation{SubjectID: "seal-1", Agent: "ZEUS", Verdict: "pass", Rationale: "fine"}, "sha256:abc"), attestKey); err != nil {
		t.Fatalf("attest: %v", err)
	}
	fx.clock.Set(fleetT0.Add(3*time.Hour + 30*time.Minute))
	return fx
}

func TestFleetStatusNeedsAttentionFirst(t *testing.T) {
	fx := newStatusFixture(t)
	rows, err := fx.fleet.FleetStatus(context.Background())
	if err != nil {
		t.Fatalf("FleetStatus() = %v", err)
	}
	type row struct {
		Agent    string
		Presence fleet.AgentPresence
		Missed   int
		Journal  int
		Pending  int
		Attn     string
	}
	var got []row
	for _, r := range rows {
		got = append(got, row{r.Agent, r.Presence, r.Missed, r.JournalCount, r.AttestationsPending, r.NeedsAttention()})
	}
	want := []row{
		{"JADE", fleet.PresenceOffline, 3, 0, 0, "offline, 3 heartbeats missed"},
		{"HERMES", fleet.PresenceLate, 2, 0, 0, "late, 2 heartbeats missed"},
		{"ZEUS", fleet.PresenceOnline, 0, 1, 0, "reports mode red"},
		{"AUREA", fleet.PresenceOffline, 0, 0, 0, "has never reported"},
		{"EVE", fleet.PresenceOnline, 0, 2, 1, ""},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FleetStatus() =\n%+v\nwant\n%+v", got, want)
	}
}

func TestRenderFleet(t *testing.T) {
	fx := newStatusFixture(t)
	rows, err := fx.fleet.FleetStatus(context.Background())
	if err != nil {
		t.Fatalf("FleetStatus() = %v", err)
	}
	fine := fleet.AgentReport{Agent: "EVE", Presence: fleet.PresenceOnline, Reported: true, Cycle: "C-9", Age: 90 * time.Second, Streak: 12, MII: 0.991, Mode: "green"}
	tests := []struct {
		name string
		rows []fleet.AgentReport
		want string
	}{
		{name: "mixed fleet", rows: rows, want: "" +
			"- 🔴 **JADE** offline · last heartbeat 3h 30m ago (C-284) · streak 1 · MII 0.97 · mode green\n" +
			"- 🟡 **HERMES** late · last heartbeat 2h 30m ago (C-284) · streak 1 · MII 0.97 · mode green\n" +
			"- 🟢 **ZEUS** online · last heartbeat 2h 30m ago (C-284) · streak 1 · MII 0.50 · mode red · “disk \\*full\\* again”\n" +
			"- ⚪ **AUREA** never reported (expected every 1d)\n" +
			"- 🟢 **EVE** online · last heartbeat 2h 30m ago (C-284) · streak 1 · MII 0.97 · mode green\n" +
			"\n" +
			"Needs attention first: **JADE** (offline, 3 heartbeats missed), **HERMES** (late, 2 heartbeats missed), " +
			"**ZEUS** (reports mode red), **AUREA** (has never reported)."},
		{name: "all fine", rows: []fleet.AgentReport{fine}, want: "" +
			"- 🟢 **EVE** online · last heartbeat 1m ago (C-9) · streak 12 · MII 0.99 · mode green\n" +
			"\n" +
			"Nothing needs attention: every agent is on time."},
		{name: "no agents", rows: nil, want: "No agents are configured (fleet.agents)."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fleet.Render(tt.rows); got != tt.want {
				t.Errorf("RenderFleet() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestFleetSources(t *testing.T) {
	fx := newStatusFixture(t)
	reg := core.NewSourceRegistry()
	fx.fleet.RegisterSources(reg)
	tests := []struct {
		name        string
		kind        string
		agent       string
		want        any
		wantDisplay string
		wantErr     error
	}{
		{name: "status online", kind: fleet.SourceAgentStatus, agent: "EVE", want: "online", wantDisplay: "online"},
		{name: "status late", kind: fleet.SourceAgentStatus, agent: "hermes", want: "late", wantDisplay: "late (2 heartbeats missed)"},
		{name: "status of an agent never heard from", kind: fleet.SourceAgentStatus, agent: "AUREA", want: "offline", wantDisplay: "offline"},
		{name: "mii", kind: fleet.SourceAgentMII, agent: "ZEUS", want: 0.5, wantDisplay: "0.50"},
		{name: "mode", kind: fleet.SourceAgentMode, agent: "ZEUS", want: "red", wantDisplay: "red"},
		{name: "heartbeat age in seconds", kind: fleet.SourceAgentHeartbeatAge, agent: "EVE", want: 9000.0, wantDisplay: "2h 30m ago"},
		{name: "silence since the last heartbeat", kind: fleet.SourceAgentSilence, agent: "EVE", want: 9000.0, wantDisplay: "silent for 2h 30m"},
		{name: "silence of an agent never heard from, since it was expected", kind: fleet.SourceAgentSilence, agent: "aurea", want: 12600.0,
			wantDisplay: "never reported, expected for 3h 30m"},
		{name: "journal count of the current cycle", kind: fleet.SourceAgentJournalCount, agent: "EVE", want: 2.0, wantDisplay: "2 journal entries this cycle"},
		{name: "journal count reconciled with a later cycle", kind: fleet.SourceAgentJournalCount, agent: "ZEUS", want: 1.0, wantDisplay: "1 journal entry this cycle"},
		{name: "no mii before the first heartbeat", kind: fleet.SourceAgentMII, agent: "AUREA", wantErr: core.ErrNotFound},
		{name: "unknown agent", kind: fleet.SourceAgentStatus, agent: "MALLORY", wantErr: core.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k, ok := reg.Lookup(tt.kind)
			if !ok {
				t.Fatalf("%s is not registered", tt.kind)
			}
			obs, err := k.Resolve(context.Background(), tt.agent)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Resolve() = %+v, %v; want %v", obs, err, tt.wantErr)
				}
				return
			}
			if err != nil || obs.Value != tt.want || obs.Display != tt.wantDisplay {
				t.Errorf("Resolve() = %v (%q), %v; want %v (%q)", obs.Value, obs.Display, err, tt.want, tt.wantDisplay)
			}
		})
	}
	// Read all at once, as an evaluator pass does, each gives what it gave
	// alone.
	refs := make([]core.SourceRef, len(tests))
	for i, tt := range tests {
		refs[i] = core.SourceRef{Kind: tt.kind, Param: tt.agent}
	}
	for i, res := range reg.ResolveAll(core.WithMemo(context.Background()), refs, 4) {
		obs, err := reg.Resolve(context.Background(), refs[i])
		if fmt.Sprint(res.Err) != fmt.Sprint(err) || fmt.Sprint(res.Observation) != fmt.Sprint(obs) {
			t.Errorf("%s at once = %+v, %v; alone %+v, %v", refs[i], res.Observation, res.Err, obs, err)
		}
	}
	if k, ok := reg.Match("Agent Status"); !ok || k.Kind != fleet.SourceAgentStatus || k.Param != "agent name" {
		t.Errorf("Match(Agent Status) = %+v, %v; want agent.status taking an agent name", k, ok)
	}
	k, _ := reg.Lookup(fleet.SourceAgentMode)
	if err := k.CheckParam("eve"); err != nil {
		t.Errorf("CheckParam(eve) = %v, want nil", err)
	}
	if err := k.CheckParam("MALLORY"); err == nil {
		t.Error("CheckParam(MALLORY) = nil, want an error")
	}
	if got := len(reg.Kinds()); got != 8 {
		t.Errorf("%d kinds registered, want 8", got)
	}
}

func TestFleetSnapshotSections(t *testing.T) {
	fx := newStatusFixture(t)
	fx.fleet.AddSnapshotSection("breakers", func(context.Context) (any, error) { return map[string]string{"EVE": "closed"}, nil })
	fx.fleet.AddSnapshotSection("cards", func(context.Context) (any, error) { return nil, errors.New("cards store down") })
	snap, err := fx.fleet.Snapshot(context.Background())
	if err != nil {
		t.Fatalf("Snapshot() = %v", err)
	}
	if len(snap.Agents) != 5 || snap.Agents[0].Agent != "JADE" || !snap.GeneratedAt.Equal(fx.clock.Now()) {
		t.Errorf("snapshot agents = %+v at %v, want five, JADE first, now", snap.Agents, snap.GeneratedAt)
	}
	want := map[string]any{"breakers": map[string]string{"EVE": "closed"}, "cards": map[string]any{"error": "cards store down"}}
	if !reflect.DeepEqual(snap.Sections, want) {
		t.Errorf("sections = %v, want %v", snap.Sections, want)
	}
	for _, name := range []string{"breakers", "agents", ""} {
		t.Run("taken name "+name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("AddSnapshotSection(%q) did not panic", name)
				}
			}()
			fx.fleet.AddSnapshotSection(name, func(context.Context) (any, error) { return nil, nil })
		})
	}
}
