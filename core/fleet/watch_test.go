package fleet_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// presenceOf returns what the fleet status says of one agent.
func (fx *fleetFixture) presenceOf(t *testing.T, agent string) fleet.AgentReport {
	t.Helper()
	rows, err := fx.fleet.FleetStatus(context.Background())
	if err != nil {
		t.Fatalf("FleetStatus() = %v", err)
	}
	for _, r := range rows {
		if r.Agent == agent {
			return r
		}
	}
	t.Fatalf("no status row for %s", agent)
	return fleet.AgentReport{}
}

func TestFleetWatcherLateAlertOfflineRecovery(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	fx.heartbeat(t, "EVE", "C-284")
	fx.heartbeat(t, "ZEUS", "C-284")

	steps := []struct {
		name string
		// at is the time since EVE's heartbeat.
		at        time.Duration
		heartbeat string
		// restart builds a new fleet service over the same store first.
		restart      bool
		wantPresence fleet.AgentPresence
		wantMissed   int
		wantNotices  map[string]string
		wantQuorum   []string
	}{
		{name: "on time", at: 23 * time.Hour, wantPresence: fleet.PresenceOnline,
			wantNotices: map[string]string{}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "right at the deadline", at: 24 * time.Hour, wantPresence: fleet.PresenceOnline,
			wantNotices: map[string]string{}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "one miss is late and quiet", at: 24*time.Hour + time.Minute, wantPresence: fleet.PresenceLate, wantMissed: 1,
			wantNotices: map[string]string{}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "second miss raises the alert", at: 48*time.Hour + time.Minute, wantPresence: fleet.PresenceLate, wantMissed: 2,
			wantNotices: map[string]string{
				"fleet:alert:EVE:1":  "⚠️ **EVE** has missed 2 heartbeats in a row: last heard 2d ago (cycle C-284), expected every 1d.",
				"fleet:alert:ZEUS:1": "⚠️ **ZEUS** has missed 2 heartbeats in a row: last heard 2d ago (cycle C-284), expected every 1d.",
			}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "the alert is not repeated on the next tick", at: 50 * time.Hour, wantPresence: fleet.PresenceLate, wantMissed: 2,
			wantNotices: map[string]string{"fleet:alert:EVE:1": "", "fleet:alert:ZEUS:1": ""}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "nor after a restart", at: 51 * time.Hour, restart: true, wantPresence: fleet.PresenceLate, wantMissed: 2,
			wantNotices: map[string]string{"fleet:alert:EVE:1": "", "fleet:alert:ZEUS:1": ""}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "ZEUS comes back", at: 52 * time.Hour, heartbeat: "ZEUS", wantPresence: fleet.PresenceLate, wantMissed: 2,
			wantNotices: map[string]string{
				"fleet:alert:EVE:1": "", "fleet:alert:ZEUS:1": "",
				"fleet:alert:ZEUS:1:resolved":  "✅ **Resolved** after 3h 59m, nobody claimed it. It was: ⚠️ **ZEUS** has missed 2 heartbeats in a row: last heard 2d ago (cycle C-284), expected every 1d.",
				"fleet:alert:ZEUS:1:all-clear": "✅ **ZEUS** is back: heartbeat for C-286 after 2d 4h of silence. All clear: the alert was open 3h 59m, nobody claimed it.",
			}, wantQuorum: []string{"EVE", "ZEUS"}},
		{name: "third miss marks EVE offline", at: 72*time.Hour + time.Second, wantPresence: fleet.PresenceOffline, wantMissed: 3,
			wantNotices: map[string]string{
				"fleet:alert:EVE:1": "", "fleet:alert:ZEUS:1": "", "fleet:alert:ZEUS:1:resolved": "", "fleet:alert:ZEUS:1:all-clear": "",
				"fleet:offline:EVE:1": "🔴 **EVE** is offline: 3 heartbeats missed in a row, last heard 3d ago (cycle C-284), expected every 1d. " +
					"It is left out of attestation quorum until it reports again.",
			}, wantQuorum: []string{"ZEUS"}},
		{name: "offline is not repeated as misses pile up", at: 10 * 24 * time.Hour, restart: true, wantPresence: fleet.PresenceOffline, wantMissed: 9,
			wantNotices: map[string]string{
				"fleet:alert:EVE:1": "", "fleet:alert:ZEUS:1": "", "fleet:alert:ZEUS:1:resolved": "", "fleet:alert:ZEUS:1:all-clear": "", "fleet:offline:EVE:1": "",
				"fleet:offline:ZEUS:2": "🔴 **ZEUS** is offline: 7 heartbeats missed in a row, last heard 7d 20h ago (cycle C-286), expected every 1d. " +
					"It is left out of attestation quorum until it reports again.",
			}, wantQuorum: []string{}},
		{name: "EVE comes back", at: 10*24*time.Hour + 3*time.Hour, heartbeat: "EVE", wantPresence: fleet.PresenceOnline,
			wantNotices: map[string]string{
				"fleet:alert:EVE:1": "", "fleet:alert:ZEUS:1": "", "fleet:alert:ZEUS:1:resolved": "", "fleet:alert:ZEUS:1:all-clear": "", "fleet:offline:EVE:1": "",
				"fleet:offline:ZEUS:2": "",
				"fleet:offline:EVE:1:resolved": "✅ **Resolved** after 8d 2h, nobody claimed it. It was: 🔴 **EVE** is offline: 3 heartbeats missed in a row, last heard 3d ago (cycle C-284), expected every 1d. " +
					"It is left out of attestation quorum until it reports again.",
				"fleet:offline:EVE:1:all-clear": "✅ **EVE** is back: heartbeat for C-286 after 10d 3h of silence. It counts toward attestation quorum again. " +
					"All clear: the alert was open 8d 2h, nobody claimed it.",
			}, wantQuorum: []string{"EVE"}},
	}
	seen := map[string]string{}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fx.clock.Set(fleetT0.Add(s.at))
			if s.restart {
				fx.fleet = fx.newFleet(t)
			}
			if s.heartbeat != "" {
				fx.heartbeat(t, s.heartbeat, "C-286")
			}
			if err := fx.fleet.Sweep(ctx); err != nil {
				t.Fatalf("Sweep() = %v", err)
			}
			if err := fx.fleet.Sweep(ctx); err != nil {
				t.Fatalf("second Sweep() = %v", err)
			}
			got := withoutNeverReported(fx.notices(t))
			if !slices.Equal(slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(s.wantNotices))) {
				t.Fatalf("notices = %v, want keys of %v", got, s.wantNotices)
			}
			for key, body := range s.wantNotices {
				if _, old := seen[key]; !old && got[key] != body {
					t.Errorf("notice %s = %q, want %q", key, got[key], body)
				}
				seen[key] = got[key]
			}
			r := fx.presenceOf(t, "EVE")
			if r.Presence != s.wantPresence || r.Missed != s.wantMissed {
				t.Errorf("EVE is %s with %d missed, want %s with %d", r.Presence, r.Missed, s.wantPresence, s.wantMissed)
			}
			quorum, err := fx.fleet.Quorum(ctx)
			if err != nil || !slices.Equal(quorum, s.wantQuorum) {
				t.Errorf("Quorum() = %v, %v; want %v", quorum, err, s.wantQuorum)
			}
		})
	}
}

