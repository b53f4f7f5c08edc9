package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// fleetRoom is the dedicated room fleet notices go to in tests.
const fleetRoom = "!fleet:test"

// fleetAdmin is the admin budget and crash-loop alerts mention.
const fleetAdmin = "@admin:test"

// fleetT0 is when every fleet test starts.
var fleetT0 = time.Date(2026, 4, 17, 0, 0, 0, 0, time.UTC)

// fleetFixture is a fleet service on a real SQLite store with a manual clock.
type fleetFixture struct {
	fleet *fleet.Service
	store *store.Store
	clock *coretest.Clock
	cfg   fleet.Config
}

// fleetTestConfig configures EVE and ZEUS (daily), HERMES (hourly) and
// AUREA (daily, posture required).
var fleetTestConfig = fleet.Config{Agents: []fleet.AgentConfig{
	{Name: "EVE"},
	{Name: "ZEUS", Cadence: 24 * time.Hour},
	{Name: "HERMES", Cadence: time.Hour},
	{Name: "AUREA", Posture: fleet.PostureRequired},
}}

func newFleetFixture(t testing.TB) *fleetFixture {
	t.Helper()
	st := testdb.OpenStore(t, store.SQLite)
	fx := &fleetFixture{store: st, clock: coretest.NewClock(fleetT0), cfg: fleetTestConfig}
	fx.fleet = fx.newFleet(t)
	return fx
}

// newFleet builds a fleet service over the fixture's store, as a restart does.
func (fx *fleetFixture) newFleet(t testing.TB) *fleet.Service {
	t.Helper()
	w := services.Wiring{Store: fx.store, Clock: fx.clock, Room: fleetRoom, Admins: []string{fleetAdmin}}
	incidents := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	return w.Fleet(t, fx.cfg, func(d *fleet.Deps) { d.Incidents = incidents })
}

func (fx *fleetFixture) heartbeat(t testing.TB, agent, cycle string) fleet.HeartbeatReceipt {
	t.Helper()
	r, err := fx.fleet.RecordHeartbeat(context.Background(), fleet.Heartbeat{
		Agent: agent, Cycle: cycle, Timestamp: fx.clock.Now(), MII: 0.97, Mode: "green",
	})
	if err != nil {
		t.Fatalf("heartbeat %s %s: %v", agent, cycle, err)
	}
	return r
}

// report returns the agent's row of the fleet status.
func (fx *fleetFixture) report(t testing.TB, agent string) fleet.AgentReport {
	t.Helper()
	rows, err := fx.fleet.FleetStatus(context.Background())
	if err != nil {
		t.Fatalf("fleet status: %v", err)
	}
	for _, r := range rows {
		if r.Agent == agent {
			return r
		}
	}
	t.Fatalf("no row for %s in the fleet status", agent)
	return fleet.AgentReport{}
}

// notices returns the bodies of the notices waiting in the outbox, by key.
func (fx *fleetFixture) notices(t testing.TB) map[string]string {
	t.Helper()
	waiting, err := fx.store.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatalf("outbox: %v", err)
	}
	out := map[string]string{}
	for _, e := range waiting {
		if e.Kind == core.NoticeReaction {
			continue
		}
		if e.RoomID != fleetRoom {
			t.Errorf("notice %s went to %q, want %q", e.Key, e.RoomID, fleetRoom)
		}
		out[e.Key] = e.Body
	}
	return out
}

