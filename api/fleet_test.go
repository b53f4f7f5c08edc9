package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

const fleetToken = "agent-service-token-0123456789"

// fleetAPIFixture is the API with the fleet routes on a real SQLite store
// and a manual clock.
type fleetAPIFixture struct {
	server *api.Server
	fleet  *fleet.Service
	store  *store.Store
	clock  *coretest.Clock
}

func newFleetAPIFixture(t testing.TB) *fleetAPIFixture {
	t.Helper()
	return newFleetAPIFixtureWith(t, coretest.NewClock(time.Date(2026, 4, 17, 0, 0, 1, 0, time.UTC)),
		fleet.AgentConfig{Name: "EVE"}, fleet.AgentConfig{Name: "ZEUS"}, fleet.AgentConfig{Name: "AUREA", Posture: fleet.PostureRequired})
}

// newFleetAPIFixtureWith builds the fixture with the given clock and agents;
// fx.clock is set only for a manual clock.
func newFleetAPIFixtureWith(t testing.TB, clock core.Clock, agents ...fleet.AgentConfig) *fleetAPIFixture {
	t.Helper()
	return newFleetAPIFixtureOn(t, store.SQLite, clock, agents...)
}

// newFleetAPIFixtureOn builds the fixture on a fresh store of engine.
func newFleetAPIFixtureOn(t testing.TB, engine string, clock core.Clock, agents ...fleet.AgentConfig) *fleetAPIFixture {
	t.Helper()
	st := testdb.OpenStore(t, engine)
	fleet, err := fleet.NewService(fleet.Config{Agents: agents}, "!fleet:test", fleet.Deps{
		Tx: st, Heartbeats: st.Heartbeats(), Journal: st.AgentJournal(), Attestations: st.Attestations(),
		Outbox: st.Outbox(), Clock: clock,
	})
	if err != nil {
		t.Fatalf("new fleet: %v", err)
	}
	server := api.New(api.Config{AgentToken: fleetToken}, zerolog.Nop(), func(context.Context) (map[string]any, error) { return map[string]any{}, nil })
	api.RegisterFleet(server, fleet)
	manual, _ := clock.(*coretest.Clock)
	return &fleetAPIFixture{server: server, fleet: fleet, store: st, clock: manual}
}

