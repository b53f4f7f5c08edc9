package api_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// fleetAPIFixture is the API with the fleet routes on a real SQLite store
// and a manual clock, with a token for every agent and role.
type fleetAPIFixture struct {
	server   *api.Server
	fleet    *fleet.Service
	breakers *breaker.Service
	store    *store.Store
	clock    *coretest.Clock
	tokens   *apiTokens
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
	return newFleetAPIFixtureOn(t, store.SQLite, api.Config{}, clock, agents...)
}

// newFleetAPIFixtureOn builds the fixture on a fresh store of engine, its
// server configured by cfg with the agent token set.
func newFleetAPIFixtureOn(t testing.TB, engine string, cfg api.Config, clock core.Clock, agents ...fleet.AgentConfig) *fleetAPIFixture {
	t.Helper()
	st := testdb.OpenStore(t, engine)
	w := services.Wiring{Store: st, Clock: clock, Room: "!fleet:test"}
	breakers := w.Breakers(testconfig.Breaker())
	incidents := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	fleet := w.Fleet(t, fleet.Config{Agents: agents}, func(d *fleet.Deps) { d.Breakers, d.Incidents = breakers, incidents })
	names := make([]string, len(agents))
	for i, a := range agents {
		names[i] = a.Name
	}
	tokens := issueTokens(t, st, names...)
	server := api.New(cfg, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterFleet(server, fleet, breakers)
	manual, _ := clock.(*coretest.Clock)
	return &fleetAPIFixture{server: server, fleet: fleet, breakers: breakers, store: st, clock: manual, tokens: tokens}
}

// tokenFor is the token of whoever sends body to path: the orchestrator
// opens subjects; an agent sends the rest, the one the body names or else
// EVE.
func (fx *fleetAPIFixture) tokenFor(path, body string) string {
	if strings.HasPrefix(path, "/api/attestations/subjects") {
		return fx.tokens.orchestrator
	}
	var named struct {
		Agent string `json:"agent"`
	}
	_ = json.Unmarshal([]byte(body), &named)
	if token, ok := fx.tokens.agent[named.Agent]; ok {
		return token
	}
	return fx.tokens.agent["EVE"]
}

// call sends a request with the token of whoever sends it (tokenFor),
// unless token gives the Authorization header, and returns the status and
// decoded JSON body.
func (fx *fleetAPIFixture) call(t *testing.T, method, path, body string, token ...string) (int, map[string]any) {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	auth := "Bearer " + fx.tokenFor(path, body)
	if len(token) > 0 {
		auth = token[0]
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	checked(t, fx.server).ServeHTTP(rec, req)
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("%s %s: response %q is not JSON: %v", method, path, rec.Body.String(), err)
	}
	return rec.Code, out
}

// TestHeartbeatRetrySpendOnce: an agent that got no answer sends the same
// heartbeat again, and the day's spend counts it once, on both engines,
// whether the copy comes after the first was stored or beside it in one
// batch; the agent's next heartbeat, with the same spend and a later
// timestamp, counts.
func TestHeartbeatRetrySpendOnce(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			clock := coretest.NewClock(time.Date(2026, 4, 17, 9, 0, 0, 0, time.UTC))
			fx := newFleetAPIFixtureOn(t, engine, api.Config{}, clock, fleet.AgentConfig{Name: "EVE"})
			beat := func(at string, cost float64) string {
				return fmt.Sprintf(`{"agent":"EVE","cycle":"C-1","timestamp":%q,"mii":0.9,"mode_self_report":"green",`+
					`"boot_id":"b-1","spend":{"tokens_in":100,"tokens_out":10,"cost":%v,"currency":"USD"}}`, at, cost)
			}
			send := func(bodies ...string) {
				t.Helper()
				codes := make([]int, len(bodies))
				var wg sync.WaitGroup
				for i, body := range bodies {
					wg.Go(func() { codes[i], _ = fx.call(t, http.MethodPost, "/api/agents/heartbeat", body) })
				}
				wg.Wait()
				for i, code := range codes {
					if code != http.StatusOK {
						t.Fatalf("heartbeat %d of %d: %d", i+1, len(bodies), code)
					}
				}
			}
			spent := func(want float64, wantTokens int64) {
				t.Helper()
				rows, err := fx.fleet.FleetStatus(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				i := slices.IndexFunc(rows, func(r fleet.AgentReport) bool { return r.Agent == "EVE" })
				if i < 0 {
					t.Fatalf("no row for EVE in %+v", rows)
				}
				got := rows[i].SpendToday
				if got.Cost != want || got.TokensIn != wantTokens {
					t.Errorf("spent today: %v USD, %d tokens in; want %v USD, %d tokens", got.Cost, got.TokensIn, want, wantTokens)
				}
			}

			first := beat("2026-04-17T09:00:00Z", 1.25)
			send(first)
			spent(1.25, 100)
			send(first)
			spent(1.25, 100)
			second := beat("2026-04-17T09:05:00Z", 0.5)
			send(second, second, second)
			spent(1.75, 200)
			send(beat("2026-04-17T09:10:00Z", 0.5))
			spent(2.25, 300)
		})
	}
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