// fieldOf returns the field a FieldError names, or "" for other errors.
func fieldOf(err error) string {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

func TestFleetConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		agents    []fleet.AgentConfig
		attest    fleet.AttestationConfig
		wantField string
	}{
		{name: "defaults are fine", agents: []fleet.AgentConfig{{Name: "EVE"}, {Name: "AUREA", Posture: "required"}}},
		{name: "no agents", agents: nil},
		{name: "empty name", agents: []fleet.AgentConfig{{Name: "EVE"}, {Name: ""}}, wantField: "fleet.agents[1].name"},
		{name: "name with a slash", agents: []fleet.AgentConfig{{Name: "EVE/1"}}, wantField: "fleet.agents[0].name"},
		{name: "same name in another case", agents: []fleet.AgentConfig{{Name: "EVE"}, {Name: "ZEUS"}, {Name: "eve"}}, wantField: "fleet.agents[2].name"},
		{name: "negative cadence", agents: []fleet.AgentConfig{{Name: "EVE"}, {Name: "ZEUS"}, {Name: "JADE", Cadence: -time.Hour}}, wantField: "fleet.agents[2].cadence"},
		{name: "negative grace", agents: []fleet.AgentConfig{{Name: "EVE", Grace: -time.Minute}}, wantField: "fleet.agents[0].grace"},
		{name: "a schedule and a cadence", agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Hour, Schedule: "@hourly"}}, wantField: "fleet.agents[0].schedule"},
		{name: "a time zone without a schedule", agents: []fleet.AgentConfig{{Name: "EVE", TimeZone: "UTC"}}, wantField: "fleet.agents[0].time_zone"},
		{name: "cadence under a second", agents: []fleet.AgentConfig{{Name: "EVE", Cadence: 300 * time.Millisecond}}, wantField: "fleet.agents[0].cadence"},
		{name: "unknown posture rule", agents: []fleet.AgentConfig{{Name: "EVE", Posture: "optional"}}, wantField: "fleet.agents[0].posture"},
		{name: "a quorum over all", attest: fleet.AttestationConfig{Quorum: 1.5}, wantField: "fleet.attestations.quorum"},
		{name: "a negative quorum", attest: fleet.AttestationConfig{Quorum: -0.5}, wantField: "fleet.attestations.quorum"},
		{name: "a veto agent with a slash", attest: fleet.AttestationConfig{Quorum: 0.6, VetoAgent: "ZE/US"}, wantField: "fleet.attestations.veto_agent"},
		{name: "a veto agent", attest: fleet.AttestationConfig{Quorum: 0.6, VetoAgent: "ZEUS"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := fleet.Config{Agents: tt.agents, Attestations: tt.attest}.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, core.ErrInvalid) || fieldOf(err) != tt.wantField {
				t.Fatalf("Validate() = %v, want an invalid %s", err, tt.wantField)
			}
		})
	}
}

func TestFleetAppliesConfigDefaults(t *testing.T) {
	fx := newFleetFixture(t)
	got := fx.fleet.Agents()
	if got[0].Cadence != fleet.DefaultCadence || got[0].Posture != fleet.PostureForbidden {
		t.Errorf("EVE = %+v, want cadence %s and posture forbidden", got[0], fleet.DefaultCadence)
	}
	if got[2].Cadence != time.Hour || got[3].Posture != fleet.PostureRequired {
		t.Errorf("agents = %+v, want HERMES hourly and AUREA posture required", got)
	}
}

func TestFleetConfigReload(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	jade := fleet.Heartbeat{Agent: "JADE", Cycle: "C-284", Timestamp: fleetT0, MII: 0.9, Mode: "green"}
	if _, err := fx.fleet.RecordHeartbeat(ctx, jade); fieldOf(err) != "agent" {
		t.Fatalf("JADE before the reload = %v, want an unknown agent", err)
	}
	bad := fleet.Config{Agents: []fleet.AgentConfig{{Name: "JADE", Cadence: time.Millisecond}}}
	if err := fx.fleet.SetConfig(bad); fieldOf(err) != "fleet.agents[0].cadence" {
		t.Fatalf("SetConfig(bad) = %v, want an invalid fleet.agents[0].cadence", err)
	}
	if got := len(fx.fleet.Agents()); got != 4 {
		t.Fatalf("after a rejected reload %d agents, want the 4 configured before", got)
	}
	if err := fx.fleet.SetConfig(fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE"}, {Name: "JADE", Cadence: time.Hour}}}); err != nil {
		t.Fatalf("SetConfig() = %v", err)
	}
	receipt, err := fx.fleet.RecordHeartbeat(ctx, jade)
	if err != nil || !receipt.NextExpectedBy.Equal(fleetT0.Add(time.Hour)) {
		t.Errorf("JADE after the reload = %+v, %v; want accepted with its hourly cadence", receipt, err)
	}
	if _, err := fx.fleet.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: "ZEUS", Cycle: "C-284", Timestamp: fleetT0, MII: 0.9, Mode: "green"}); fieldOf(err) != "agent" {
		t.Errorf("ZEUS after the reload = %v, want an unknown agent", err)
	}
}

