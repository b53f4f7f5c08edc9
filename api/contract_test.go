package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/internal/testkit/contract"
)

// checked is the server's handler with every request and answer checked
// against the OpenAPI document; a benchmark measures the server alone.
func checked(t testing.TB, s *api.Server) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return s.Handler()
	}
	return contract.Handler(t, api.OpenAPI(), s.Handler())
}

// TestOpenAPIDocumentIsServed: GET /api/openapi.json answers, without a
// token, the document the tests check against, and it validates as
// OpenAPI 3.1.
func TestOpenAPIDocumentIsServed(t *testing.T) {
	fx := newFleetAPIFixture(t)
	rec := httptest.NewRecorder()
	checked(t, fx.server).ServeHTTP(rec, httptest.NewRequest("GET", "/api/openapi.json", nil))
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET /api/openapi.json = %d %s", rec.Code, rec.Header().Get("Content-Type"))
	}
	if !bytes.Equal(rec.Body.Bytes(), api.OpenAPI()) {
		t.Error("the document served is not the one the tests check against")
	}
	if _, err := contract.Router(rec.Body.Bytes()); err != nil {
		t.Errorf("the document does not validate: %v", err)
	}
}

// TestRoutesMatchTheDocument: every route Jarvis serves under /api/ (and
// /healthz) is an operation of the document, and every operation is a
// route, so that neither can be added without the other.
func TestRoutesMatchTheDocument(t *testing.T) {
	s := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, nil)
	api.RegisterBreaker(s, nil, nil)
	api.RegisterFleet(s, nil, nil)
	api.RegisterAgents(s, nil)
	api.RegisterTripwires(s, nil)
	api.RegisterCards(s, nil, nil)
	api.RegisterCalendar(s, api.Calendar{})
	api.RegisterApprovals(s, nil, nil)
	api.RegisterAlertmanager(s, alertmanager.NewService(alertmanager.Config{}, alertmanager.Deps{}))
	api.RegisterSilences(s, nil, "", nil)
	var served []string
	for _, r := range s.Routes() {
		if _, path, _ := strings.Cut(r, " "); strings.HasPrefix(path, "/api/") || path == "/healthz" {
			served = append(served, r)
		}
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(served)
	slices.Sort(documented)
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("%s is served but not in the document", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("%s is in the document but not served", r)
		}
	}
}

