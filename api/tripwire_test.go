package api_test

import (
	"context"
	"encoding/json"
	"fmt"
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
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// tripwireAPIFixture is the API with the tripwire routes on a real SQLite
// store, a manual clock and a GI source whose value the test sets.
type tripwireAPIFixture struct {
	t       *testing.T
	handler http.Handler
	svc     *tripwire.Service
	clock   *coretest.Clock
	gi      float64
	alice   string // alice's personal token
	bob     string // bob's
	// agentToken is a valid agent credential, which the tripwire routes do
	// not take.
	agentToken string
}

func newTripwireAPIFixture(t *testing.T) *tripwireAPIFixture {
	t.Helper()
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	fx := &tripwireAPIFixture{t: t, clock: coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)), gi: 0.8}
	reg := core.NewSourceRegistry(
		core.SourceKind{Kind: "integrity.gi", Value: core.ValueRatio, Resolve: func(context.Context, string) (core.Observation, error) {
			return core.Observation{Value: fx.gi}, nil
		}},
		core.SourceKind{Kind: "agent.status", Value: core.ValueCategory, Categories: []string{"online", "late", "offline"},
			Param: "agent name", ParamType: core.ParamAgent, Resolve: func(context.Context, string) (core.Observation, error) {
				return core.Observation{Value: "online"}, nil
			}},
	)
	fx.svc = services.Wiring{Store: st, Clock: fx.clock}.Tripwires(testconfig.Tripwires(), reg)
	tokens := issueTokens(t, st, "EVE")
	fx.agentToken = tokens.agent["EVE"]
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterTripwires(server, fx.svc)
	fx.handler = checked(t, server)
	var err error
	if fx.alice, _, err = fx.svc.CreateToken(ctx, "@alice:example.org", "dashboard"); err != nil {
		t.Fatal(err)
	}
	if fx.bob, _, err = fx.svc.CreateToken(ctx, "@bob:example.org", "dashboard"); err != nil {
		t.Fatal(err)
	}
	return fx
}

// do sends a request with the given bearer token and decodes the JSON
// answer into out (when not nil).
func (fx *tripwireAPIFixture) do(method, path, token, body string, out any) *httptest.ResponseRecorder {
	fx.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	fx.handler.ServeHTTP(rec, req)
	if out != nil && rec.Body.Len() > 0 {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			fx.t.Fatalf("%s %s: decode %q: %v", method, path, rec.Body.String(), err)
		}
	}
	return rec
}

const giDraft = `{"label": "GI below yellow band", "rationale": "the sentiment lane may hide real GI drops",
	"source": {"kind": "integrity.gi"}, "condition": {"op": "lt", "threshold": 0.7}}`

func TestTripwireAPICreate(t *testing.T) {
	for _, tt := range []struct {
		name      string
		body      string
		wantCode  int
		wantField string
	}{
		{name: "valid", body: giDraft, wantCode: http.StatusCreated},
		{name: "rationale required", body: `{"label": "x", "source": {"kind": "integrity.gi"}, "condition": {"op": "changed"}}`,
			wantCode: http.StatusBadRequest, wantField: "rationale"},
		{name: "blank rationale", body: `{"label": "x", "rationale": "   ", "source": {"kind": "integrity.gi"}, "condition": {"op": "changed"}}`,
			wantCode: http.StatusBadRequest, wantField: "rationale"},
		{name: "label too long", body: fmt.Sprintf(`{"label": %q, "rationale": "r", "source": {"kind": "integrity.gi"}, "condition": {"op": "changed"}}`, strings.Repeat("a", 121)),
			wantCode: http.StatusBadRequest, wantField: "label"},
		{name: "unknown source", body: `{"label": "x", "rationale": "r", "source": {"kind": "weather"}, "condition": {"op": "changed"}}`,
			wantCode: http.StatusBadRequest, wantField: "source.kind"},
		{name: "bad threshold", body: `{"label": "x", "rationale": "r", "source": {"kind": "integrity.gi"}, "condition": {"op": "gt", "threshold": "high"}}`,
			wantCode: http.StatusBadRequest, wantField: "condition.threshold"},
		{name: "label not a string", body: `{"label": ["x"], "rationale": "r", "source": {"kind": "integrity.gi"}, "condition": {"op": "changed"}}`,
			wantCode: http.StatusBadRequest, wantField: "label"},
		{name: "negative cooldown", body: `{"label": "x", "rationale": "r", "source": {"kind": "integrity.gi"}, "condition": {"op": "changed"}, "cooldown_seconds": -5}`,
			wantCode: http.StatusBadRequest, wantField: "cooldown_seconds"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fx := newTripwireAPIFixture(t)
			var got map[string]any
			rec := fx.do("POST", "/api/tripwires", fx.alice, tt.body, &got)
			if rec.Code != tt.wantCode || (tt.wantField != "" && got["field"] != tt.wantField) {
				t.Fatalf("POST = %d %s, want %d naming %q", rec.Code, rec.Body, tt.wantCode, tt.wantField)
			}
			if tt.wantCode != http.StatusCreated {
				var list struct{ Tripwires []any }
				fx.do("GET", "/api/tripwires", fx.alice, "", &list)
				if len(list.Tripwires) != 0 {
					t.Errorf("a refused create left %d tripwires", len(list.Tripwires))
				}
				return
			}
			id, _ := got["id"].(string)
			action, _ := got["action"].(map[string]any)
			if !strings.HasPrefix(id, "tw_") || got["status"] != "armed" || got["cooldown_seconds"] != 3600.0 ||
				action["journal"] != true || action["push"] != false || got["last_tripped_at"] != nil {
				t.Errorf("created %v; want an armed tw_ id with journal-only action and a 1h cooldown", got)
			}
		})
	}
}