func TestRecordHeartbeatValidation(t *testing.T) {
	good := fleet.Heartbeat{Agent: "EVE", Cycle: "C-284", Timestamp: fleetT0, MII: 0.97, Mode: "green", Notes: "all quiet"}
	tests := []struct {
		name      string
		edit      func(*fleet.Heartbeat)
		wantField string
	}{
		{name: "valid", edit: func(*fleet.Heartbeat) {}},
		{name: "agent in lower case", edit: func(h *fleet.Heartbeat) { h.Agent = "eve" }},
		{name: "mii at the bounds", edit: func(h *fleet.Heartbeat) { h.MII = 1 }},
		{name: "notes of 280 characters", edit: func(h *fleet.Heartbeat) { h.Notes = strings.Repeat("é", 280) }},
		{name: "missing agent", edit: func(h *fleet.Heartbeat) { h.Agent = "" }, wantField: "agent"},
		{name: "unknown agent", edit: func(h *fleet.Heartbeat) { h.Agent = "MALLORY" }, wantField: "agent"},
		{name: "no cycle: the UTC date", edit: func(h *fleet.Heartbeat) { h.Cycle = "" }},
		{name: "cycle with a space", edit: func(h *fleet.Heartbeat) { h.Cycle = "C 284" }, wantField: "cycle"},
		{name: "no timestamp: when received", edit: func(h *fleet.Heartbeat) { h.Timestamp = time.Time{} }},
		{name: "mii above 1", edit: func(h *fleet.Heartbeat) { h.MII = 1.01 }, wantField: "mii"},
		{name: "mii below 0", edit: func(h *fleet.Heartbeat) { h.MII = -0.1 }, wantField: "mii"},
		{name: "unknown mode", edit: func(h *fleet.Heartbeat) { h.Mode = "blue" }, wantField: "mode_self_report"},
		{name: "notes of 281 characters", edit: func(h *fleet.Heartbeat) { h.Notes = strings.Repeat("x", 281) }, wantField: "notes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetFixture(t)
			hb := good
			tt.edit(&hb)
			receipt, err := fx.fleet.RecordHeartbeat(context.Background(), hb)
			if tt.wantField != "" {
				if fieldOf(err) != tt.wantField {
					t.Fatalf("RecordHeartbeat() = %v, want an invalid %s", err, tt.wantField)
				}
				if states, _ := fx.store.Heartbeats().AgentStates(context.Background()); len(states) != 0 {
					t.Errorf("a rejected heartbeat left state %+v", states)
				}
				return
			}
			if err != nil {
				t.Fatalf("RecordHeartbeat() = %v", err)
			}
			if !receipt.ReceivedAt.Equal(fleetT0) || !receipt.NextExpectedBy.Equal(fleetT0.Add(24*time.Hour)) {
				t.Errorf("receipt = %+v, want received now and next expected a day later", receipt)
			}
			cycle := hb.Cycle
			if cycle == "" {
				cycle = fleetT0.Format(time.DateOnly)
			}
			stored, err := fx.store.Heartbeats().Heartbeat(context.Background(), "EVE", cycle)
			if err != nil || stored.Agent != "EVE" || stored.MII != hb.MII || stored.Notes != hb.Notes {
				t.Errorf("stored heartbeat = %+v, %v; want EVE's with mii %v", stored, err, hb.MII)
			}
		})
	}
}