func TestFleetAPIRequiresAValidToken(t *testing.T) {
	fx := newFleetAPIFixture(t)
	eve := fx.tokens.agent["EVE"]
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
		{"wrong token", "Bearer " + eve[:len(eve)-1] + "x"},
		{"token prefix", "Bearer " + eve[:20]},
		{"token without Bearer", eve},
		{"basic auth", "Basic " + eve},
	}
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
		{name: "an unknown field is ignored", body: jsonBody(heartbeatBase, map[string]any{"mood": "fine"}), wantCode: http.StatusOK},
		{name: "timestamp not RFC 3339", body: jsonBody(heartbeatBase, map[string]any{"timestamp": "2026-04-17 00:00:00"}), wantCode: http.StatusBadRequest, wantField: "timestamp"},
		{name: "timestamp left out: when received", body: jsonBody(heartbeatBase, map[string]any{"timestamp": nil}), wantCode: http.StatusOK},
		{name: "mii left out: 1", body: jsonBody(heartbeatBase, map[string]any{"mii": nil}), wantCode: http.StatusOK},
		{name: "mii out of range", body: jsonBody(heartbeatBase, map[string]any{"mii": 1.5}), wantCode: http.StatusBadRequest, wantField: "mii"},
		{name: "mii a string", body: jsonBody(heartbeatBase, map[string]any{"mii": "high"}), wantCode: http.StatusBadRequest, wantField: "mii"},
		{name: "mode unknown", body: jsonBody(heartbeatBase, map[string]any{"mode_self_report": "blue"}), wantCode: http.StatusBadRequest, wantField: "mode_self_report"},
		{name: "notes too long", body: jsonBody(heartbeatBase, map[string]any{"notes": strings.Repeat("n", 281)}), wantCode: http.StatusBadRequest, wantField: "notes"},
		{name: "another agent, configured or not", body: jsonBody(heartbeatBase, map[string]any{"agent": "MALLORY", "mii": "high"}), wantCode: http.StatusForbidden},
		{name: "cycle left out: the UTC date", body: jsonBody(heartbeatBase, map[string]any{"cycle": nil}), wantCode: http.StatusOK},
		{name: "body over 64 KiB", body: jsonBody(heartbeatBase, map[string]any{"notes": strings.Repeat("n", 65<<10)}), wantCode: http.StatusBadRequest, wantField: "body"},
		{name: "malformed JSON", body: `{"agent": "EVE",`, wantCode: http.StatusBadRequest, wantField: "body"},
		{name: "empty body: every field has its default", body: ``, wantCode: http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newFleetAPIFixture(t)
			code, body := fx.call(t, "POST", "/api/agents/heartbeat", tt.body)
			if code != tt.wantCode {
				t.Fatalf("status %d %v, want %d", code, body, tt.wantCode)
			}
			if tt.wantCode != http.StatusOK {
				if body["field"] != tt.wantField && tt.wantField != "" {
					t.Errorf("error names field %v (%v), want %s", body["field"], body["error"], tt.wantField)
				}
				if n := fx.count(t, "agent_heartbeat"); n != 0 {
					t.Errorf("a rejected heartbeat stored %d rows", n)
				}
				return
			}
			want := map[string]any{"ok": true, "received_at": "2026-04-17T00:00:01Z", "next_expected_by": "2026-04-18T00:00:01Z",
				"breaker_state": "closed", "halted": false}
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
		{name: "evidence without its type", body: jsonBody(journalBase, map[string]any{"entry_id": "eve-C-284-003", "verifiable_evidence": []any{map[string]any{"sha": "abc"}}}),
			wantCode: http.StatusBadRequest, wantField: "verifiable_evidence[0].type", wantRows: 2},
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

const (
	subjectHash = "sha256:5eal"
	// attestedAt is the time every test attestation says it was signed.
	attestedAt = "2026-04-17T00:00:00Z"
)

// sign signs an attestation as the bearer of token does.
func sign(token, agent, subject, verdict, rationale string) string {
	return credential.SignAttestation(credential.SigningKey(token), agent, subject, subjectHash, verdict, attestedAt, rationale)
}

func (fx *fleetAPIFixture) attestationBody(agent, verdict, rationale, posture string, edits map[string]any) string {
	base := map[string]any{
		"seal_id": "seal-C-284-001", "agent": agent, "verdict": verdict, "rationale": rationale, "timestamp": attestedAt,
		"signature": sign(fx.tokens.agent[agent], agent, "seal-C-284-001", verdict, rationale),
	}
	if posture != "" {
		base["posture"] = posture
	}
	return jsonBody(base, edits)
}

func TestAttestationAPI(t *testing.T) {
	fx := newFleetAPIFixture(t)
	good := fx.attestationBody("EVE", "pass", "Reserve math checks out.", "", nil)
	sig := sign(fx.tokens.agent["EVE"], "EVE", "seal-C-284-001", "pass", "Reserve math checks out.")
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
			body: fx.attestationBody("ZEUS", "reject", "No.", "", map[string]any{"seal_id": nil, "subject_id": "seal-C-284-001"}), wantCode: http.StatusOK},
		{name: "a flipped byte in the signature", path: "/api/attestations", body: fx.attestationBody("EVE", "flag", "x", "", map[string]any{"signature": string(flipped)}), wantCode: http.StatusUnauthorized},
		{name: "posture required from AUREA", path: "/api/attestations", body: fx.attestationBody("AUREA", "pass", "ok", "", nil), wantCode: http.StatusBadRequest, wantField: "posture"},
		{name: "posture from AUREA", path: "/api/attestations", body: fx.attestationBody("AUREA", "pass", "ok", "stressed", nil), wantCode: http.StatusOK},
		{name: "posture forbidden for EVE", path: "/api/attestations", body: fx.attestationBody("EVE", "flag", "x", "confident", nil), wantCode: http.StatusBadRequest, wantField: "posture"},
		{name: "seal_id and subject_id disagree", path: "/api/attestations", body: fx.attestationBody("EVE", "flag", "x", "", map[string]any{"subject_id": "seal-other"}), wantCode: http.StatusBadRequest, wantField: "subject_id"},
		{name: "verdict not a string", path: "/api/attestations", body: fx.attestationBody("EVE", "flag", "x", "", map[string]any{"verdict": true}), wantCode: http.StatusBadRequest, wantField: "verdict"},
		{name: "unknown subject", path: "/api/attestations", body: fx.attestationBody("EVE", "flag", "x", "", map[string]any{"seal_id": "seal-none"}), wantCode: http.StatusNotFound},
		{name: "EVE changes her mind in the window", advance: 4 * time.Minute, path: "/api/attestations", body: fx.attestationBody("EVE", "flag", "Second look.", "", nil), wantCode: http.StatusOK},
		{name: "after the window", advance: time.Minute, path: "/api/attestations", body: fx.attestationBody("EVE", "reject", "Too late.", "", nil), wantCode: http.StatusGone},
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
	ctx := context.Background()
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-C-284-001","subject_hash":"`+subjectHash+`","agents":["EVE"]}`); code != http.StatusCreated {
		t.Fatalf("open subject: %d %v", code, body)
	}
	old := fx.tokens.agent["EVE"]
	rotated, next, err := fx.tokens.creds.Issue(ctx, credential.Agent, "EVE")
	if err != nil {
		t.Fatal(err)
	}
	list, err := fx.tokens.creds.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list {
		if c.Agent == "EVE" && c.ID != next.ID {
			if err := fx.tokens.creds.Revoke(ctx, c.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	oldSigned := fx.attestationBody("EVE", "pass", "ok", "", nil)
	if code, _ := fx.call(t, "POST", "/api/attestations", oldSigned, "Bearer "+old); code != http.StatusUnauthorized {
		t.Errorf("old bearer token: status %d, want 401", code)
	}
	if code, _ := fx.call(t, "POST", "/api/attestations", oldSigned, "Bearer "+rotated); code != http.StatusUnauthorized {
		t.Errorf("new bearer token, signature with the old one: status %d, want 401", code)
	}
	newSigned := fx.attestationBody("EVE", "pass", "ok", "", map[string]any{"signature": sign(rotated, "EVE", "seal-C-284-001", "pass", "ok")})
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
	if code, body := fx.call(t, "POST", "/api/attestations", fx.attestationBody("ZEUS", "pass", "ok", "", nil)); code != http.StatusOK {
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

// TestFleetAPIAgentsReportForThemselves: EVE's token cannot send a
// heartbeat, a journal entry or an attestation as ZEUS; each gets 403
// naming the agent the token is for, and nothing is stored. The
// orchestrator's token cannot report for any agent.
func TestFleetAPIAgentsReportForThemselves(t *testing.T) {
	fx := newFleetAPIFixture(t)
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-C-284-001","subject_hash":"`+subjectHash+`"}`); code != http.StatusCreated {
		t.Fatalf("open subject: %d %v", code, body)
	}
	eve := "Bearer " + fx.tokens.agent["EVE"]
	for _, tt := range []struct{ name, path, body, auth, tokenAgent string }{
		{"heartbeat as ZEUS", "/api/agents/heartbeat", jsonBody(heartbeatBase, map[string]any{"agent": "ZEUS"}), eve, "EVE"},
		{"journal as ZEUS", "/api/agents/journal", jsonBody(journalBase, map[string]any{"agent": "ZEUS"}), eve, "EVE"},
		{"attestation as ZEUS, signed with EVE's key", "/api/attestations",
			fx.attestationBody("ZEUS", "pass", "ok", "", map[string]any{"signature": sign(fx.tokens.agent["EVE"], "ZEUS", "seal-C-284-001", "pass", "ok")}), eve, "EVE"},
		{"heartbeat with the orchestrator's token", "/api/agents/heartbeat", jsonBody(heartbeatBase, nil), "Bearer " + fx.tokens.orchestrator, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := fx.call(t, "POST", tt.path, tt.body, tt.auth)
			roles, _ := body["needs_role"].([]any)
			if code != http.StatusForbidden || len(roles) != 1 || roles[0] != "agent" || body["token_agent"] != nilIfEmpty(tt.tokenAgent) {
				t.Fatalf("%d %v, want 403 needing an agent token (token_agent %q)", code, body, tt.tokenAgent)
			}
			if tt.tokenAgent != "" && !strings.Contains(body["error"].(string), "reports for agent EVE only") {
				t.Errorf("error %q does not say the token is EVE's", body["error"])
			}
		})
	}
	for _, table := range []string{"agent_heartbeat", "agent_journal", "attestation", "attestation_signature"} {
		if n := fx.count(t, table); n != 0 {
			t.Errorf("%s has %d rows after the refused requests, want 0", table, n)
		}
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestAttestationAPIReplayAndRetarget: a signature accepted once is
// refused again, also spelled with the prefix or in capitals, and a
// signature made for one subject does not verify on another; none of them
// changes the stored attestations.
func TestAttestationAPIReplayAndRetarget(t *testing.T) {
	fx := newFleetAPIFixture(t)
	for _, id := range []string{"seal-C-284-001", "seal-C-284-002"} {
		if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"`+id+`","subject_hash":"`+subjectHash+`"}`); code != http.StatusCreated {
			t.Fatalf("open subject: %d %v", code, body)
		}
	}
	first := fx.attestationBody("EVE", "pass", "ok", "", nil)
	if code, body := fx.call(t, "POST", "/api/attestations", first); code != http.StatusOK {
		t.Fatalf("first attestation: %d %v", code, body)
	}
	sig := sign(fx.tokens.agent["EVE"], "EVE", "seal-C-284-001", "pass", "ok")
	for _, tt := range []struct {
		name string
		body string
		code int
	}{
		{"the same request again", first, http.StatusConflict},
		{"the signature with its prefix", fx.attestationBody("EVE", "pass", "ok", "", map[string]any{"signature": "hmac-sha256:" + sig}), http.StatusConflict},
		{"the signature in capitals", fx.attestationBody("EVE", "pass", "ok", "", map[string]any{"signature": strings.ToUpper(sig)}), http.StatusConflict},
		{"the signature on another subject", fx.attestationBody("EVE", "pass", "ok", "", map[string]any{"seal_id": "seal-C-284-002"}), http.StatusUnauthorized},
		{"another timestamp under the old signature", fx.attestationBody("EVE", "pass", "ok", "", map[string]any{"timestamp": "2026-04-17T00:00:30Z"}), http.StatusUnauthorized},
		{"no timestamp", fx.attestationBody("EVE", "pass", "ok", "", map[string]any{"timestamp": nil}), http.StatusBadRequest},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, body := fx.call(t, "POST", "/api/attestations", tt.body)
			if code != tt.code {
				t.Fatalf("%d %v, want %d", code, body, tt.code)
			}
			if n, m := fx.count(t, "attestation"), fx.count(t, "attestation_signature"); n != 1 || m != 1 {
				t.Errorf("%d attestations and %d signatures after the refusal, want 1 and 1", n, m)
			}
		})
	}
}

// TestAttestationAPITestVector posts an attestation signed by hand: the
// token, the fields and the expected signature below were computed with
// openssl, independently of Jarvis:
//
//	key=$(printf '%s' 'jarvis attestation key v1' | openssl dgst -sha256 -hmac "$TOKEN")
//	printf 'jarvis-attestation-v1\nEVE\nseal-C-284-001\nsha256:5eal\npass\n2026-04-17T00:00:00Z\nReserve math checks out.' |
//	    openssl dgst -sha256 -mac HMAC -macopt hexkey:$key
func TestAttestationAPITestVector(t *testing.T) {
	const (
		token      = "jat_00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"
		tokenHash  = "78dba1801228424d3c229c2a25fb90aee20ff06badad621d68eadda55dd32599"
		signingKey = "9e7ed5323ce31d37aa0d98cec916308e1a4cd7cd9b2db4a5f379db55b9054de5"
		signature  = "3e1b6af8e58b2aaf3f60d77fe11ced1bf33a4878c7f37911cc0026f4ef609689"
	)
	fx := newFleetAPIFixture(t)
	key, _ := hex.DecodeString(signingKey)
	if got := hex.EncodeToString(credential.SigningKey(token)); got != signingKey {
		t.Errorf("SigningKey = %s, want %s", got, signingKey)
	}
	cred := credential.Credential{ID: "cred_vector", Role: credential.Agent, Agent: "EVE", CreatedAt: time.Unix(0, 0)}
	if err := fx.store.Credentials().InsertCredential(context.Background(), cred, tokenHash, key); err != nil {
		t.Fatal(err)
	}
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-C-284-001","subject_hash":"sha256:5eal"}`); code != http.StatusCreated {
		t.Fatalf("open subject: %d %v", code, body)
	}
	body := `{"seal_id": "seal-C-284-001", "agent": "EVE", "verdict": "pass", "rationale": "Reserve math checks out.",
		"timestamp": "2026-04-17T00:00:00Z", "signature": "` + signature + `"}`
	if code, resp := fx.call(t, "POST", "/api/attestations", body, "Bearer "+token); code != http.StatusOK {
		t.Fatalf("the test vector: %d %v, want 200", code, resp)
	}
}

// TestFleetAPIHaltedAgent: while EVE's breaker is open her heartbeats and
// pings are taken and their answers tell her to stop her turn, and every
// write she makes (a journal entry, an attestation at either address) is
// refused with 423 naming the breaker event, nothing of it stored.
func TestFleetAPIHaltedAgent(t *testing.T) {
	fx := newFleetAPIFixture(t)
	if code, body := fx.call(t, "POST", "/api/attestations/subjects", `{"subject_id":"seal-C-284-001","subject_hash":"`+subjectHash+`"}`); code != http.StatusCreated {
		t.Fatalf("open subject: %d %v", code, body)
	}
	if code, body := fx.call(t, "POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, nil)); code != http.StatusOK || body["halted"] != false || body["instruction"] != nil {
		t.Errorf("heartbeat before the halt: %d %v, want halted false and no instruction", code, body)
	}
	ev, err := fx.breakers.Open(context.Background(), "EVE", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "drift", By: "aster"})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/api/agents/heartbeat", "/api/ping"} {
		code, body := fx.call(t, "POST", path, jsonBody(heartbeatBase, nil), "Bearer "+fx.tokens.agent["EVE"])
		if code != http.StatusOK || body["breaker_state"] != "open" || body["halted"] != true || body["instruction"] != "halted: stop your turn" {
			t.Errorf("%s while halted: %d %v, want 200, breaker_state open, halted and the instruction to stop", path, code, body)
		}
	}
	writes := []struct{ name, path, body, table string }{
		{"journal", "/api/agents/journal", jsonBody(journalBase, nil), "agent_journal"},
		{"attestation", "/api/attestations", fx.attestationBody("EVE", "pass", "ok", "", nil), "attestation"},
		{"attestation at the seal address", "/api/vault/seal/attest", fx.attestationBody("EVE", "flag", "hm", "", nil), "attestation"},
	}
	for _, w := range writes {
		t.Run(w.name, func(t *testing.T) {
			code, body := fx.call(t, "POST", w.path, w.body, "Bearer "+fx.tokens.agent["EVE"])
			if code != http.StatusLocked || body["breaker_event"] != ev.ID || body["type"] != "urn:jarvis:problem:breaker-open" {
				t.Errorf("while halted: %d %v, want 423 breaker-open naming %s", code, body, ev.ID)
			}
			if n := fx.count(t, w.table); n != 0 {
				t.Errorf("%d %s rows, want 0", n, w.table)
			}
		})
	}
}

// TestFleetAPIHaltedUnderAnySpelling: the supervisor opens the breaker of
// "eve"; it holds the agent configured as EVE, whose journal entry is
// refused and whose heartbeat says so.
func TestFleetAPIHaltedUnderAnySpelling(t *testing.T) {
	fx := newFleetAPIFixture(t)
	api.RegisterBreaker(fx.server, fx.breakers, fx.fleet)
	code, opened := fx.call(t, "POST", "/api/breaker/eve/open", `{"severity": "safety", "reason": "drift"}`, "Bearer "+fx.tokens.supervisor)
	if code != http.StatusCreated {
		t.Fatalf("open: %d %v", code, opened)
	}
	if code, body := fx.call(t, "POST", "/api/agents/journal", jsonBody(journalBase, nil)); code != http.StatusLocked {
		t.Errorf("EVE's journal while eve is halted: %d %v, want 423", code, body)
	}
	if code, body := fx.call(t, "POST", "/api/agents/heartbeat", jsonBody(heartbeatBase, map[string]any{"agent": "eve"})); code != http.StatusOK || body["breaker_state"] != "open" {
		t.Errorf("heartbeat as eve: %d %v, want breaker_state open", code, body)
	}
}

// TestAgentWritesFenced: an agent's heartbeat and journal entry that reach
// a Jarvis whose lease was lost on the way are refused by the store's
// fence: 503, so the agent sends them again to the holder, and nothing is
// stored.
func TestAgentWritesFenced(t *testing.T) {
	fx := newFleetAPIFixture(t)
	fx.store.SetFence(func(context.Context) error { return core.ErrStaleEpoch })
	for _, tt := range []struct{ path, body, table string }{
		{"/api/agents/heartbeat", jsonBody(heartbeatBase, nil), "agent_heartbeat"},
		{"/api/agents/journal", jsonBody(journalBase, nil), "agent_journal"},
	} {
		t.Run(tt.path, func(t *testing.T) {
			if code, body := fx.call(t, "POST", tt.path, tt.body); code != http.StatusServiceUnavailable {
				t.Errorf("status %d %v, want 503", code, body)
			}
			if n := fx.count(t, tt.table); n != 0 {
				t.Errorf("%d rows in %s, want none", n, tt.table)
			}
		})
	}
}