func TestTripwireAPIRateLimit(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	for i := range tripwire.CreationLimit {
		if rec := fx.do("POST", "/api/tripwires", fx.alice, giDraft, nil); rec.Code != http.StatusCreated {
			t.Fatalf("creation %d: %d %s", i+1, rec.Code, rec.Body)
		}
	}
	if rec := fx.do("POST", "/api/tripwires", fx.alice, giDraft, nil); rec.Code != http.StatusTooManyRequests {
		t.Errorf("51st creation in an hour: %d %s, want 429", rec.Code, rec.Body)
	}
	var list struct{ Tripwires []any }
	fx.do("GET", "/api/tripwires", fx.alice, "", &list)
	if len(list.Tripwires) != tripwire.CreationLimit {
		t.Errorf("%d tripwires after the refused one, want %d", len(list.Tripwires), tripwire.CreationLimit)
	}
}

func TestTripwireAPIAuthentication(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	for _, tt := range []struct {
		name  string
		token string
	}{
		{"no token", ""},
		{"an agent token", fx.agentToken},
		{"a made-up token", "jtw_notarealtoken"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := fx.do("GET", "/api/tripwires", tt.token, "", nil)
			if rec.Code != http.StatusUnauthorized || rec.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("GET with %s = %d (WWW-Authenticate %q), want 401 with a challenge", tt.name, rec.Code, rec.Header().Get("WWW-Authenticate"))
			}
		})
	}
}

func TestTripwireAPIScopes(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	var created tripwire.Definition
	fx.do("POST", "/api/tripwires", fx.alice, giDraft, &created)
	path := "/api/tripwires/" + created.ID
	for _, tt := range []struct{ method, path, body string }{
		{"GET", path, ""},
		{"PATCH", path, `{"status": "disabled"}`},
		{"DELETE", path, ""},
		{"GET", path + "/history", ""},
	} {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			if rec := fx.do(tt.method, tt.path, fx.bob, tt.body, nil); rec.Code != http.StatusNotFound {
				t.Errorf("bob: %d %s, want 404", rec.Code, rec.Body)
			}
		})
	}
	var list struct{ Tripwires []tripwire.Definition }
	fx.do("GET", "/api/tripwires", fx.bob, "", &list)
	if len(list.Tripwires) != 0 {
		t.Errorf("bob lists %d tripwires, want none", len(list.Tripwires))
	}
	var got tripwire.Definition
	if rec := fx.do("GET", path, fx.alice, "", &got); rec.Code != http.StatusOK || got.Status != tripwire.Armed {
		t.Errorf("alice's tripwire after bob's attempts: %d %+v", rec.Code, got)
	}
	// A body naming another owner is armed in the sender's scope: the
	// field is not one the API knows, and is ignored.
	owned := strings.Replace(giDraft, "{", `{"owner": "@alice:example.org", `, 1)
	if rec := fx.do("POST", "/api/tripwires", fx.bob, owned, nil); rec.Code != http.StatusCreated {
		t.Fatalf("bob's tripwire naming alice as owner: %d %s", rec.Code, rec.Body)
	}
	fx.do("GET", "/api/tripwires", fx.alice, "", &list)
	if len(list.Tripwires) != 1 {
		t.Errorf("alice lists %d tripwires after bob named her owner, want her 1", len(list.Tripwires))
	}
	fx.do("GET", "/api/tripwires", fx.bob, "", &list)
	if len(list.Tripwires) != 1 {
		t.Errorf("bob lists %d tripwires, want the 1 he armed", len(list.Tripwires))
	}
}