func TestHeartbeatUpsertAndStreak(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	streak := func() int {
		t.Helper()
		st, err := fx.store.Heartbeats().AgentState(ctx, "EVE")
		if err != nil {
			t.Fatalf("agent state: %v", err)
		}
		return st.Streak
	}
	steps := []struct {
		name       string
		advance    time.Duration
		cycle      string
		mii        float64
		wantStreak int
	}{
		{name: "first heartbeat starts the streak", cycle: "C-284", mii: 0.9, wantStreak: 1},
		{name: "resubmitting the cycle replaces it without penalty", advance: time.Hour, cycle: "C-284", mii: 0.8, wantStreak: 1},
		{name: "next cycle on time extends the streak", advance: 23 * time.Hour, cycle: "C-285", mii: 0.85, wantStreak: 2},
		{name: "next cycle on time again", advance: 24 * time.Hour, cycle: "C-286", mii: 0.86, wantStreak: 3},
		{name: "resubmitting late keeps the streak", advance: 30 * time.Hour, cycle: "C-286", mii: 0.87, wantStreak: 3},
		{name: "next cycle after a missed deadline restarts it", advance: 26 * time.Hour, cycle: "C-287", mii: 0.88, wantStreak: 1},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fx.clock.Advance(s.advance)
			_, err := fx.fleet.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: "EVE", Cycle: s.cycle, Timestamp: fx.clock.Now(), MII: s.mii, Mode: "yellow"})
			if err != nil {
				t.Fatalf("RecordHeartbeat() = %v", err)
			}
			if got := streak(); got != s.wantStreak {
				t.Errorf("streak = %d, want %d", got, s.wantStreak)
			}
			hb, err := fx.store.Heartbeats().Heartbeat(ctx, "EVE", s.cycle)
			if err != nil || hb.MII != s.mii || !hb.ReceivedAt.Equal(fx.clock.Now()) {
				t.Errorf("stored %s heartbeat = %+v, %v; want the latest (mii %v)", s.cycle, hb, err, s.mii)
			}
		})
	}
}

func TestConcurrentHeartbeatsAreAllStored(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	const n = 300
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := fleetTestConfig.Agents[i%len(fleetTestConfig.Agents)].Name
			_, err := fx.fleet.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: agent, Cycle: fmt.Sprintf("C-%d", i), Timestamp: fleetT0, MII: 0.5, Mode: "green"})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("RecordHeartbeat() = %v", err)
		}
	}
	var rows int
	if err := fx.store.DB.QueryRow(ctx, "SELECT COUNT(*) FROM agent_heartbeat").Scan(&rows); err != nil {
		t.Fatalf("count: %v", err)
	}
	if rows != n {
		t.Errorf("%d heartbeats stored, want %d", rows, n)
	}
}

func TestConcurrentHeartbeatsOfOneAgent(t *testing.T) {
	tests := []struct {
		name       string
		cycles     int
		wantRows   int
		wantStreak int
	}{
		{name: "one cycle resubmitted at once", cycles: 1, wantRows: 1, wantStreak: 1},
		{name: "many cycles at once", cycles: 40, wantRows: 40, wantStreak: 40},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetFixture(t)
			ctx := context.Background()
			var wg sync.WaitGroup
			for i := range 40 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					cycle := fmt.Sprintf("C-%d", i%tt.cycles)
					if _, err := fx.fleet.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: "EVE", Cycle: cycle, Timestamp: fleetT0, MII: 0.5, Mode: "green"}); err != nil {
						t.Errorf("RecordHeartbeat() = %v", err)
					}
				}()
			}
			wg.Wait()
			var rows int
			if err := fx.store.DB.QueryRow(ctx, "SELECT COUNT(*) FROM agent_heartbeat").Scan(&rows); err != nil {
				t.Fatalf("count: %v", err)
			}
			st, err := fx.store.Heartbeats().AgentState(ctx, "EVE")
			if rows != tt.wantRows || err != nil || st.Streak != tt.wantStreak {
				t.Errorf("%d rows, streak %d (%v); want %d rows, streak %d", rows, st.Streak, err, tt.wantRows, tt.wantStreak)
			}
		})
	}
}

