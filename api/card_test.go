package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// cardsAPIFixture is the API with the card routes on a real SQLite store,
// the agent "worker" working the cards.
type cardsAPIFixture struct {
	server   *api.Server
	cards    *card.Service
	breakers *breaker.Service
	store    *store.Store
	tokens   *apiTokens
}

func newCardsAPIFixture(t testing.TB, clock core.Clock, cfg card.Config) *cardsAPIFixture {
	t.Helper()
	return newCardsAPIFixtureOn(t, store.SQLite, clock, cfg)
}

// newCardsAPIFixtureOn builds the fixture on a fresh store of engine.
func newCardsAPIFixtureOn(t testing.TB, engine string, clock core.Clock, cfg card.Config) *cardsAPIFixture {
	t.Helper()
	st := testdb.OpenStore(t, engine)
	w := services.Wiring{Store: st, Clock: clock, Room: "!jarvis:example.org", Admins: []string{"@admin:example.org"}}
	cards, breakers := w.Cards(cfg), w.Breakers(testconfig.Breaker())
	tokens := issueTokens(t, st, "worker", "other")
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterCards(server, cards, breakers)
	return &cardsAPIFixture{server: server, cards: cards, breakers: breakers, store: st, tokens: tokens}
}

// tokenFor is the token of whoever makes a request: the worker moves cards
// and asks questions, the orchestrator publishes, amends and reads.
func (fx *cardsAPIFixture) tokenFor(method, path string) string {
	if method == "POST" && (strings.HasSuffix(path, "/state") || strings.HasSuffix(path, "/needs-decision")) {
		return fx.tokens.agent["worker"]
	}
	return fx.tokens.orchestrator
}

// send makes a request with the token of whoever makes it (tokenFor) and
// the given headers.
func (fx *cardsAPIFixture) send(t *testing.T, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	return fx.sendAs(t, fx.tokenFor(method, path), method, path, body, header)
}

// sendAs makes a request bearing token.
func (fx *cardsAPIFixture) sendAs(t *testing.T, token, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	checked(t, fx.server).ServeHTTP(rec, req)
	return rec
}

// call makes a request and decodes the JSON answer.
func (fx *cardsAPIFixture) call(t *testing.T, method, path, body string) (int, map[string]any) {
	t.Helper()
	rec := fx.send(t, method, path, body, nil)
	return rec.Code, decodeObject(t, rec)
}

func decodeObject(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var out map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil {
		t.Fatalf("response %q is not a JSON object: %v", rec.Body.String(), err)
	}
	return out
}

// publish posts a card set and returns the ids of its cards.
func (fx *cardsAPIFixture) publish(t *testing.T, key, body string) []string {
	t.Helper()
	rec := fx.send(t, "POST", "/api/cardsets", body, map[string]string{api.IdempotencyKeyHeader: key})
	if rec.Code != http.StatusOK {
		t.Fatalf("publish %s: %d %s", key, rec.Code, rec.Body.String())
	}
	var ids []string
	for _, c := range decodeObject(t, rec)["cards"].([]any) {
		ids = append(ids, c.(map[string]any)["id"].(string))
	}
	return ids
}

const twoCards = `{"cards": [
	{"ref": "schema", "goal": "Design the invoice schema", "acceptance": ["reviewed by finance"], "priority": "P2", "budget": "2 h"},
	{"ref": "export", "goal": "Export invoices as CSV", "acceptance": ["opens in a spreadsheet"], "priority": "P2", "depends_on": ["schema"]}
]}`

func TestCardsAPIRequiresTheAgentToken(t *testing.T) {
	fx := newCardsAPIFixture(t, core.SystemClock{}, card.Config{})
	routes := []struct{ method, path string }{
		{"POST", "/api/cardsets"},
		{"GET", "/api/cards"},
		{"GET", "/api/cards/card_x"},
		{"POST", "/api/cards/card_x/state"},
		{"POST", "/api/cards/card_x/amendments"},
		{"POST", "/api/cards/card_x/needs-decision"},
	}
	for _, rt := range routes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			req := httptest.NewRequest(rt.method, rt.path, strings.NewReader(twoCards))
			req.Header.Set("Authorization", "Bearer wrong-token-wrong-token")
			req.Header.Set(api.IdempotencyKeyHeader, "k")
			rec := httptest.NewRecorder()
			checked(t, fx.server).ServeHTTP(rec, req)
			if rec.Code != http.StatusUnauthorized {
				t.Fatalf("status %d, want 401", rec.Code)
			}
		})
	}
	var n int
	if err := fx.store.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM card_set").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d sets stored by unauthorised requests (%v)", n, err)
	}
}