func TestTripwireAPIPatchAndDelete(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	var created tripwire.Definition
	fx.do("POST", "/api/tripwires", fx.alice, giDraft, &created)
	path := "/api/tripwires/" + created.ID
	for _, tt := range []struct {
		name      string
		body      string
		wantCode  int
		wantField string
		check     func(d tripwire.Definition) bool
	}{
		{name: "turn push on", body: `{"action": {"push": true}}`, wantCode: http.StatusOK,
			check: func(d tripwire.Definition) bool { return d.Action.Push && d.Action.Journal }},
		{name: "set cooldown", body: `{"cooldown_seconds": 600}`, wantCode: http.StatusOK,
			check: func(d tripwire.Definition) bool { return d.CooldownSeconds == 600 }},
		{name: "disable", body: `{"status": "disabled"}`, wantCode: http.StatusOK,
			check: func(d tripwire.Definition) bool { return d.Status == tripwire.Disabled }},
		{name: "enable", body: `{"status": "armed"}`, wantCode: http.StatusOK,
			check: func(d tripwire.Definition) bool { return d.Status == tripwire.Armed }},
		{name: "cannot set tripped", body: `{"status": "tripped"}`, wantCode: http.StatusBadRequest, wantField: "status"},
		{name: "cannot change the condition", body: `{"condition": {"op": "changed"}}`, wantCode: http.StatusBadRequest, wantField: "condition"},
		{name: "cannot empty the rationale", body: `{"rationale": ""}`, wantCode: http.StatusBadRequest, wantField: "rationale"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got map[string]any
			rec := fx.do("PATCH", path, fx.alice, tt.body, &got)
			if rec.Code != tt.wantCode || (tt.wantField != "" && got["field"] != tt.wantField) {
				t.Fatalf("PATCH = %d %s, want %d naming %q", rec.Code, rec.Body, tt.wantCode, tt.wantField)
			}
			if tt.check != nil {
				var def tripwire.Definition
				fx.do("GET", path, fx.alice, "", &def)
				if !tt.check(def) {
					t.Errorf("after PATCH %s: %+v", tt.body, def)
				}
			}
		})
	}
	if rec := fx.do("DELETE", path, fx.alice, "", nil); rec.Code != http.StatusNoContent {
		t.Fatalf("DELETE = %d %s", rec.Code, rec.Body)
	}
	if rec := fx.do("GET", path, fx.alice, "", nil); rec.Code != http.StatusNotFound {
		t.Errorf("GET after DELETE = %d, want 404", rec.Code)
	}
}

