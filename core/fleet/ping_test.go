package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// signal records a script's ping of agent: success, start or fail.
func (fx *fleetFixture) signal(t testing.TB, agent string, s fleet.Signal, exit *int) {
	t.Helper()
	if _, err := fx.fleet.RecordHeartbeat(context.Background(), fleet.Heartbeat{Agent: agent, MII: 1, Mode: "green",
		Signal: s, ExitStatus: exit}); err != nil {
		t.Fatalf("%s ping %q: %v", agent, s, err)
	}
}

// failAlerts returns the failure alerts in the outbox and the replies
// that resolved them.
func failAlerts(notices map[string]string) (alerts, resolved []string) {
	for key, body := range notices {
		switch {
		case strings.HasPrefix(key, "fail:") && strings.HasSuffix(key, ":all-clear"):
			resolved = append(resolved, body)
		case strings.HasPrefix(key, "fail:") && !strings.Contains(key[len("fail:"):], ":resolved") && strings.Count(key, ":") == 2:
			alerts = append(alerts, body)
		}
	}
	return alerts, resolved
}

// TestFailureSignalsAlertOncePerEpisode: a job that fails again and again
// is one alert in the room, which its next success resolves (a start
// before it changes nothing); a failure after that is a new alert.
func TestFailureSignalsAlertOncePerEpisode(t *testing.T) {
	fx := newFleetFixture(t)
	one, two := 1, 2
	fx.signal(t, "HERMES", fleet.SignalFail, &one)
	fx.clock.Advance(time.Minute)
	fx.signal(t, "HERMES", fleet.SignalFail, &two)
	fx.signal(t, "HERMES", fleet.SignalFail, nil)
	alerts, resolved := failAlerts(fx.notices(t))
	if len(alerts) != 1 || !strings.Contains(alerts[0], "**HERMES** failed with exit status 1") || len(resolved) != 0 {
		t.Fatalf("after three failures the room has alerts %q and all-clears %q; want one alert naming exit status 1", alerts, resolved)
	}
	if r := fx.report(t, "HERMES"); r.Mode != "red" || r.Notes != "reported a failure" || r.Presence != fleet.PresenceOnline {
		t.Errorf("!fleet shows HERMES %s, mode %s, %q; want online, red, the last failure", r.Presence, r.Mode, r.Notes)
	}

	fx.clock.Advance(time.Minute)
	fx.signal(t, "HERMES", fleet.SignalStart, nil)
	if r := fx.report(t, "HERMES"); r.Mode != "red" {
		t.Errorf("a start after a failure shows HERMES in mode %s, want still red", r.Mode)
	}
	fx.signal(t, "HERMES", fleet.SignalSuccess, nil)
	fx.signal(t, "HERMES", fleet.SignalSuccess, nil)
	alerts, resolved = failAlerts(fx.notices(t))
	if len(alerts) != 1 || len(resolved) != 1 || !strings.Contains(resolved[0], "**HERMES** succeeded again") {
		t.Fatalf("after the success the room has alerts %q and all-clears %q; want the one alert resolved once", alerts, resolved)
	}

	fx.clock.Advance(time.Minute)
	fx.signal(t, "HERMES", fleet.SignalFail, &one)
	if alerts, _ = failAlerts(fx.notices(t)); len(alerts) != 2 {
		t.Fatalf("a failure after the success: the room has alerts %q; want a second one", alerts)
	}
}

// TestStartSignalIsLateAfterGrace: a job that said it started and did not
// succeed within its agent's grace shows late in !fleet; one that succeeds
// in time stays online, and its next report is due a cadence and a grace
// later.
func TestStartSignalIsLateAfterGrace(t *testing.T) {
	fx := newFleetFixture(t)
	fx.cfg = fleet.Config{Agents: []fleet.AgentConfig{{Name: "BACKUP", Cadence: time.Hour, Grace: 10 * time.Minute}}}
	fx.fleet = fx.newFleet(t)

	fx.signal(t, "BACKUP", fleet.SignalStart, nil)
	fx.clock.Advance(9 * time.Minute)
	if r := fx.report(t, "BACKUP"); r.Presence != fleet.PresenceOnline {
		t.Fatalf("9 minutes into a 10-minute grace BACKUP is %s, want online", r.Presence)
	}
	fx.clock.Advance(2 * time.Minute)
	if r := fx.report(t, "BACKUP"); r.Presence != fleet.PresenceLate {
		t.Fatalf("11 minutes after its start with no success BACKUP is %s, want late", r.Presence)
	}

	fx.signal(t, "BACKUP", fleet.SignalSuccess, nil)
	r := fx.report(t, "BACKUP")
	if r.Presence != fleet.PresenceOnline || !r.NextExpectedBy.Equal(fx.clock.Now().Add(70*time.Minute)) {
		t.Fatalf("after its success BACKUP is %s, next expected by %s; want online, expected a cadence and its grace later", r.Presence, r.NextExpectedBy)
	}
	fx.clock.Advance(65 * time.Minute)
	if r := fx.report(t, "BACKUP"); r.Presence != fleet.PresenceOnline {
		t.Fatalf("65 minutes after its success, within its cadence and grace, BACKUP is %s, want online", r.Presence)
	}
	if text := fleet.Render([]fleet.AgentReport{fx.report(t, "BACKUP")}); !strings.Contains(text, "expected every 1h, grace 10m") {
		t.Errorf("!fleet does not show BACKUP's cadence and grace:\n%s", text)
	}
}

