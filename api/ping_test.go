package api_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// TestPingSignals: a script's start, fail and exit-status pings are each
// answered as a heartbeat is, a failure is one alert in the room until
// the next success, a start is due within the agent's grace, and an exit
// status that is no process's is refused, naming it, with nothing stored.
func TestPingSignals(t *testing.T) {
	t0 := time.Date(2026, 4, 17, 0, 0, 1, 0, time.UTC)
	tests := []struct {
		name     string
		paths    []string
		wantCode int
		// wantNext is when the last answer says the next report is due.
		wantNext   time.Time
		wantAlerts int
		wantMode   string
	}{
		{name: "start: success due within the grace", paths: []string{"/api/ping/start"}, wantCode: http.StatusOK,
			wantNext: t0.Add(10 * time.Minute), wantMode: "green"},
		{name: "exit status 0 is a success", paths: []string{"/api/ping/0"}, wantCode: http.StatusOK,
			wantNext: t0.Add(time.Hour + 10*time.Minute), wantMode: "green"},
		{name: "fail three times: one alert", paths: []string{"/api/ping/fail", "/api/ping/1", "/api/ping/fail"}, wantCode: http.StatusOK,
			wantNext: t0.Add(time.Hour + 10*time.Minute), wantAlerts: 1, wantMode: "red"},
		{name: "a success ends the failure", paths: []string{"/api/ping/2", "/api/ping", "/api/ping/3"}, wantCode: http.StatusOK,
			wantNext: t0.Add(time.Hour + 10*time.Minute), wantAlerts: 2, wantMode: "red"},
		{name: "exit status above 255", paths: []string{"/api/ping/256"}, wantCode: http.StatusBadRequest},
		{name: "exit status negative", paths: []string{"/api/ping/-1"}, wantCode: http.StatusBadRequest},
		{name: "exit status not a number", paths: []string{"/api/ping/oops"}, wantCode: http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetAPIFixtureWith(t, coretest.NewClock(t0), fleet.AgentConfig{Name: "EVE", Cadence: time.Hour, Grace: 10 * time.Minute})
			var code int
			var body map[string]any
			for _, path := range tt.paths {
				code, body = fx.call(t, "POST", path, "")
			}
			if code != tt.wantCode {
				t.Fatalf("status %d %v, want %d", code, body, tt.wantCode)
			}
			if code != http.StatusOK {
				if body["field"] != "exit_status" {
					t.Errorf("the refusal %v does not name exit_status", body)
				}
				if n := fx.count(t, "agent_heartbeat"); n != 0 {
					t.Errorf("a refused ping stored %d heartbeats", n)
				}
				return
			}
			if body["next_expected_by"] != tt.wantNext.Format(time.RFC3339) {
				t.Errorf("next_expected_by = %v, want %s", body["next_expected_by"], tt.wantNext.Format(time.RFC3339))
			}
			waiting, err := fx.store.Outbox().Waiting(context.Background(), 100)
			if err != nil {
				t.Fatal(err)
			}
			alerts := 0
			for _, n := range waiting {
				if strings.HasPrefix(n.Key, "fail:EVE:") && strings.Count(n.Key, ":") == 2 {
					alerts++
				}
			}
			if alerts != tt.wantAlerts {
				t.Errorf("the room got %d failure alerts, want %d", alerts, tt.wantAlerts)
			}
			rows, err := fx.fleet.FleetStatus(context.Background())
			if err != nil || len(rows) != 1 || rows[0].Mode != tt.wantMode {
				t.Errorf("!fleet shows %+v (%v), want EVE in mode %s", rows, err, tt.wantMode)
			}
		})
	}
}