// call sends a request with the agent token (unless token says otherwise)
// and returns the status and decoded JSON body.
func (fx *fleetAPIFixture) call(t *testing.T, method, path, body string, token ...string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	auth := "Bearer " + fleetToken
	if len(token) > 0 {
		auth = token[0]
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	fx.server.Handler().ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: response %q is not JSON: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, out
}

// count counts the rows of a table.
func (fx *fleetAPIFixture) count(t testing.TB, table string) int {
	t.Helper()
	var n int
	if err := fx.store.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// jsonBody builds a JSON body from a map, with edits applied: a nil value
// deletes the key.
func jsonBody(base map[string]any, edits map[string]any) string {
	m := maps.Clone(base)
	for k, v := range edits {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

var heartbeatBase = map[string]any{
	"agent": "EVE", "cycle": "C-284", "timestamp": "2026-04-17T00:00:00Z", "mii": 0.97, "mode_self_report": "green", "notes": "all quiet",
}

func TestFleetAPIRequiresTheAgentToken(t *testing.T) {
	routes := []struct{ method, path, body string }{
		{"POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, nil)},
		{"POST", "/api/agents/journal", `{}`},
		{"GET", "/api/agents/journal?agent=EVE&cycle=C-284", ""},
		{"POST", "/api/attestations", `{}`},
		{"POST", "/api/vault/seal/attest", `{}`},
		{"POST", "/api/attestations/subjects", `{"subject_id":"seal-1","subject_hash":"h"}`},
		{"GET", "/api/attestations/subjects", ""},
		{"GET", "/api/attestations/subjects/seal-1", ""},
		{"GET", "/api/terminal/snapshot", ""},
	}
	auths := []struct{ name, header string }{
		{"no header", ""},
		{"wrong token", "Bearer agent-service-token-0123456788"},
		{"token prefix", "Bearer agent-service-token"},
		{"token without Bearer", fleetToken},
		{"basic auth", "Basic " + fleetToken},
	}
	fx := newFleetAPIFixture(t)
	for _, r := range routes {
		for _, a := range auths {
			t.Run(r.method+" "+r.path+" "+a.name, func(t *testing.T) {
				code, body := fx.call(t, r.method, r.path, r.body, a.header)
				if code != http.StatusUnauthorized || body["ok"] != false {
					t.Errorf("status %d %v, want 401", code, body)
				}
			})
		}
	}
	for _, table := range []string{"agent_heartbeat", "fleet_agent", "agent_journal", "attestation_subject", "attestation"} {
		if n := fx.count(t, table); n != 0 {
			t.Errorf("%s has %d rows after unauthorized requests, want 0", table, n)
		}
	}
}

func TestHeartbeatAPI(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantCode  int
		wantField string
	}{
		{name: "accepted", body: jsonBody(heartbeatBase, nil), wantCode: http.StatusOK},
		{name: "notes are optional", body: jsonBody(heartbeatBase, map[string]any{"notes": nil}), wantCode: http.StatusOK},
		{name: "timestamp with offset and fraction", body: jsonBody(heartbeatBase, map[string]any{"timestamp": "2026-04-17T02:00:00.5+02:00"}), wantCode: http.StatusOK},
		{name: "unknown field", body: jsonBody(heartbeatBase, map[string]any{"mood": "fine"}), wantCode: http.StatusBadRequest, wantField: "mood"},
		{name: "timestamp not RFC 3339", body: jsonBody(heartbeatBase, map[string]any{"timestamp": "2026-04-17 00:00:00"}), wantCode: http.StatusBadRequest, wantField: "timestamp"},
		{name: "timestamp missing", body: jsonBody(heartbeatBase, map[string]any{"timestamp": nil}), wantCode: http.StatusBadRequest, wantField: "timestamp"},
		{name: "mii missing", body: jsonBody(heartbeatBase, map[string]any{"mii": nil}), wantCode: http.StatusBadRequest, wantField: "mii"},
		{name: "mii out of range", body: jsonBody(heartbeatBase, map[string]any{"mii": 1.5}), wantCode: http.StatusBadRequest, wantField: "mii"},
		{name: "mii a string", body: jsonBody(heartbeatBase, map[string]any{"mii": "high"}), wantCode: http.StatusBadRequest, wantField: "mii"},
		{name: "mode unknown", body: jsonBody(heartbeatBase, map[string]any{"mode_self_report": "blue"}), wantCode: http.StatusBadRequest, wantField: "mode_self_report"},
		{name: "notes too long", body: jsonBody(heartbeatBase, map[string]any{"notes": strings.Repeat("n", 281)}), wantCode: http.StatusBadRequest, wantField: "notes"},
		{name: "agent not configured", body: jsonBody(heartbeatBase, map[string]any{"agent": "MALLORY"}), wantCode: http.StatusBadRequest, wantField: "agent"},
		{name: "cycle missing", body: jsonBody(heartbeatBase, map[string]any{"cycle": nil}), wantCode: http.StatusBadRequest, wantField: "cycle"},
		{name: "body over 64 KiB", body: jsonBody(heartbeatBase, map[string]any{"notes": strings.Repeat("n", 65<<10)}), wantCode: http.StatusBadRequest, wantField: "body"},
		{name: "malformed JSON", body: `{"agent": "EVE",`, wantCode: http.StatusBadRequest, wantField: "body"},
		{name: "empty body", body: ``, wantCode: http.StatusBadRequest, wantField: "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetAPIFixture(t)
			code, body := fx.call(t, "POST", "/api/agents/heartbeat", tt.body)
			if code != tt.wantCode {
				t.Fatalf("status %d %v, want %d", code, body, tt.wantCode)
			}
			if tt.wantField != "" {
				if body["field"] != tt.wantField {
					t.Errorf("error names field %v (%v), want %s", body["field"], body["error"], tt.wantField)
				}
				if n := fx.count(t, "agent_heartbeat"); n != 0 {
					t.Errorf("a rejected heartbeat stored %d rows", n)
				}
				return
			}
			want := map[string]any{"ok": true, "received_at": "2026-04-17T00:00:01Z", "next_expected_by": "2026-04-18T00:00:01Z"}
			if !maps.Equal(body, want) {
				t.Errorf("response = %v, want exactly %v", body, want)
			}
		})
	}
}

func TestHeartbeatAPIResubmissionReplaces(t *testing.T) {
	fx := newFleetAPIFixture(t)
	for i, mii := range []float64{0.5, 0.6, 0.7} {
		fx.clock.Advance(time.Minute)
		code, body := fx.call(t, "POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, map[string]any{"mii": mii}))
		if code != http.StatusOK {
			t.Fatalf("heartbeat %d: status %d %v", i, code, body)
		}
	}
	hb, err := fx.store.Heartbeats().Heartbeat(context.Background(), "EVE", "C-284")
	if n := fx.count(t, "agent_heartbeat"); n != 1 || err != nil || hb.MII != 0.7 {
		t.Errorf("%d rows, latest %+v (%v); want one row with mii 0.7", n, hb, err)
	}
	_, snap := fx.call(t, "GET", "/api/terminal/snapshot", "")
	var eve map[string]any
	for _, a := range snap["agents"].([]any) {
		if a := a.(map[string]any); a["agent"] == "EVE" {
			eve = a
		}
	}
	if eve["heartbeat_streak"] != float64(1) || eve["mii_current"] != 0.7 {
		t.Errorf("EVE in snapshot = %v, want streak 1 (no penalty, no double count) and mii 0.7", eve)
	}
}

var journalContent = "Narrative tripwire check: clean."

var journalBase = map[string]any{
	"agent": "EVE", "cycle": "C-284", "entry_id": "eve-C-284-001", "title": "Narrative tripwire check: clean",
	"content": journalContent, "content_signature": fleet.ContentSignature(journalContent), "signal_weight": 0.82,
	"verifiable_evidence": []any{
		map[string]any{"type": "pr", "url": "https://github.com/example/repo/pull/1"},
		map[string]any{"type": "metric", "source": "terminal-snapshot", "key": "active_tripwires", "value": 0},
	},
	"timestamp": "2026-04-17T00:15:00Z",
}

func TestJournalAPI(t *testing.T) {
	fx := newFleetAPIFixture(t)
	steps := []struct {
		name      string
		body      string
		wantCode  int
		wantField string
		wantRows  int
	}{
		{name: "first entry appends", body: jsonBody(journalBase, nil), wantCode: http.StatusCreated, wantRows: 1},
		{name: "same entry id in the cycle is a conflict", body: jsonBody(journalBase, nil), wantCode: http.StatusConflict, wantRows: 1},
		{name: "same entry id with other content too", body: jsonBody(journalBase, map[string]any{"content": "x", "content_signature": fleet.ContentSignature("x")}),
			wantCode: http.StatusConflict, wantRows: 1},
		{name: "a new entry id appends", body: jsonBody(journalBase, map[string]any{"entry_id": "eve-C-284-002"}), wantCode: http.StatusCreated, wantRows: 2},
		{name: "signature mismatch", body: jsonBody(journalBase, map[string]any{"entry_id": "eve-C-284-003", "content_signature": fleet.ContentSignature("other")}),
			wantCode: http.StatusBadRequest, wantField: "content_signature", wantRows: 2},
		{name: "unknown field in evidence", body: jsonBody(journalBase, map[string]any{"entry_id": "eve-C-284-003", "verifiable_evidence": []any{map[string]any{"type": "pr", "sha": "abc"}}}),
			wantCode: http.StatusBadRequest, wantField: "sha", wantRows: 2},
		{name: "timestamp not RFC 3339", body: jsonBody(journalBase, map[string]any{"entry_id": "eve-C-284-003", "timestamp": "17/04/2026"}),
			wantCode: http.StatusBadRequest, wantField: "timestamp", wantRows: 2},
		{name: "signal weight missing", body: jsonBody(journalBase, map[string]any{"entry_id": "eve-C-284-003", "signal_weight": nil}),
			wantCode: http.StatusBadRequest, wantField: "signal_weight", wantRows: 2},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			code, body := fx.call(t, "POST", "/api/agents/journal", s.body)
			if code != s.wantCode || (s.wantField != "" && body["field"] != s.wantField) {
				t.Errorf("status %d %v, want %d naming %q", code, body, s.wantCode, s.wantField)
			}
			if n := fx.count(t, "agent_journal"); n != s.wantRows {
				t.Errorf("%d journal rows, want %d", n, s.wantRows)
			}
		})
	}
	code, body := fx.call(t, "GET", "/api/agents/journal?agent=eve&cycle=C-284", "")
	entries, _ := body["entries"].([]any)
	if code != http.StatusOK || len(entries) != 2 {
		t.Fatalf("GET journal: status %d %v, want the two entries", code, body)
	}
	first := entries[0].(map[string]any)
	if first["content"] != journalContent || first["timestamp"] != "2026-04-17T00:15:00Z" || len(first["verifiable_evidence"].([]any)) != 2 {
		t.Errorf("first entry = %v, want it as written", first)
	}
}

const subjectHash = "sha256:5eal"

func attestationBody(agent, verdict, rationale, posture string, edits map[string]any) string {
	base := map[string]any{
		"seal_id": "seal-C-284-001", "agent": agent, "verdict": verdict, "rationale": rationale,
		"signature": fleet.AttestationSignature([]byte(fleetToken), subjectHash, verdict, rationale),
	}
	if posture != "" {
		base["posture"] = posture
	}
	return jsonBody(base, edits)
}

func TestAttestationAPI(t *testing.T) {
	fx := newFleetAPIFixture(t)
	good := attestationBody("EVE", "pass", "Reserve math checks out.", "", nil)
	sig := fleet.AttestationSignature([]byte(fleetToken), subjectHash, "pass", "Reserve math checks out.")
	flipped := []byte(sig)
	if flipped[0] == '0' {
		flipped[0] = '1'
	} else {
		flipped[0] = '0'
	}
	steps := []struct {
		name      string
		advance   time.Duration
		path      string
		body      string
		wantCode  int
		wantField string
	}{
		{name: "open the subject", path: "/api/attestations/subjects", body: `{"seal_id":"seal-C-284-001","seal_hash":"` + subjectHash + `","title":"Seal C-284"}`, wantCode: http.StatusCreated},
		{name: "opening it again is idempotent", path: "/api/attestations/subjects", body: `{"subject_id":"seal-C-284-001","subject_hash":"` + subjectHash + `"}`, wantCode: http.StatusOK},
		{name: "opening it with another hash conflicts", path: "/api/attestations/subjects", body: `{"subject_id":"seal-C-284-001","subject_hash":"sha256:other"}`, wantCode: http.StatusConflict},
		{name: "valid attestation", path: "/api/attestations", body: good, wantCode: http.StatusOK},
		{name: "at the seed's path with subject_id", path: "/api/vault/seal/attest",
			body: attestationBody("ZEUS", "reject", "No.", "", map[string]any{"seal_id": nil, "subject_id": "seal-C-284-001"}), wantCode: http.StatusOK},
		{name: "a flipped byte in the signature", path: "/api/attestations", body: attestationBody("EVE", "flag", "x", "", map[string]any{"signature": string(flipped)}), wantCode: http.StatusUnauthorized},
		{name: "posture required from AUREA", path: "/api/attestations", body: attestationBody("AUREA", "pass", "ok", "", nil), wantCode: http.StatusBadRequest, wantField: "posture"},
		{name: "posture from AUREA", path: "/api/attestations", body: attestationBody("AUREA", "pass", "ok", "stressed", nil), wantCode: http.StatusOK},
		{name: "posture forbidden for EVE", path: "/api/attestations", body: attestationBody("EVE", "flag", "x", "confident", nil), wantCode: http.StatusBadRequest, wantField: "posture"},
		{name: "seal_id and subject_id disagree", path: "/api/attestations", body: attestationBody("EVE", "flag", "x", "", map[string]any{"subject_id": "seal-other"}), wantCode: http.StatusBadRequest, wantField: "subject_id"},
		{name: "unknown field", path: "/api/attestations", body: attestationBody("EVE", "flag", "x", "", map[string]any{"seal_hash": subjectHash}), wantCode: http.StatusBadRequest, wantField: "seal_hash"},
		{name: "unknown subject", path: "/api/attestations", body: attestationBody("EVE", "flag", "x", "", map[string]any{"seal_id": "seal-none"}), wantCode: http.StatusNotFound},
		{name: "EVE changes her mind in the window", advance: 4 * time.Minute, path: "/api/attestations", body: attestationBody("EVE", "flag", "Second look.", "", nil), wantCode: http.StatusOK},
		{name: "after the window", advance: time.Minute, path: "/api/attestations", body: attestationBody("EVE", "reject", "Too late.", "", nil), wantCode: http.StatusGone},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			fx.clock.Advance(s.advance)
			code, body := fx.call(t, "POST", s.path, s.body)
			if code != s.wantCode || (s.wantField != "" && body["field"] != s.wantField) {
				t.Errorf("status %d %v, want %d naming %q", code, body, s.wantCode, s.wantField)
			}
		})
	}
	code, body := fx.call(t, "GET", "/api/attestations/subjects/seal-C-284-001", "")
	if code != http.StatusOK || body["subject_hash"] != subjectHash || body["title"] != "Seal C-284" {
		t.Fatalf("GET subject: %d %v", code, body)
	}
	var verdicts []string
	for _, a := range body["attestations"].([]any) {
		a := a.(map[string]any)
		verdicts = append(verdicts, fmt.Sprintf("%v:%v:%v", a["agent"], a["verdict"], a["posture"]))
	}
	if want := []string{"AUREA:pass:stressed", "EVE:flag:<nil>", "ZEUS:reject:<nil>"}; !slices.Equal(verdicts, want) {
		t.Errorf("attestations = %v, want %v (last in the window wins, nothing after)", verdicts, want)
	}
}

