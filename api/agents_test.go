package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// agentsCall sends a request to the agents routes with token and returns
// the status and the body.
func (fx *fleetAPIFixture) agentsCall(t *testing.T, method, path, body, token string) (int, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	rec := httptest.NewRecorder()
	checked(t, fx.server).ServeHTTP(rec, req)
	return rec.Code, rec.Body.String()
}

// added lists the names of the agents added over the API.
func (fx *fleetAPIFixture) added() []string {
	var names []string
	for _, a := range fx.fleet.AddedAgents() {
		names = append(names, a.Name+" "+a.Cadence.String()+" "+a.Grace.String()+" "+strings.Join(a.DependsOn, ","))
	}
	return names
}

// TestAgentsAPI: a supervisor adds an agent, which Jarvis then takes
// heartbeats from and lists, changes it and removes it; what is refused
// (another role, a bad field, an agent of the configuration file, one not
// there) is answered with a problem naming why, and changes nothing.
func TestAgentsAPI(t *testing.T) {
	fx := newFleetAPIFixture(t)
	api.RegisterAgents(fx.server, fx.fleet)
	sup := fx.tokens.supervisor

	code, body := fx.agentsCall(t, "PUT", "/api/agents/BACKUP", `{"cadence": "1h", "grace": "10m", "depends_on": ["EVE"]}`, sup)
	if code != http.StatusCreated || !strings.Contains(body, `"source":"api"`) || !strings.Contains(body, `"added_by":"supervisor cred_`) {
		t.Fatalf("a supervisor adds BACKUP: %d %s, want 201 naming who added it", code, body)
	}
	token, _, err := fx.tokens.creds.Issue(context.Background(), credential.Agent, "backup")
	if err != nil {
		t.Fatalf("a token for the added agent: %v", err)
	}
	if code, body := fx.call(t, "POST", "/api/ping", "", "Bearer "+token); code != http.StatusOK {
		t.Fatalf("the added agent pings: %d %v", code, body)
	}
	if code, body := fx.agentsCall(t, "GET", "/api/agents", "", fx.tokens.agent["EVE"]); code != http.StatusOK ||
		!strings.Contains(body, `{"name":"EVE","cadence":"24h0m0s","grace":"0s","depends_on":[],"source":"config"}`) ||
		!strings.Contains(body, `"name":"BACKUP","cadence":"1h0m0s","grace":"10m0s","depends_on":["EVE"],"source":"api"`) {
		t.Fatalf("GET /api/agents: %d %s", code, body)
	}
	if code, body := fx.agentsCall(t, "PUT", "/api/agents/backup", `{"cadence": "2h"}`, sup); code != http.StatusOK {
		t.Fatalf("a supervisor changes BACKUP: %d %s, want 200", code, body)
	}
	want := []string{"backup 2h0m0s 0s "}
	if got := fx.added(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("after the change the added agents are %q, want %q", got, want)
	}

	refusals := []struct {
		name, method, path, body, token string
		wantCode                        int
		want                            string
	}{
		{name: "an agent token", method: "PUT", path: "/api/agents/MALLORY", body: `{}`, token: fx.tokens.agent["EVE"], wantCode: http.StatusForbidden, want: "supervisor"},
		{name: "an orchestrator token", method: "DELETE", path: "/api/agents/backup", token: fx.tokens.orchestrator, wantCode: http.StatusForbidden, want: "supervisor"},
		{name: "two bad durations at once", method: "PUT", path: "/api/agents/NEW", body: `{"cadence": "soon", "grace": "a bit"}`, token: sup,
			wantCode: http.StatusBadRequest, want: `"errors":[{"field":"cadence"`},
		{name: "a cadence too short", method: "PUT", path: "/api/agents/NEW", body: `{"cadence": "10ms"}`, token: sup, wantCode: http.StatusBadRequest, want: `"field":"cadence"`},
		{name: "a schedule and a cadence", method: "PUT", path: "/api/agents/NEW", body: `{"cadence": "1h", "schedule": "@daily"}`, token: sup, wantCode: http.StatusBadRequest, want: `"field":"schedule"`},
		{name: "a schedule that is none", method: "PUT", path: "/api/agents/NEW", body: `{"schedule": "nightly"}`, token: sup, wantCode: http.StatusBadRequest, want: `"field":"schedule"`},
		{name: "a time zone that is none", method: "PUT", path: "/api/agents/NEW", body: `{"schedule": "@daily", "time_zone": "Mars/Olympus"}`, token: sup, wantCode: http.StatusBadRequest, want: `"field":"time_zone"`},
		{name: "depends on an unknown agent", method: "PUT", path: "/api/agents/NEW", body: `{"depends_on": ["GHOST"]}`, token: sup, wantCode: http.StatusBadRequest, want: `"field":"depends_on"`},
		{name: "depends on itself", method: "PUT", path: "/api/agents/NEW", body: `{"depends_on": ["new"]}`, token: sup, wantCode: http.StatusBadRequest, want: `"field":"depends_on"`},
		{name: "a name that is no agent's", method: "PUT", path: "/api/agents/-x", body: `{}`, token: sup, wantCode: http.StatusBadRequest, want: `name`},
		{name: "an agent of the configuration file", method: "PUT", path: "/api/agents/eve", body: `{"cadence": "1h"}`, token: sup, wantCode: http.StatusConflict, want: "configuration file"},
		{name: "removing an agent of the configuration file", method: "DELETE", path: "/api/agents/EVE", token: sup, wantCode: http.StatusConflict, want: "configuration file"},
		{name: "removing an agent never added", method: "DELETE", path: "/api/agents/GHOST", token: sup, wantCode: http.StatusNotFound, want: "GHOST"},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			code, body := fx.agentsCall(t, tt.method, tt.path, tt.body, tt.token)
			if code != tt.wantCode || !strings.Contains(body, tt.want) {
				t.Errorf("%s %s %s: %d %s, want %d naming %s", tt.method, tt.path, tt.body, code, body, tt.wantCode, tt.want)
			}
			if got := fx.added(); strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("the refusal changed the added agents to %q", got)
			}
			if len(fx.fleet.Agents()) != 4 {
				t.Errorf("the refusal changed the watched agents: %d", len(fx.fleet.Agents()))
			}
		})
	}

	if code, body := fx.agentsCall(t, "DELETE", "/api/agents/BACKUP", "", sup); code != http.StatusNoContent {
		t.Fatalf("a supervisor removes BACKUP: %d %s, want 204", code, body)
	}
	if got := fx.added(); len(got) != 0 || len(fx.fleet.Agents()) != 3 {
		t.Fatalf("after the removal the added agents are %q and %d are watched, want none added and the 3 configured", got, len(fx.fleet.Agents()))
	}
	if code, _ := fx.call(t, "POST", "/api/ping", "", "Bearer "+token); code != http.StatusBadRequest {
		t.Errorf("the removed agent pings: %d, want refused", code)
	}
}