func TestPostCardSet(t *testing.T) {
	fx := newCardsAPIFixture(t, core.SystemClock{}, card.Config{})
	first := fx.send(t, "POST", "/api/cardsets", twoCards, map[string]string{api.IdempotencyKeyHeader: "set-1"})
	if first.Code != http.StatusOK {
		t.Fatalf("first publish: %d %s", first.Code, first.Body.String())
	}
	tests := []struct {
		name         string
		key          string
		body         string
		wantCode     int
		wantField    string
		wantSameBody bool
	}{
		{name: "replay with the same body, spaced differently", key: "set-1", body: strings.ReplaceAll(twoCards, "\n", " "), wantCode: 200, wantSameBody: true},
		{name: "same key, different body", key: "set-1", body: strings.Replace(twoCards, "CSV", "PDF", 1), wantCode: 422},
		{name: "missing key", body: twoCards, wantCode: 400, wantField: api.IdempotencyKeyHeader},
		{name: "cards not a list", key: "set-2", body: `{"cards": {"goal": "x"}}`, wantCode: 400, wantField: "cards"},
		{name: "no cards", key: "set-2", body: `{"cards": []}`, wantCode: 400, wantField: "cards"},
		{name: "bad priority", key: "set-2", body: strings.Replace(twoCards, `"P2"`, `"P7"`, 1), wantCode: 400, wantField: "cards[0].priority"},
		{name: "cycle", key: "set-2", body: strings.Replace(twoCards, `"budget": "2 h"`, `"depends_on": ["export"]`, 1), wantCode: 400, wantField: "cards[1].depends_on"},
		{name: "unknown dependency", key: "set-2", body: strings.Replace(twoCards, `["schema"]`, `["card_0000000000000000"]`, 1), wantCode: 400, wantField: "cards[1].depends_on[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := map[string]string{}
			if tt.key != "" {
				header[api.IdempotencyKeyHeader] = tt.key
			}
			rec := fx.send(t, "POST", "/api/cardsets", tt.body, header)
			if rec.Code != tt.wantCode {
				t.Fatalf("status %d, want %d: %s", rec.Code, tt.wantCode, rec.Body.String())
			}
			body := decodeObject(t, rec)
			if tt.wantField != "" && body["field"] != tt.wantField {
				t.Errorf("field %v, want %s: %v", body["field"], tt.wantField, body["error"])
			}
			if tt.wantSameBody {
				if rec.Body.String() != first.Body.String() {
					t.Errorf("replay answered\n%s\nnot the first response\n%s", rec.Body.String(), first.Body.String())
				}
				if rec.Header().Get("Idempotent-Replayed") != "true" {
					t.Errorf("replay not marked with Idempotent-Replayed")
				}
			}
		})
	}
	got := decodeObject(t, first)
	cards := got["cards"].([]any)
	if len(cards) != 2 || got["author"] != card.MainAgent || got["idempotency_key"] != "set-1" {
		t.Fatalf("first response %v", got)
	}
	var n int
	if err := fx.store.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM card").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d cards stored, want 2 (%v)", n, err)
	}
}

func TestPostCardSetOverBudget(t *testing.T) {
	clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	fx := newCardsAPIFixture(t, clock, testconfig.Cards())
	p0 := func(goal string) string {
		return `{"goal": "` + goal + `", "acceptance": ["fixed"], "priority": "P0"}`
	}
	fx.publish(t, "p0-a", `{"cards": [`+p0("Outage A")+`]}`)
	clock.Advance(time.Hour)
	rec := fx.send(t, "POST", "/api/cardsets", `{"cards": [`+p0("Outage B")+`, `+p0("Outage C")+`]}`,
		map[string]string{api.IdempotencyKeyHeader: "p0-b"})
	if rec.Code != http.StatusPaymentRequired || rec.Header().Get("Content-Type") != api.ProblemContentType {
		t.Fatalf("status %d (%s), want 402 problem details apart from a rate limit's 429: %s", rec.Code,
			rec.Header().Get("Content-Type"), rec.Body.String())
	}
	body := decodeObject(t, rec)
	if body["type"] != "urn:jarvis:problem:budget-exceeded" || body["limit_key"] != "cards.budget.P0.count" {
		t.Errorf("type %v, limit_key %v; want urn:jarvis:problem:budget-exceeded naming cards.budget.P0.count", body["type"], body["limit_key"])
	}
	if body["priority"] != "P0" || body["retry_at"] != "2026-07-10T09:00:00Z" || rec.Header().Get("Retry-After") != "82800" {
		t.Errorf("refusal %v, Retry-After %q; want P0 until 2026-07-10T09:00:00Z (82800 s)", body, rec.Header().Get("Retry-After"))
	}
	if msg, _ := body["error"].(string); !strings.Contains(msg, "P0 allows 2 cards per day") {
		t.Errorf("error %q does not explain the budget", msg)
	}
}