func TestAttestationAPIAfterTokenRotation(t *testing.T) {
	fx := newFleetAPIFixture(t)
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-C-284-001","subject_hash":"`+subjectHash+`","agents":["EVE"]}`); code != http.StatusCreated {
		t.Fatalf("open subject: %d %v", code, body)
	}
	const rotated = "rotated-agent-token-abcdefghij"
	fx.server.SetAgentToken(rotated)
	oldSigned := attestationBody("EVE", "pass", "ok", "", nil)
	if code, _ := fx.call(t, "POST", "/api/attestations", oldSigned); code != http.StatusUnauthorized {
		t.Errorf("old bearer token: status %d, want 401", code)
	}
	if code, _ := fx.call(t, "POST", "/api/attestations", oldSigned, "Bearer "+rotated); code != http.StatusUnauthorized {
		t.Errorf("new bearer token, signature with the old one: status %d, want 401", code)
	}
	newSigned := attestationBody("EVE", "pass", "ok", "", map[string]any{"signature": fleet.AttestationSignature([]byte(rotated), subjectHash, "pass", "ok")})
	if code, body := fx.call(t, "POST", "/api/attestations", newSigned, "Bearer "+rotated); code != http.StatusOK {
		t.Errorf("new token and signature: status %d %v, want 200", code, body)
	}
}

