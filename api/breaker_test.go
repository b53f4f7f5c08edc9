package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// breakerAPIFixture is the API with the breaker routes on a real SQLite
// store and a manual clock.
type breakerAPIFixture struct {
	server *api.Server
	svc    *breaker.Service
	store  *store.Store
	tokens *apiTokens
}

func newBreakerAPIFixture(t *testing.T) *breakerAPIFixture {
	t.Helper()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	svc := services.Wiring{Store: st, Clock: clock, Room: "!ops:test", Admins: []string{"@alice:test"}}.Breakers(testconfig.Breaker())
	tokens := issueTokens(t, st, "ani")
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterBreaker(server, svc, nil)
	return &breakerAPIFixture{server: server, svc: svc, store: st, tokens: tokens}
}

// call sends a request, with the supervisor's token unless auth is false,
// and returns the status and the decoded JSON body.
func (fx *breakerAPIFixture) call(t *testing.T, method, path, body string, auth bool) (int, map[string]any) {
	t.Helper()
	if !auth {
		return fx.callWith(t, "", method, path, body)
	}
	return fx.callWith(t, fx.tokens.supervisor, method, path, body)
}

// callWith sends a request bearing token (none when "").
func (fx *breakerAPIFixture) callWith(t *testing.T, token, method, path, body string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	checked(t, fx.server).ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: response %q is not JSON: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, out
}

// breakerEventID is the id of the event in a status or open response.
func breakerEventID(body map[string]any) string {
	ev, _ := body["event"].(map[string]any)
	id, _ := ev["id"].(string)
	return id
}

const breakerOpenBody = `{"severity": "safety", "reason": "tried to delete the ledger", "evidence": ["rm -rf ledger/"], "by": "aster"}`