func TestCardsAPIWorkerFlow(t *testing.T) {
	clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	fx := newCardsAPIFixture(t, clock, card.Config{})
	ids := fx.publish(t, "flow", twoCards)
	schema, export := ids[0], ids[1]
	steps := []struct {
		name     string
		method   string
		path     string
		body     string
		wantCode int
		check    func(t *testing.T, body map[string]any)
	}{
		{
			name: "list published cards", method: "GET", path: "/api/cards?state=published", wantCode: 200,
			check: func(t *testing.T, body map[string]any) {
				if n := len(body["cards"].([]any)); n != 2 {
					t.Errorf("%d published cards, want 2", n)
				}
			},
		},
		{name: "bad state filter", method: "GET", path: "/api/cards?state=lost", wantCode: 400},
		{name: "bad limit", method: "GET", path: "/api/cards?limit=-1", wantCode: 400},
		{name: "unknown card", method: "GET", path: "/api/cards/card_missing", wantCode: 404},
		{name: "export waits for the schema", method: "POST", path: "/api/cards/" + export + "/state", body: `{"state": "claimed"}`, wantCode: 409},
		{name: "claim the schema", method: "POST", path: "/api/cards/" + schema + "/state", body: `{"state": "claimed", "note": "worker-7"}`, wantCode: 200},
		{name: "illegal jump", method: "POST", path: "/api/cards/" + schema + "/state", body: `{"state": "done"}`, wantCode: 409},
		{name: "missing state", method: "POST", path: "/api/cards/" + schema + "/state", body: `{"note": "?"}`, wantCode: 400},
		{name: "start", method: "POST", path: "/api/cards/" + schema + "/state", body: `{"state": "in_progress"}`, wantCode: 200},
		{
			name: "one option is not a choice", method: "POST", path: "/api/cards/" + schema + "/needs-decision",
			body:     `{"question": "Which?", "options": ["only"], "checkpoint": {"branch": "card/schema", "note": "wip"}}`,
			wantCode: 400, check: wantField("options"),
		},
		{
			name: "a checkpoint is required", method: "POST", path: "/api/cards/" + schema + "/needs-decision",
			body:     `{"question": "Which?", "options": ["a", "b"], "checkpoint": {"note": "wip"}}`,
			wantCode: 400, check: wantField("checkpoint.branch"),
		},
		{
			name: "deadline must be RFC 3339", method: "POST", path: "/api/cards/" + schema + "/needs-decision",
			body:     `{"question": "Which?", "options": ["a", "b"], "checkpoint": {"branch": "b", "note": "n"}, "deadline": "tomorrow"}`,
			wantCode: 400, check: wantField("deadline"),
		},
		{
			name: "ask", method: "POST", path: "/api/cards/" + schema + "/needs-decision",
			body: `{"question": "Money as integer cents or decimal?", "options": ["integer cents", "decimal(12,2)"],
				"checkpoint": {"branch": "card/schema", "note": "tables drafted"}, "deadline": "2026-07-10T09:00:00Z", "default_option": 1}`,
			wantCode: 201,
			check: func(t *testing.T, body map[string]any) {
				if body["status"] != "open" || body["deadline"] != "2026-07-10T09:00:00Z" || !strings.HasPrefix(body["notice_key"].(string), "decision:"+schema+":") {
					t.Errorf("question %v", body)
				}
			},
		},
		{
			name: "the card waits for the decision", method: "GET", path: "/api/cards/" + schema, wantCode: 200,
			check: func(t *testing.T, body map[string]any) {
				qs := body["decisions"].([]any)
				if body["state"] != "needs_decision" || len(qs) != 1 || qs[0].(map[string]any)["checkpoint"].(map[string]any)["branch"] != "card/schema" {
					t.Errorf("card %v", body)
				}
			},
		},
		{
			name: "clarify against the current revision", method: "POST", path: "/api/cards/" + schema + "/amendments",
			body: `{"kind": "clarification", "text": "Amounts are in EUR only.", "base_revision": 1}`, wantCode: 201,
			check: func(t *testing.T, body map[string]any) {
				if body["amendment"].(map[string]any)["revision"] != 2.0 || body["card"].(map[string]any)["revision"] != 2.0 {
					t.Errorf("amendment %v", body)
				}
				if body["amendment"].(map[string]any)["source_trust"] != "external" || body["card"].(map[string]any)["source_trust"] != "external" {
					t.Errorf("an agent's amendment and card are not external: %v", body)
				}
			},
		},
		{
			name: "a stale base revision", method: "POST", path: "/api/cards/" + schema + "/amendments",
			body: `{"kind": "clarification", "text": "Late.", "base_revision": 1}`, wantCode: 409,
		},
		{
			name: "answers come from people", method: "POST", path: "/api/cards/" + schema + "/amendments",
			body: `{"kind": "answer", "text": "1"}`, wantCode: 400, check: wantField("kind"),
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			code, body := fx.call(t, st.method, st.path, st.body)
			if code != st.wantCode {
				t.Fatalf("status %d, want %d: %v", code, st.wantCode, body)
			}
			if st.check != nil {
				st.check(t, body)
			}
		})
	}

	// A person answers in the room (the chat side calls AnswerDecision);
	// the worker then sees the answer amendment and the card back in the
	// queue.
	clock.Advance(90 * time.Minute)
	if _, err := fx.cards.AnswerDecision(context.Background(), schema, 2, "@admin:example.org", "telegram", core.TrustLinked); err != nil {
		t.Fatalf("answer: %v", err)
	}
	code, body := fx.call(t, "GET", "/api/cards/"+schema, "")
	if code != 200 || body["state"] != "published" || body["revision"] != 3.0 {
		t.Fatalf("after the answer: %d %v", code, body)
	}
	answer := body["amendments"].([]any)[1].(map[string]any)
	if answer["kind"] != "answer" || answer["option"] != 2.0 || answer["network"] != "telegram" ||
		answer["author"] != "@admin:example.org" || answer["elapsed_seconds"] != 5400.0 || answer["source_trust"] != "linked" {
		t.Errorf("answer amendment %v", answer)
	}
	if text, _ := answer["text"].(string); !strings.Contains(text, "Answer: 2. decimal(12,2)") || !strings.Contains(text, "card/schema") {
		t.Errorf("answer text %q", text)
	}
}