func TestSnapshotAPI(t *testing.T) {
	fx := newFleetAPIFixture(t)
	fx.fleet.AddSnapshotSection("breakers", func(context.Context) (any, error) { return map[string]string{"EVE": "closed"}, nil })
	if code, body := fx.call(t, "POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, nil)); code != http.StatusOK {
		t.Fatalf("heartbeat: %d %v", code, body)
	}
	if code, body := fx.call(t, "POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, map[string]any{"agent": "ZEUS", "mode_self_report": "red", "mii": 0.4})); code != http.StatusOK {
		t.Fatalf("heartbeat: %d %v", code, body)
	}
	if code, body := fx.call(t, "POST", "/api/agents/journal", jsonBody(journalBase, nil)); code != http.StatusCreated {
		t.Fatalf("journal: %d %v", code, body)
	}
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-1","subject_hash":"h"}`); code != http.StatusCreated {
		t.Fatalf("open subject: %d %v", code, body)
	}
	fx.clock.Advance(25 * time.Hour)
	code, body := fx.call(t, "GET", "/api/terminal/snapshot", "")
	if code != http.StatusOK {
		t.Fatalf("snapshot: %d %v", code, body)
	}
	if body["generated_at"] != "2026-04-18T01:00:01Z" || fmt.Sprint(body["breakers"]) != "map[EVE:closed]" {
		t.Errorf("snapshot = %v, want generated_at and the breakers section", body)
	}
	agents := body["agents"].([]any)
	got := map[string]map[string]any{}
	for _, a := range agents {
		a := a.(map[string]any)
		got[a["agent"].(string)] = a
	}
	want := map[string]map[string]any{
		"EVE": {"agent": "EVE", "status": "late", "heartbeat_last_at": "2026-04-17T00:00:01Z", "heartbeat_streak": 1.0,
			"journal_entry_count_current_cycle": 1.0, "attestations_pending": 0.0, "mii_current": 0.97, "mode": "green",
			"cycle": "C-284", "next_expected_by": "2026-04-18T00:00:01Z", "missed_heartbeats": 1.0, "notes": "all quiet"},
		"ZEUS": {"agent": "ZEUS", "status": "late", "heartbeat_last_at": "2026-04-17T00:00:01Z", "heartbeat_streak": 1.0,
			"journal_entry_count_current_cycle": 0.0, "attestations_pending": 0.0, "mii_current": 0.4, "mode": "red",
			"cycle": "C-284", "next_expected_by": "2026-04-18T00:00:01Z", "missed_heartbeats": 1.0, "notes": "all quiet"},
		"AUREA": {"agent": "AUREA", "status": "offline", "heartbeat_last_at": nil, "heartbeat_streak": 0.0,
			"journal_entry_count_current_cycle": 0.0, "attestations_pending": 0.0, "mii_current": nil,
			"next_expected_by": nil, "missed_heartbeats": 0.0},
	}
	for name, w := range want {
		if !maps.Equal(got[name], w) {
			t.Errorf("%s = %v\nwant %v", name, got[name], w)
		}
	}
	if order := []string{agents[0].(map[string]any)["agent"].(string), agents[1].(map[string]any)["agent"].(string)}; !slices.Equal(order, []string{"EVE", "ZEUS"}) {
		t.Errorf("order = %v, want the late agents (EVE, ZEUS) first", order)
	}
}