// TestScheduledAgentIsLateAfterItsNextRunAndGrace: an agent that runs on a
// cron schedule in its time zone is expected by its next run after its
// report, plus its grace, and !fleet shows its schedule.
func TestScheduledAgentIsLateAfterItsNextRunAndGrace(t *testing.T) {
	fx := newFleetFixture(t)
	fx.cfg = fleet.Config{Agents: []fleet.AgentConfig{{Name: "NIGHTLY", Schedule: "0 3 * * *", TimeZone: "Europe/Berlin", Grace: 30 * time.Minute}}}
	fx.fleet = fx.newFleet(t)

	// 03:05 in Berlin (summer time, UTC+2): tonight's run reported.
	fx.clock.Set(time.Date(2026, 4, 17, 1, 5, 0, 0, time.UTC))
	fx.signal(t, "NIGHTLY", fleet.SignalSuccess, nil)
	if r := fx.report(t, "NIGHTLY"); !r.NextExpectedBy.Equal(time.Date(2026, 4, 18, 1, 30, 0, 0, time.UTC)) {
		t.Fatalf("NIGHTLY is next expected by %s, want tomorrow's 03:00 in Berlin plus 30m", r.NextExpectedBy)
	}
	fx.clock.Set(time.Date(2026, 4, 18, 1, 29, 0, 0, time.UTC))
	if r := fx.report(t, "NIGHTLY"); r.Presence != fleet.PresenceOnline {
		t.Fatalf("within its grace NIGHTLY is %s, want online", r.Presence)
	}
	fx.clock.Set(time.Date(2026, 4, 18, 1, 31, 0, 0, time.UTC))
	r := fx.report(t, "NIGHTLY")
	if r.Presence != fleet.PresenceLate {
		t.Fatalf("past its run and grace NIGHTLY is %s, want late", r.Presence)
	}
	if text := fleet.Render([]fleet.AgentReport{r}); !strings.Contains(text, "scheduled `0 3 * * *` Europe/Berlin, grace 30m") {
		t.Errorf("!fleet does not show NIGHTLY's schedule:\n%s", text)
	}
	fx.clock.Set(time.Date(2026, 4, 19, 1, 31, 0, 0, time.UTC))
	if r := fx.report(t, "NIGHTLY"); r.Missed != 2 {
		t.Errorf("a day later NIGHTLY has missed %d runs, want 2: misses count in the schedule's interval", r.Missed)
	}
}

// TestNeverReportedWaitsForTheGrace: an agent never heard from is told
// in the room only once its first cadence and its grace have passed.
func TestNeverReportedWaitsForTheGrace(t *testing.T) {
	fx := newFleetFixture(t)
	fx.cfg = fleet.Config{Agents: []fleet.AgentConfig{{Name: "BACKUP", Cadence: time.Hour, Grace: 30 * time.Minute}}}
	fx.fleet = fx.newFleet(t)
	ctx := context.Background()
	fx.clock.Advance(89 * time.Minute)
	if err := fx.fleet.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(fx.notices(t)); n != 0 {
		t.Fatalf("within its cadence and grace BACKUP's silence was told: %v", fx.notices(t))
	}
	fx.clock.Advance(2 * time.Minute)
	if err := fx.fleet.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if body := fx.notices(t)["fleet:never:BACKUP"]; !strings.Contains(body, "**BACKUP** has never reported") {
		t.Fatalf("past its cadence and grace the room was told %v, want that BACKUP never reported", fx.notices(t))
	}
}