func TestBreakerAPI(t *testing.T) {
	fx := newBreakerAPIFixture(t)
	ctx := context.Background()
	var first string // the first event, opened by the supervisor
	steps := []struct {
		name      string
		before    func(t *testing.T)
		method    string
		path      string
		body      string
		noAuth    bool
		wantCode  int
		wantField string
		check     func(t *testing.T, body map[string]any)
	}{
		{name: "status needs the token", method: "GET", path: "/api/breaker/ani", noAuth: true, wantCode: http.StatusUnauthorized},
		{name: "status of a bad agent name", method: "GET", path: "/api/breaker/no%20spaces", wantCode: http.StatusBadRequest, wantField: "agent"},
		{
			name: "an agent never halted is closed", method: "GET", path: "/api/breaker/ani", wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if body["state"] != "closed" || body["halted"] != false || body["event"] != nil || body["since"] != nil {
					t.Errorf("body %v, want closed, not halted, no event", body)
				}
			},
		},
		{name: "open needs the token", method: "POST", path: "/api/breaker/ani/open", body: breakerOpenBody, noAuth: true, wantCode: http.StatusUnauthorized},
		{name: "open without severity", method: "POST", path: "/api/breaker/ani/open", body: `{"reason": "x"}`, wantCode: http.StatusBadRequest, wantField: "severity"},
		{name: "open with an unknown severity", method: "POST", path: "/api/breaker/ani/open", body: `{"severity": "mild", "reason": "x"}`, wantCode: http.StatusBadRequest, wantField: "severity"},
		{name: "open without reason", method: "POST", path: "/api/breaker/ani/open", body: `{"severity": "safety"}`, wantCode: http.StatusBadRequest, wantField: "reason"},
		{name: "open with a reason that is not a string", method: "POST", path: "/api/breaker/ani/open", body: `{"severity": "safety", "reason": 7}`, wantCode: http.StatusBadRequest, wantField: "reason"},
		{name: "open with malformed JSON", method: "POST", path: "/api/breaker/ani/open", body: `{"severity":`, wantCode: http.StatusBadRequest, wantField: "body"},
		{name: "open with evidence that is not a list", method: "POST", path: "/api/breaker/ani/open", body: `{"severity": "safety", "reason": "x", "evidence": "one"}`, wantCode: http.StatusBadRequest, wantField: "evidence"},
		{
			name: "open halts the agent", method: "POST", path: "/api/breaker/ani/open", body: breakerOpenBody, wantCode: http.StatusCreated,
			check: func(t *testing.T, body map[string]any) {
				ev, _ := body["event"].(map[string]any)
				first = breakerEventID(body)
				if body["state"] != "open" || !strings.HasPrefix(first, "brk_") || ev["agent_id"] != "ani" || ev["severity"] != "safety" ||
					ev["reason"] != "tried to delete the ledger" || !recordedAs(ev["opened_by"], "aster") || ev["timestamp"] != "2025-03-01T12:00:00Z" || ev["resolved_at"] != nil {
					t.Errorf("body %v, want the open event", body)
				}
				if evidence, _ := ev["evidence"].([]any); len(evidence) != 1 || evidence[0] != "rm -rf ledger/" {
					t.Errorf("evidence %v, want [rm -rf ledger/]", ev["evidence"])
				}
			},
		},
		{
			name: "status answers open with the event", method: "GET", path: "/api/breaker/ani", wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if body["state"] != "open" || body["halted"] != true || breakerEventID(body) != first || body["since"] != "2025-03-01T12:00:00Z" {
					t.Errorf("body %v, want open and halted on %s", body, first)
				}
			},
		},
		{name: "open again is a conflict", method: "POST", path: "/api/breaker/ani/open", body: breakerOpenBody, wantCode: http.StatusConflict},
		{name: "verify while open is a conflict", method: "POST", path: "/api/breaker/ani/verify", body: `{"ok": true}`, wantCode: http.StatusConflict},
		{name: "verify needs the token", method: "POST", path: "/api/breaker/ani/verify", body: `{"ok": true}`, noAuth: true, wantCode: http.StatusUnauthorized},
		{
			name: "verify without ok", method: "POST", path: "/api/breaker/ani/verify", body: `{"note": "fine"}`, wantCode: http.StatusBadRequest, wantField: "ok",
			before: func(t *testing.T) {
				if _, err := fx.svc.Resume(ctx, first, "@alice:test"); err != nil {
					t.Fatalf("resume: %v", err)
				}
			},
		},
		{name: "failed verify without a note", method: "POST", path: "/api/breaker/ani/verify", body: `{"ok": false}`, wantCode: http.StatusBadRequest, wantField: "note"},
		{
			name: "status answers half-open", method: "GET", path: "/api/breaker/ani", wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if body["state"] != "half-open" || body["halted"] != false || breakerEventID(body) != first {
					t.Errorf("body %v, want half-open on %s", body, first)
				}
			},
		},
		{
			name: "failed verify opens a new linked event", method: "POST", path: "/api/breaker/ani/verify",
			body: `{"ok": false, "note": "still drifting", "by": "aster"}`, wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				ev, _ := body["event"].(map[string]any)
				if body["state"] != "open" || body["halted"] != true || breakerEventID(body) == first || ev["previous_id"] != first || ev["reason"] != "still drifting" {
					t.Errorf("body %v, want open on a new event after %s", body, first)
				}
			},
		},
		{
			name: "verify ok closes", method: "POST", path: "/api/breaker/ani/verify", body: `{"ok": true, "note": "bounds hold"}`, wantCode: http.StatusOK,
			before: func(t *testing.T) {
				st, err := fx.svc.Status(ctx, "ani")
				if err != nil {
					t.Fatalf("status: %v", err)
				}
				if _, err := fx.svc.Resume(ctx, st.EventID, "@alice:test"); err != nil {
					t.Fatalf("resume: %v", err)
				}
			},
			check: func(t *testing.T, body map[string]any) {
				if body["state"] != "closed" || body["halted"] != false {
					t.Errorf("body %v, want closed", body)
				}
				if ev, _ := body["event"].(map[string]any); ev["resolution"] != "verified" || ev["resolved_by"] != fx.supervisorID(t) {
					t.Errorf("event %v, want verified by the supervisor", ev)
				}
			},
		},
		{name: "verify while closed is a conflict", method: "POST", path: "/api/breaker/ani/verify", body: `{"ok": true}`, wantCode: http.StatusConflict},
		{name: "observation needs the token", method: "POST", path: "/api/breaker/ani/observations", body: `{}`, noAuth: true, wantCode: http.StatusUnauthorized},
		{name: "observation with an unknown urgency", method: "POST", path: "/api/breaker/ani/observations", body: `{"urgency": "urgent", "severity": "safety", "reason": "x"}`, wantCode: http.StatusBadRequest, wantField: "urgency"},
		{name: "observation without reason", method: "POST", path: "/api/breaker/ani/observations", body: `{"urgency": "critical", "severity": "safety"}`, wantCode: http.StatusBadRequest, wantField: "reason"},
		{
			name: "observation below the threshold", method: "POST", path: "/api/breaker/ani/observations",
			body: `{"urgency": "high", "severity": "identity", "reason": "slight drift"}`, wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if body["opened"] != false || body["state"] != "closed" || body["event"] != nil {
					t.Errorf("body %v, want not opened, closed", body)
				}
			},
		},
		{
			name: "critical observation opens", method: "POST", path: "/api/breaker/ani/observations",
			body: `{"urgency": "critical", "severity": "identity", "reason": "claims to be another agent", "evidence": ["I am Mos"]}`, wantCode: http.StatusCreated,
			check: func(t *testing.T, body map[string]any) {
				if ev, _ := body["event"].(map[string]any); body["opened"] != true || body["state"] != "open" || ev["severity"] != "identity" {
					t.Errorf("body %v, want opened with an identity event", body)
				}
			},
		},
		{
			name: "observation while open opens nothing new", method: "POST", path: "/api/breaker/ani/observations",
			body: `{"urgency": "critical", "severity": "safety", "reason": "more"}`, wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if body["opened"] != false || body["state"] != "open" {
					t.Errorf("body %v, want not opened, open", body)
				}
			},
		},
		{name: "events need the token", method: "GET", path: "/api/breaker/ani/events", noAuth: true, wantCode: http.StatusUnauthorized},
		{name: "events with limit 0", method: "GET", path: "/api/breaker/ani/events?limit=0", wantCode: http.StatusBadRequest, wantField: "limit"},
		{name: "events with a limit that is not a number", method: "GET", path: "/api/breaker/ani/events?limit=all", wantCode: http.StatusBadRequest, wantField: "limit"},
		{name: "events of a bad agent name", method: "GET", path: "/api/breaker/-ani/events", wantCode: http.StatusBadRequest, wantField: "agent"},
		{
			name: "events newest first with their history", method: "GET", path: "/api/breaker/ani/events", wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				evs, _ := body["events"].([]any)
				if len(evs) != 3 {
					t.Fatalf("%d events, want 3: %v", len(evs), body)
				}
				oldest, _ := evs[2].(map[string]any)
				history, _ := oldest["history"].([]any)
				if oldest["id"] != first || oldest["resolution"] != "superseded" || len(history) != 2 {
					t.Fatalf("oldest event %v, want %s superseded with open and resume in its history", oldest, first)
				}
				if resume, _ := history[1].(map[string]any); resume["action"] != "resume" || resume["from"] != "open" || resume["to"] != "half-open" || resume["actor"] != "@alice:test" {
					t.Errorf("history row %v, want the resume by @alice:test", resume)
				}
			},
		},
		{
			name: "events with a limit", method: "GET", path: "/api/breaker/ani/events?limit=1", wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if evs, _ := body["events"].([]any); len(evs) != 1 {
					t.Errorf("%d events, want 1", len(evs))
				}
			},
		},
		{
			name: "events of an agent never halted", method: "GET", path: "/api/breaker/eve/events", wantCode: http.StatusOK,
			check: func(t *testing.T, body map[string]any) {
				if evs, ok := body["events"].([]any); !ok || len(evs) != 0 {
					t.Errorf("events %v, want an empty list", body["events"])
				}
			},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.before != nil {
				st.before(t)
			}
			code, body := fx.call(t, st.method, st.path, st.body, !st.noAuth)
			if code != st.wantCode {
				t.Fatalf("%s %s: %d %v, want %d", st.method, st.path, code, body, st.wantCode)
			}
			if st.wantField != "" && body["field"] != st.wantField {
				t.Errorf("field %v (%v), want %q", body["field"], body["error"], st.wantField)
			}
			if code >= 400 && body["ok"] != false {
				t.Errorf("error body %v, want ok false", body)
			}
			if st.check != nil {
				st.check(t, body)
			}
		})
	}
}