func TestSnapshotAPIPendingAttestations(t *testing.T) {
	fx := newFleetAPIFixture(t)
	for _, agent := range []string{"EVE", "ZEUS"} {
		if code, body := fx.call(t, "POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, map[string]any{"agent": agent})); code != http.StatusOK {
			t.Fatalf("heartbeat: %d %v", code, body)
		}
	}
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-C-284-001","subject_hash":"`+subjectHash+`"}`); code != http.StatusCreated ||
		fmt.Sprint(body["agents"]) != "[EVE ZEUS]" {
		t.Fatalf("open subject: %d %v, want it to await the quorum EVE and ZEUS", code, body)
	}
	if code, body := fx.call(t, "POST", "/api/attestations", attestationBody("ZEUS", "pass", "ok", "", nil)); code != http.StatusOK {
		t.Fatalf("attest: %d %v", code, body)
	}
	_, open := fx.call(t, "GET", "/api/attestations/subjects?agent=EVE", "")
	if subjects := open["subjects"].([]any); len(subjects) != 1 || subjects[0].(map[string]any)["subject_id"] != "seal-C-284-001" {
		t.Errorf("open subjects for EVE = %v, want seal-C-284-001", open)
	}
	_, snap := fx.call(t, "GET", "/api/terminal/snapshot", "")
	pending := map[string]any{}
	for _, a := range snap["agents"].([]any) {
		a := a.(map[string]any)
		pending[a["agent"].(string)] = a["attestations_pending"]
	}
	if want := map[string]any{"EVE": 1.0, "ZEUS": 0.0, "AUREA": 0.0}; !maps.Equal(pending, want) {
		t.Errorf("attestations_pending = %v, want %v", pending, want)
	}
}