func TestTripwireAPIHistoryAndJournal(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	var created tripwire.Definition
	push := strings.Replace(giDraft, `"condition"`, `"action": {"push": true}, "condition"`, 1)
	if rec := fx.do("POST", "/api/tripwires", fx.alice, push, &created); rec.Code != http.StatusCreated {
		t.Fatalf("POST = %d %s", rec.Code, rec.Body)
	}
	fx.gi = 0.62
	if _, err := fx.svc.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}

	var history struct{ Events []tripwire.TripEvent }
	if rec := fx.do("GET", "/api/tripwires/"+created.ID+"/history", fx.alice, "", &history); rec.Code != http.StatusOK ||
		len(history.Events) != 1 || history.Events[0].ObservedValue != 0.62 || history.Events[0].Label != "GI below yellow band" {
		t.Errorf("history = %d %+v, want the trip at 0.62", rec.Code, history)
	}

	var page tripwire.JournalPage
	fx.do("GET", "/api/tripwires/journal?unread=true&mark_read=true", fx.alice, "", &page)
	if page.Unread != 1 || len(page.Entries) != 1 || !page.Entries[0].Unread || page.Entries[0].TripwireID != created.ID {
		t.Errorf("journal = %+v, want the unread trip", page)
	}
	fx.do("GET", "/api/tripwires/journal?unread=true", fx.alice, "", &page)
	if page.Unread != 0 || len(page.Entries) != 0 {
		t.Errorf("journal after reading = %+v, want nothing unread", page)
	}

	var pushed struct{ Events []tripwire.TripEvent }
	fx.do("GET", "/api/tripwires/journal?consume=push", fx.alice, "", &pushed)
	if len(pushed.Events) != 1 || pushed.Events[0].TripwireID != created.ID {
		t.Errorf("push queue = %+v, want the trip", pushed)
	}
	fx.do("GET", "/api/tripwires/journal?consume=push", fx.alice, "", &pushed)
	if len(pushed.Events) != 0 {
		t.Errorf("push queue drained twice gave %d events, want none", len(pushed.Events))
	}
	var bobs struct{ Events []tripwire.TripEvent }
	fx.do("GET", "/api/tripwires/journal?consume=push", fx.bob, "", &bobs)
	if len(bobs.Events) != 0 {
		t.Errorf("bob drained %d of alice's events", len(bobs.Events))
	}

	for _, tt := range []struct{ query, field string }{
		{"consume=journal", "consume"},
		{"limit=-1", "limit"},
		{"unread=maybe", "unread"},
	} {
		t.Run(tt.query, func(t *testing.T) {
			var got map[string]any
			if rec := fx.do("GET", "/api/tripwires/journal?"+tt.query, fx.alice, "", &got); rec.Code != http.StatusBadRequest || got["field"] != tt.field {
				t.Errorf("?%s = %d %v, want 400 naming %s", tt.query, rec.Code, got, tt.field)
			}
		})
	}
}