// TestContractCatchesAMismatch: the check the API's tests run fails on an
// answer that does not fit the document or has a member it does not name,
// on a request the document refuses that was taken, and on a refusal that
// is not a problem.
func TestContractCatchesAMismatch(t *testing.T) {
	router, err := contract.Router(api.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	answer := func(code int, contentType, body string) *http.Response {
		return &http.Response{StatusCode: code, Header: http.Header{"Content-Type": {contentType}},
			Body: io.NopCloser(strings.NewReader(body))}
	}
	heartbeat := func(body string) *http.Request {
		r := httptest.NewRequest("POST", "/api/agents/heartbeat", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	good := `{"ok":true,"received_at":"2026-04-17T00:00:01Z","next_expected_by":"2026-04-18T00:00:01Z","breaker_state":"closed","halted":false}`
	tests := []struct {
		name    string
		req     string
		resp    *http.Response
		wantErr bool
	}{
		{name: "a heartbeat answered as documented", req: `{"mii":0.5}`, resp: answer(200, "application/json", good)},
		{name: "a breaker state the document does not have", req: `{}`, wantErr: true,
			resp: answer(200, "application/json", strings.Replace(good, "closed", "halted", 1))},
		{name: "an answer without next_expected_by", req: `{}`, wantErr: true,
			resp: answer(200, "application/json", `{"ok":true,"received_at":"2026-04-17T00:00:01Z","breaker_state":"closed","halted":false}`)},
		{name: "an answer with a member the document does not name", req: `{}`, wantErr: true,
			resp: answer(200, "application/json", strings.Replace(good, `"ok":true`, `"ok":true,"mood":"fine"`, 1))},
		{name: "a bad mii taken", req: `{"mii":"high"}`, resp: answer(200, "application/json", good), wantErr: true},
		{name: "a bad mii refused", req: `{"mii":"high"}`,
			resp: answer(400, api.ProblemContentType, `{"type":"urn:jarvis:problem:validation","title":"Bad Request","status":400,"detail":"mii: must be a number between 0 and 1"}`)},
		{name: "a refusal in plain text", req: `{}`, resp: answer(404, "text/plain", "404 page not found"), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := contract.Exchange(router, heartbeat(tt.req), []byte(tt.req), tt.resp)
			if (err != nil) != tt.wantErr {
				t.Errorf("Exchange() = %v, want an error: %v", err, tt.wantErr)
			}
		})
	}
}

// TestBadFieldsAllAtOnce: a heartbeat with three bad fields is refused
// once, as a problem naming all three with what each should be, in JSON's
// words; nothing is stored.
func TestBadFieldsAllAtOnce(t *testing.T) {
	fx := newFleetAPIFixture(t)
	code, body := fx.call(t, "POST", "/api/agents/heartbeat", `{"mii": 1.5, "mode_self_report": "blue", "spend": {"cost": "ten"}}`)
	if code != http.StatusBadRequest || body["type"] != "urn:jarvis:problem:validation" || body["status"] != 400.0 {
		t.Fatalf("answer %d %v, want a 400 validation problem", code, body)
	}
	want := []any{
		map[string]any{"field": "mii", "detail": "must be a number between 0 and 1"},
		map[string]any{"field": "mode_self_report", "detail": "must be one of green, yellow or red"},
		map[string]any{"field": "spend.cost", "detail": "must be a number between 0 and 1000000000"},
	}
	if !reflect.DeepEqual(body["errors"], want) {
		t.Errorf("errors %v, want %v", body["errors"], want)
	}
	if n := fx.count(t, "agent_heartbeat"); n != 0 {
		t.Errorf("a refused heartbeat stored %d rows", n)
	}
}

// TestUnroutedAnswersAreProblems: a path no route takes is a 404 problem,
// a method a route does not take a 405 problem with Allow.
func TestUnroutedAnswersAreProblems(t *testing.T) {
	fx := newFleetAPIFixture(t)
	tests := []struct {
		name, method, path string
		code               int
		kind, allow        string
	}{
		{name: "no such route", method: "GET", path: "/api/agents/heartbeats", code: 404, kind: "not-found"},
		{name: "wrong method", method: "DELETE", path: "/api/agents/heartbeat", code: 405, kind: "method-not-allowed", allow: "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			checked(t, fx.server).ServeHTTP(rec, httptest.NewRequest(tt.method, tt.path, nil))
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			if rec.Code != tt.code || rec.Header().Get("Content-Type") != api.ProblemContentType ||
				body["type"] != "urn:jarvis:problem:"+tt.kind || body["status"] != float64(tt.code) || body["instance"] != tt.path {
				t.Errorf("answer %d %s %v, want a %d %s problem", rec.Code, rec.Header().Get("Content-Type"), body, tt.code, tt.kind)
			}
			if got := rec.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

// TestEmptyHeartbeat: with an agent token and no body at all, a heartbeat
// is taken, and the fleet shows the agent up with every default: mii 1,
// mode green, the UTC date as its cycle.
func TestEmptyHeartbeat(t *testing.T) {
	fx := newFleetAPIFixture(t)
	code, body := fx.call(t, "POST", "/api/agents/heartbeat", "")
	if code != http.StatusOK || body["ok"] != true {
		t.Fatalf("empty heartbeat: %d %v", code, body)
	}
	code, snap := fx.call(t, "GET", "/api/terminal/snapshot", "")
	if code != http.StatusOK {
		t.Fatalf("snapshot: %d %v", code, snap)
	}
	agents, _ := snap["agents"].([]any)
	for _, a := range agents {
		a := a.(map[string]any)
		if a["agent"] != "EVE" {
			continue
		}
		if a["mii_current"] != 1.0 || a["mode"] != "green" || a["cycle"] != "2026-04-17" || a["heartbeat_last_at"] != "2026-04-17T00:00:01Z" {
			t.Errorf("EVE in the fleet: %v, want mii 1, green, cycle 2026-04-17, last heard 2026-04-17T00:00:01Z", a)
		}
		return
	}
	t.Errorf("EVE is not in the fleet: %v", snap)
}

// TestAnotherAgentsReportIsForbiddenFirst: an agent's token sending a
// report for another agent is told it may not (403), whatever else is
// wrong with the report, and nothing is stored.
func TestAnotherAgentsReportIsForbiddenFirst(t *testing.T) {
	fx := newFleetAPIFixture(t)
	code, body := fx.call(t, "POST", "/api/agents/journal", `{"agent": "ZEUS", "title": 7, "signal_weight": 0.9, "timestamp": "2026-04-17T00:00:00Z"}`,
		"Bearer "+fx.tokens.agent["EVE"])
	if code != http.StatusForbidden || body["type"] != "urn:jarvis:problem:forbidden" || body["token_agent"] != "EVE" {
		t.Errorf("EVE's token reporting for ZEUS: %d %v, want 403 naming EVE as the token's agent", code, body)
	}
	if n := fx.count(t, "agent_journal"); n != 0 {
		t.Errorf("%d journal rows stored", n)
	}
}