// TestBreakerAPIOnlyTheSupervisorActs: an agent cannot open, observe or
// verify a breaker, its own half-open one included, and an orchestrator
// cannot either; each gets 403 naming the supervisor role and changes
// nothing. Any valid credential reads the breaker.
func TestBreakerAPIOnlyTheSupervisorActs(t *testing.T) {
	fx := newBreakerAPIFixture(t)
	ctx := context.Background()
	ev, err := fx.svc.Open(ctx, "ani", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "drift", By: "aster"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fx.svc.Resume(ctx, ev.ID, "@alice:test"); err != nil {
		t.Fatal(err)
	}
	before := breakerRows(t, fx)
	for _, tt := range []struct{ name, token, path, body string }{
		{"the agent verifies its own trial", fx.tokens.agent["ani"], "/api/breaker/ani/verify", `{"ok": true}`},
		{"the agent opens another's breaker", fx.tokens.agent["ani"], "/api/breaker/eve/open", breakerOpenBody},
		{"the agent reports an observation", fx.tokens.agent["ani"], "/api/breaker/eve/observations", `{"urgency":"critical","severity":"safety","reason":"x"}`},
		{"the orchestrator opens a breaker", fx.tokens.orchestrator, "/api/breaker/eve/open", breakerOpenBody},
		{"the orchestrator verifies", fx.tokens.orchestrator, "/api/breaker/ani/verify", `{"ok": true}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := fx.callWith(t, tt.token, "POST", tt.path, tt.body)
			roles, _ := body["needs_role"].([]any)
			if code != http.StatusForbidden || len(roles) != 1 || roles[0] != "supervisor" {
				t.Fatalf("%d %v, want 403 naming the supervisor role", code, body)
			}
			if after := breakerRows(t, fx); after != before {
				t.Errorf("rows %s after the refusal, %s before", after, before)
			}
		})
	}
	if code, body := fx.callWith(t, fx.tokens.agent["ani"], "GET", "/api/breaker/ani", ""); code != 200 || body["state"] != "half-open" {
		t.Errorf("the agent reading its breaker: %d %v, want 200 half-open", code, body)
	}
}

// breakerRows counts the breaker tables' rows and names the state, to
// show that a refused request changed nothing.
func breakerRows(t *testing.T, fx *breakerAPIFixture) string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, q := range []string{"SELECT COUNT(*) FROM breaker_event", "SELECT COUNT(*) FROM breaker_audit", "SELECT COUNT(*) FROM outbox"} {
		var n int
		if err := fx.store.DB.QueryRow(ctx, q).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, fmt.Sprint(n))
	}
	st, err := fx.svc.Status(ctx, "ani")
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(append(out, string(st.State)), "/")
}

// supervisorID is the ID of the fixture's supervisor credential.
func (fx *breakerAPIFixture) supervisorID(t *testing.T) string {
	t.Helper()
	p, err := fx.tokens.creds.Authenticate(context.Background(), fx.tokens.supervisor)
	if err != nil {
		t.Fatal(err)
	}
	return p.ID
}

// recordedAs reports whether an audit name is the supervisor's credential
// followed by the name by it gave.
func recordedAs(name any, by string) bool {
	s, _ := name.(string)
	return strings.HasPrefix(s, "cred_") && strings.HasSuffix(s, " ("+by+")")
}