func TestAppendJournal(t *testing.T) {
	content := "Narrative tripwire check: clean."
	good := fleet.AgentJournalEntry{
		Agent: "EVE", Cycle: "C-284", EntryID: "eve-C-284-001", Title: "Tripwire check", Content: content,
		ContentSignature: fleet.ContentSignature(content), SignalWeight: 0.82, Timestamp: fleetT0,
		Evidence: []fleet.JournalEvidence{
			{Type: "pr", URL: "https://github.com/example/pull/1"},
			{Type: "metric", Source: "terminal-snapshot", Key: "active_tripwires", Value: float64(0)},
		},
	}
	tests := []struct {
		name      string
		edit      func(*fleet.AgentJournalEntry)
		wantField string
	}{
		{name: "valid", edit: func(*fleet.AgentJournalEntry) {}},
		{name: "signature in upper case hex", edit: func(e *fleet.AgentJournalEntry) {
			e.ContentSignature = "sha256:" + strings.ToUpper(strings.TrimPrefix(e.ContentSignature, "sha256:"))
		}},
		{name: "signature of other content", edit: func(e *fleet.AgentJournalEntry) { e.ContentSignature = fleet.ContentSignature("other") }, wantField: "content_signature"},
		{name: "signature without prefix", edit: func(e *fleet.AgentJournalEntry) {
			e.ContentSignature = strings.TrimPrefix(e.ContentSignature, "sha256:")
		}, wantField: "content_signature"},
		{name: "unknown agent", edit: func(e *fleet.AgentJournalEntry) { e.Agent = "MALLORY" }, wantField: "agent"},
		{name: "missing entry id", edit: func(e *fleet.AgentJournalEntry) { e.EntryID = "" }, wantField: "entry_id"},
		{name: "missing title", edit: func(e *fleet.AgentJournalEntry) { e.Title = " " }, wantField: "title"},
		{name: "signal weight above 1", edit: func(e *fleet.AgentJournalEntry) { e.SignalWeight = 2 }, wantField: "signal_weight"},
		{name: "evidence without type", edit: func(e *fleet.AgentJournalEntry) { e.Evidence[1].Type = "" }, wantField: "verifiable_evidence[1].type"},
		{name: "evidence with a relative url", edit: func(e *fleet.AgentJournalEntry) { e.Evidence[0].URL = "/pull/1" }, wantField: "verifiable_evidence[0].url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetFixture(t)
			e := good
			e.Evidence = append([]fleet.JournalEvidence(nil), good.Evidence...)
			tt.edit(&e)
			_, err := fx.fleet.AppendJournal(context.Background(), e)
			if tt.wantField != "" {
				if fieldOf(err) != tt.wantField {
					t.Fatalf("AppendJournal() = %v, want an invalid %s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("AppendJournal() = %v", err)
			}
			page, err := fx.fleet.Journal(context.Background(), "EVE", "C-284", 0, "")
			entries := page.Entries
			if err != nil || len(entries) != 1 || entries[0].Title != "Tripwire check" || len(entries[0].Evidence) != 2 ||
				entries[0].Evidence[1].Value != float64(0) || entries[0].Evidence[0].URL != good.Evidence[0].URL {
				t.Errorf("journal = %+v, %v; want the one entry with its evidence", entries, err)
			}
		})
	}
}

func TestJournalIsAppendOnlyPerEntryID(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	entry := func(cycle, id, content string) fleet.AgentJournalEntry {
		return fleet.AgentJournalEntry{Agent: "EVE", Cycle: cycle, EntryID: id, Title: "t", Content: content,
			ContentSignature: fleet.ContentSignature(content), SignalWeight: 0.5, Timestamp: fleetT0}
	}
	steps := []struct {
		name    string
		entry   fleet.AgentJournalEntry
		wantErr error
	}{
		{name: "first entry", entry: entry("C-284", "eve-001", "one")},
		{name: "same entry id again", entry: entry("C-284", "eve-001", "one, edited"), wantErr: core.ErrConflict},
		{name: "another entry id appends", entry: entry("C-284", "eve-002", "two")},
		{name: "same entry id in another cycle", entry: entry("C-285", "eve-001", "three")},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			_, err := fx.fleet.AppendJournal(ctx, s.entry)
			if !errors.Is(err, s.wantErr) || (s.wantErr == nil && err != nil) {
				t.Fatalf("AppendJournal() = %v, want %v", err, s.wantErr)
			}
		})
	}
	page, err := fx.fleet.Journal(ctx, "EVE", "C-284", 0, "")
	entries := page.Entries
	if err != nil || len(entries) != 2 || entries[0].Content != "one" || entries[1].Content != "two" {
		t.Errorf("C-284 journal = %+v, %v; want the first entry unchanged and the second appended", entries, err)
	}
}