// TestAgentsAPILimit: past fleet.max_added_agents, adding one more agent
// is refused with 429 naming the key, and nothing is added; changing or
// removing an added agent still works, and frees a place.
func TestAgentsAPILimit(t *testing.T) {
	st := testdb.OpenStore(t, store.SQLite)
	w := services.Wiring{Store: st, Clock: coretest.NewClock(time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)), Room: "!fleet:test"}
	fl := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE"}}, MaxAddedAgents: 2},
		func(d *fleet.Deps) { d.Incidents = w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute}) })
	tokens := issueTokens(t, st, "EVE")
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterAgents(server, fl)
	fx := &fleetAPIFixture{server: server, fleet: fl, store: st, tokens: tokens}
	sup := tokens.supervisor

	for _, name := range []string{"ONE", "TWO"} {
		if code, body := fx.agentsCall(t, "PUT", "/api/agents/"+name, `{}`, sup); code != http.StatusCreated {
			t.Fatalf("add %s: %d %s", name, code, body)
		}
	}
	code, body := fx.agentsCall(t, "PUT", "/api/agents/THREE", `{"cadence": "1h"}`, sup)
	if code != http.StatusTooManyRequests || !strings.Contains(body, `"limit_key":"fleet.max_added_agents"`) {
		t.Fatalf("a third agent: %d %s, want 429 naming fleet.max_added_agents", code, body)
	}
	if got := fx.added(); len(got) != 2 || len(fl.Agents()) != 3 {
		t.Fatalf("after the refusal the added agents are %q, %d watched; want ONE and TWO, 3 watched", got, len(fl.Agents()))
	}
	if code, body := fx.agentsCall(t, "PUT", "/api/agents/TWO", `{"cadence": "2h"}`, sup); code != http.StatusOK {
		t.Errorf("change TWO at the limit: %d %s, want 200", code, body)
	}
	if code, _ := fx.agentsCall(t, "DELETE", "/api/agents/ONE", "", sup); code != http.StatusNoContent {
		t.Fatalf("remove ONE: %d", code)
	}
	if code, body := fx.agentsCall(t, "PUT", "/api/agents/THREE", `{"cadence": "1h"}`, sup); code != http.StatusCreated {
		t.Errorf("a third agent after a removal: %d %s, want 201", code, body)
	}
}