func TestFleetWatcherNextIncidentHasNewKeys(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	fx.heartbeat(t, "HERMES", "C-284")
	for incident := 1; incident <= 2; incident++ {
		fx.clock.Advance(2*time.Hour + time.Minute)
		if err := fx.fleet.Sweep(ctx); err != nil {
			t.Fatalf("Sweep() = %v", err)
		}
		fx.heartbeat(t, "HERMES", "C-284")
	}
	got := withoutNeverReported(fx.notices(t))
	want := []string{"fleet:alert:HERMES:1", "fleet:alert:HERMES:1:all-clear", "fleet:alert:HERMES:1:resolved",
		"fleet:alert:HERMES:2", "fleet:alert:HERMES:2:all-clear", "fleet:alert:HERMES:2:resolved"}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, want) {
		t.Errorf("notices = %v, want %v", keys, want)
	}
}

func TestFleetWatcherLongSilenceAnnouncesOnce(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	fx.heartbeat(t, "HERMES", "C-284")
	// Jarvis was down for five of HERMES's hours: one announcement, offline.
	fx.clock.Advance(5*time.Hour + time.Minute)
	if err := fx.fleet.Sweep(ctx); err != nil {
		t.Fatalf("Sweep() = %v", err)
	}
	got := withoutNeverReported(fx.notices(t))
	want := "🔴 **HERMES** is offline: 5 heartbeats missed in a row, last heard 5h 1m ago (cycle C-284), expected every 1h. " +
		"It is left out of attestation quorum until it reports again."
	if len(got) != 1 || got["fleet:offline:HERMES:1"] != want {
		t.Errorf("notices = %v, want only fleet:offline:HERMES:1 = %q", got, want)
	}
}