// wantField checks that an error answer names the field at fault.
func wantField(field string) func(t *testing.T, body map[string]any) {
	return func(t *testing.T, body map[string]any) {
		t.Helper()
		if body["field"] != field {
			t.Errorf("field %v, want %s: %v", body["field"], field, body["error"])
		}
	}
}

// TestCardsAPIHaltedAgent: while the worker's breaker is open its claim,
// its other state changes, its questions and its sign-offs are refused
// with 423 naming the breaker event, and change nothing; once it is
// resumed the claim goes through.
func TestCardsAPIHaltedAgent(t *testing.T) {
	fx := newCardsAPIFixture(t, core.SystemClock{}, card.Config{})
	ctx := context.Background()
	schema := fx.publishTwoCards(t, "halt-1")
	ev, err := fx.breakers.Open(ctx, "worker", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "drift", By: "aster"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ name, path, body string }{
		{"claim", "/api/cards/" + schema + "/state", `{"state": "claimed"}`},
		{"cancel", "/api/cards/" + schema + "/state", `{"state": "cancelled"}`},
		{"ask", "/api/cards/" + schema + "/needs-decision", `{"question": "Which?", "options": ["a", "b"], "checkpoint": {"branch": "b", "note": "n"}}`},
		{"sign off", "/api/cards/" + schema + "/signoffs", `{"revision": 1, "verdict": "approved"}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := fx.sendAs(t, fx.tokens.agent["worker"], "POST", tt.path, tt.body, nil)
			body := decodeObject(t, rec)
			if rec.Code != http.StatusLocked || body["breaker_event"] != ev.ID || !strings.Contains(body["error"].(string), ev.ID) {
				t.Fatalf("%d %v, want 423 naming %s", rec.Code, body, ev.ID)
			}
			state, err := fx.cards.StateOf(ctx, schema)
			if err != nil || state != card.Published {
				t.Errorf("card %s is %s (%v) after the refusal, want published", schema, state, err)
			}
			var signoffs int
			if err := fx.store.DB.QueryRow(ctx, "SELECT COUNT(*) FROM card_signoff").Scan(&signoffs); err != nil || signoffs != 0 {
				t.Errorf("%d sign-offs stored (%v), want 0", signoffs, err)
			}
		})
	}
	if _, err := fx.breakers.Reset(ctx, ev.ID, "@admin:example.org"); err != nil {
		t.Fatal(err)
	}
	if code, body := fx.call(t, "POST", "/api/cards/"+schema+"/state", `{"state": "claimed"}`); code != 200 || body["state"] != "claimed" {
		t.Errorf("claim after the reset: %d %v", code, body)
	}
}

// TestCardsAPIRoles: a worker cannot publish or amend, an orchestrator
// cannot move a card; each gets 403 naming the role needed.
func TestCardsAPIRoles(t *testing.T) {
	fx := newCardsAPIFixture(t, core.SystemClock{}, card.Config{})
	for _, tt := range []struct{ name, token, path, body, role string }{
		{"a worker publishes", fx.tokens.agent["worker"], "/api/cardsets", twoCards, "orchestrator"},
		{"a worker amends", fx.tokens.agent["worker"], "/api/cards/card_x/amendments", `{"kind": "clarification", "text": "x"}`, "orchestrator"},
		{"an orchestrator claims", fx.tokens.orchestrator, "/api/cards/card_x/state", `{"state": "claimed"}`, "agent"},
		{"a supervisor asks", fx.tokens.supervisor, "/api/cards/card_x/needs-decision", `{"question": "q"}`, "agent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := fx.sendAs(t, tt.token, "POST", tt.path, tt.body, map[string]string{api.IdempotencyKeyHeader: "roles"})
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			roles, _ := body["needs_role"].([]any)
			if rec.Code != http.StatusForbidden || len(roles) != 1 || roles[0] != tt.role {
				t.Fatalf("%d %v, want 403 naming %s", rec.Code, body, tt.role)
			}
		})
	}
	var n int
	if err := fx.store.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM card_set").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d sets stored by refused requests (%v)", n, err)
	}
}

// TestCardsAPIWorkerOwnsItsCard: once the worker claims a card, another
// agent can neither move it nor ask about it (403, nothing changes); when
// the worker releases it, any agent may claim it.
func TestCardsAPIWorkerOwnsItsCard(t *testing.T) {
	fx := newCardsAPIFixture(t, core.SystemClock{}, card.Config{})
	ctx := context.Background()
	schema := fx.publishTwoCards(t, "own-1")
	if code, body := fx.call(t, "POST", "/api/cards/"+schema+"/state", `{"state": "claimed"}`); code != 200 || body["worker"] != "worker" {
		t.Fatalf("the worker's claim: %d %v, want 200 with worker set", code, body)
	}
	other := fx.tokens.agent["other"]
	for _, tt := range []struct{ name, path, body string }{
		{"finish it", "/api/cards/" + schema + "/state", `{"state": "in_progress"}`},
		{"release it", "/api/cards/" + schema + "/state", `{"state": "published"}`},
		{"ask about it", "/api/cards/" + schema + "/needs-decision", `{"question": "Which?", "options": ["a", "b"], "checkpoint": {"branch": "b", "note": "n"}}`},
	} {
		t.Run("another agent tries to "+tt.name, func(t *testing.T) {
			rec := fx.sendAs(t, other, "POST", tt.path, tt.body, nil)
			if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "worked by worker") {
				t.Fatalf("%d %s, want 403 saying the card is worked by worker", rec.Code, rec.Body.String())
			}
			got, err := fx.cards.Get(ctx, schema)
			if err != nil || got.State != card.Claimed || got.Worker != "worker" || len(got.Decisions) != 0 {
				t.Errorf("card after the refusal: %s by %q, %d questions (%v)", got.State, got.Worker, len(got.Decisions), err)
			}
		})
	}
	if code, body := fx.call(t, "POST", "/api/cards/"+schema+"/state", `{"state": "published"}`); code != 200 || body["worker"] != nil {
		t.Fatalf("the worker releases it: %d %v", code, body)
	}
	if rec := fx.sendAs(t, other, "POST", "/api/cards/"+schema+"/state", `{"state": "claimed"}`, nil); rec.Code != 200 {
		t.Errorf("another agent claims the released card: %d %s", rec.Code, rec.Body.String())
	}
}

// publishTwoCards publishes twoCards as the orchestrator under key and
// returns the id of the first card (schema).
func (fx *cardsAPIFixture) publishTwoCards(t *testing.T, key string) string {
	t.Helper()
	set := fx.send(t, "POST", "/api/cardsets", twoCards, map[string]string{api.IdempotencyKeyHeader: key})
	var published struct {
		Cards []struct{ ID string } `json:"cards"`
	}
	if err := json.Unmarshal(set.Body.Bytes(), &published); err != nil || set.Code != 200 {
		t.Fatalf("publish: %d %s", set.Code, set.Body.String())
	}
	return published.Cards[0].ID
}