// TestTripwireAPIBacktest: POST /api/tripwires/backtest answers what the
// tripwire in its body would have done over the history the evaluator
// kept, arms nothing, and refuses a bad body or a missing token as POST
// /api/tripwires does.
func TestTripwireAPIBacktest(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	// A tripwire of bob's keeps GI read; GI dips twice, 10 minutes apart.
	if rec := fx.do("POST", "/api/tripwires", fx.bob, strings.Replace(giDraft, "0.7", "0.1", 1), nil); rec.Code != http.StatusCreated {
		t.Fatalf("POST = %d %s", rec.Code, rec.Body)
	}
	var dips []time.Time
	for _, gi := range []float64{0.8, 0.6, 0.8, 0.6} {
		fx.clock.Advance(10 * time.Minute)
		fx.gi = gi
		if gi < 0.7 {
			dips = append(dips, fx.clock.Now())
		}
		if _, err := fx.svc.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	var got struct {
		SpanSeconds     int64       `json:"span_seconds"`
		CooldownSeconds int64       `json:"cooldown_seconds"`
		Readings        int         `json:"readings"`
		Trips           []time.Time `json:"trips"`
		CooledTrips     []time.Time `json:"cooled_trips"`
		QuarantinedAt   *time.Time  `json:"quarantined_at"`
	}
	rec := fx.do("POST", "/api/tripwires/backtest", fx.alice, giDraft, &got)
	if rec.Code != http.StatusOK || got.SpanSeconds != 7*24*3600 || got.CooldownSeconds != 3600 || got.Readings != 4 ||
		len(got.Trips) != 2 || !got.Trips[0].Equal(dips[0]) || !got.Trips[1].Equal(dips[1]) ||
		len(got.CooledTrips) != 1 || !got.CooledTrips[0].Equal(dips[0]) || got.QuarantinedAt != nil {
		t.Errorf("backtest = %d %s, want trips at %v, the second within the 1h cooldown", rec.Code, rec.Body, dips)
	}
	var list struct{ Tripwires []any }
	fx.do("GET", "/api/tripwires", fx.alice, "", &list)
	if len(list.Tripwires) != 0 {
		t.Errorf("a backtest armed %d tripwires", len(list.Tripwires))
	}
	var bad map[string]any
	if rec := fx.do("POST", "/api/tripwires/backtest", fx.alice, `{"label": "x", "rationale": "r", "source": {"kind": "weather"}, "condition": {"op": "changed"}}`, &bad); rec.Code != http.StatusBadRequest || bad["field"] != "source.kind" {
		t.Errorf("backtest of an unknown source = %d %v, want 400 naming source.kind", rec.Code, bad)
	}
	if rec := fx.do("POST", "/api/tripwires/backtest", fx.agentToken, giDraft, nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("backtest with an agent token = %d, want 401", rec.Code)
	}
}

func TestTripwireAPITemplates(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	var list struct{ Templates []tripwire.Template }
	fx.do("GET", "/api/tripwires/templates", fx.alice, "", &list)
	if len(list.Templates) != 2 {
		t.Fatalf("%d templates offered, want the 2 whose sources exist here: %+v", len(list.Templates), list.Templates)
	}
	var got map[string]any
	if rec := fx.do("POST", "/api/tripwires/templates/agent-offline", fx.alice, `{}`, &got); rec.Code != http.StatusBadRequest || got["field"] != "param" {
		t.Errorf("arming agent-offline without an agent = %d %v, want 400 naming param", rec.Code, got)
	}
	var def tripwire.Definition
	if rec := fx.do("POST", "/api/tripwires/templates/agent-offline", fx.alice, `{"param": "EVE"}`, &def); rec.Code != http.StatusCreated ||
		def.Source != (core.SourceRef{Kind: "agent.status", Param: "EVE"}) {
		t.Errorf("arming agent-offline for EVE = %d %+v", rec.Code, def)
	}
	if rec := fx.do("POST", "/api/tripwires/templates/vault-threshold", fx.alice, "", nil); rec.Code != http.StatusNotFound {
		t.Errorf("arming a template whose source is not configured = %d, want 404", rec.Code)
	}
}

// TestTripwireAPISourceTrust: a body claiming its rationale is native is
// stored as what it is, an outside payload; so is a rationale patched in.
func TestTripwireAPISourceTrust(t *testing.T) {
	fx := newTripwireAPIFixture(t)
	var created tripwire.Definition
	body := strings.Replace(giDraft, `"label"`, `"source_trust": "native", "label"`, 1)
	if rec := fx.do("POST", "/api/tripwires", fx.alice, body, &created); rec.Code != http.StatusCreated {
		t.Fatalf("POST = %d %s", rec.Code, rec.Body)
	}
	if created.SourceTrust != core.TrustExternal {
		t.Errorf("armed over HTTP claiming native: source_trust = %q, want external", created.SourceTrust)
	}
	var patched tripwire.Definition
	rec := fx.do("PATCH", "/api/tripwires/"+created.ID, fx.alice, `{"rationale": "new", "rationale_trust": "native"}`, &patched)
	if rec.Code != http.StatusOK || patched.SourceTrust != core.TrustExternal {
		t.Errorf("PATCH = %d, source_trust %q; want 200 and external", rec.Code, patched.SourceTrust)
	}
}

// TestPersonalTokenHasItsOwnBucket: a person's personal token draws from
// a rate-limit bucket of its own (api.rate_limit.credential), so a person
// spending theirs as fast as they can leaves their address's bucket, which
// health checks, metrics and everyone behind the same proxy share, full;
// a wrong token still draws from the address.
func TestPersonalTokenHasItsOwnBucket(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	svc := services.Wiring{Store: st, Clock: coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC))}.
		Tripwires(testconfig.Tripwires(), core.NewSourceRegistry())
	mallory, _, err := svc.CreateToken(ctx, "@mallory:example.org", "laptop")
	if err != nil {
		t.Fatal(err)
	}
	// A bucket refills by one every 1,000 s: none during the test.
	slow := api.Rate{PerSecond: 0.001, Burst: 3}
	server := api.New(api.Config{RateLimit: api.RateLimitConfig{Credential: slow, Address: slow}}, zerolog.Nop(),
		func(context.Context) (api.Health, error) { return api.Health{}, nil }, nil)
	api.RegisterTripwires(server, svc)
	handler := checked(t, server)
	call := func(path, token string) int {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code
	}
	var codes []int
	for range 5 {
		codes = append(codes, call("/api/tripwires", mallory))
	}
	if want := []int{200, 200, 200, 429, 429}; !slices.Equal(codes, want) {
		t.Errorf("mallory's five reads: %v, want %v (her own burst of 3)", codes, want)
	}
	if code := call("/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz from mallory's address after her flood: %d, want 200", code)
	}
	codes = codes[:0]
	for range 3 {
		codes = append(codes, call("/api/tripwires", "jtw_not-a-token"))
	}
	if want := []int{401, 401, 429}; !slices.Equal(codes, want) {
		t.Errorf("three wrong tokens: %v, want %v (the address's bucket, one spent by /healthz)", codes, want)
	}
}