// withoutNeverReported leaves out the notices about agents that never
// reported, for tests about the others.
func withoutNeverReported(notices map[string]string) map[string]string {
	maps.DeleteFunc(notices, func(k, _ string) bool { return strings.HasPrefix(k, "fleet:never:") })
	return notices
}

func TestFleetWatcherAlertsAgentsThatNeverReported(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	sweep := func(t *testing.T) []string {
		t.Helper()
		if err := fx.fleet.Sweep(ctx); err != nil {
			t.Fatalf("Sweep() = %v", err)
		}
		return slices.Sorted(maps.Keys(fx.notices(t)))
	}
	fx.clock.Advance(time.Hour)
	if got := sweep(t); len(got) != 0 {
		t.Errorf("at the end of HERMES's first hour: %v, want nothing yet", got)
	}
	fx.clock.Advance(time.Minute)
	if got := sweep(t); !slices.Equal(got, []string{"fleet:never:HERMES"}) {
		t.Errorf("past HERMES's first hour: %v, want HERMES alone", got)
	}
	if body := fx.notices(t)["fleet:never:HERMES"]; body != "⚠️ **HERMES** has never reported: its first heartbeat was expected "+
		"within 1h of Apr 17 00:00 UTC, and none came. Is it running, with its token?" {
		t.Errorf("the notice reads %q", body)
	}
	fx.heartbeat(t, "EVE", "C-284")
	fx.clock.Advance(24 * time.Hour)
	want := []string{"fleet:never:AUREA", "fleet:never:HERMES", "fleet:never:ZEUS"}
	if got := sweep(t); !slices.Equal(got, want) {
		t.Errorf("past the first day: %v, want %v (EVE reported)", got, want)
	}
	// Neither the next sweep nor a restarted Jarvis says it again.
	fx.fleet = fx.newFleet(t)
	fx.clock.Advance(48 * time.Hour)
	if got := withoutSilences(sweep(t)); !slices.Equal(got, want) {
		t.Errorf("after a restart: %v, want %v", got, want)
	}
	if r := fx.presenceOf(t, "ZEUS"); r.Presence != fleet.PresenceOffline || r.Reported || r.NeedsAttention() != "has never reported" {
		t.Errorf("ZEUS = %+v, want offline and never reported", r)
	}
}

// withoutSilences leaves out the alerts about agents that did report.
func withoutSilences(keys []string) []string {
	return slices.DeleteFunc(keys, func(k string) bool { return !strings.HasPrefix(k, "fleet:never:") })
}

func TestFleetWatchStopsWithContext(t *testing.T) {
	fx := newFleetFixture(t)
	fx.heartbeat(t, "HERMES", "C-284")
	fx.clock.Advance(2*time.Hour + time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fx.fleet.Watch(ctx, time.Hour, func(err error) { t.Errorf("Watch reported %v", err) })
	}()
	// Watch sweeps at once; poll for the alert it raises (the outbox is
	// woken before the sweep's transaction commits), then stop it.
	deadline := time.After(10 * time.Second)
	poll := time.NewTicker(5 * time.Millisecond)
	defer poll.Stop()
	for len(fx.notices(t)) == 0 {
		select {
		case <-deadline:
			t.Fatal("Watch did not sweep")
		case <-poll.C:
		}
	}
	cancel()
	<-done
	if got := fx.notices(t); len(got) != 1 || got["fleet:alert:HERMES:1"] == "" {
		t.Errorf("notices = %v, want the HERMES alert", got)
	}
}
