package api_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/alertmanager"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// documentedOperation is an operation of the OpenAPI document with its
// example request body, if it has one.
type documentedOperation struct {
	method, path string
	example      map[string]any
}

// documentedOperations reads every operation of the document, by its
// operationId.
func documentedOperations(t *testing.T) map[string]documentedOperation {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
			RequestBody struct {
				Content map[string]struct {
					Example map[string]any `json:"example"`
				} `json:"content"`
			} `json:"requestBody"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(api.OpenAPI(), &doc); err != nil {
		t.Fatal(err)
	}
	ops := map[string]documentedOperation{}
	for path, methods := range doc.Paths {
		for method, op := range methods {
			ops[op.OperationID] = documentedOperation{method: strings.ToUpper(method), path: path,
				example: op.RequestBody.Content["application/json"].Example}
		}
	}
	return ops
}

// TestExamplesReplay sends every operation of the document, each with its
// example body as written there (what docs/agents.md copies), to the API
// wired on one store as Jarvis wires it, in the order a workspace would,
// and each is taken; the contract check validates every answer. An
// operation added to the document without a step here fails the test.
func TestExamplesReplay(t *testing.T) {
	ctx := context.Background()
	clock := coretest.NewClock(time.Date(2026, 4, 17, 0, 0, 1, 0, time.UTC))
	st := testdb.OpenStore(t, store.SQLite)
	w := services.Wiring{Store: st, Clock: clock, Room: "!jarvis:example.org", Admins: []string{"@admin:example.org"}}
	breakers := w.Breakers(testconfig.Breaker())
	incidents := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	fl := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE"}}}, func(d *fleet.Deps) { d.Breakers, d.Incidents = breakers, incidents })
	cards := w.Cards(card.Config{})
	approvals := w.Approvals(approval.Config{RemindAfter: 15 * time.Minute})
	reg := core.NewSourceRegistry(core.SourceKind{Kind: "agent.status", Value: core.ValueCategory, Categories: []string{"online", "late", "offline"},
		Param: "agent name", ParamType: core.ParamAgent, Resolve: func(context.Context, string) (core.Observation, error) {
			return core.Observation{Value: "online"}, nil
		}})
	tripwires := w.Tripwires(testconfig.Tripwires(), reg)
	reminders := w.Reminders()
	tokens := issueTokens(t, st, "EVE")
	citizen, _, err := tripwires.CreateToken(ctx, "@alice:example.org", "dashboard")
	if err != nil {
		t.Fatal(err)
	}
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{Synced: true}, nil }, tokens.creds)
	api.RegisterBreaker(server, breakers, fl)
	api.RegisterFleet(server, fl, breakers)
	api.RegisterAgents(server, fl)
	api.RegisterTripwires(server, tripwires)
	api.RegisterCards(server, cards, breakers)
	api.RegisterCalendar(server, api.Calendar{Citizen: tripwires.CitizenForToken, Reminders: reminders.List,
		Tasks: func(context.Context, string) ([]notebook.Entry, error) { return nil, nil }, Now: clock.Now})
	api.RegisterApprovals(server, approvals, breakers)
	api.RegisterAlertmanager(server, alertmanager.NewService(testconfig.Alertmanager(),
		alertmanager.Deps{Oncall: incidents, Tx: st, Clock: clock, RoomID: w.Room, Admins: w.Admins}))
	api.RegisterSilences(server, incidents, w.Room, fl)
	handler := checked(t, server)

	eve := tokens.agent["EVE"]
	// ids are what earlier steps answered, put into later steps' paths.
	ids := map[string]string{}
	steps := []struct {
		op     string
		token  string
		path   string // the document's path with its parameters filled in
		header map[string]string
		// edit fills in what an example cannot hold: a signature over
		// the token.
		edit func(body map[string]any)
		// keep names an answer's field to remember, as ids[keep].
		keep, as string
		// before does what a person would, between two requests.
		before func(t *testing.T)
	}{
		{op: "getHealth", token: eve},
		{op: "getOpenAPI"},
		{op: "postHeartbeat", token: eve},
		{op: "postPing", token: eve},
		{op: "postPingStart", token: eve},
		{op: "postPingFail", token: eve},
		{op: "postPingExit", token: eve, path: "/api/ping/0"},
		{op: "putAgent", token: tokens.supervisor, path: "/api/agents/BACKUP"},
		{op: "listAgents", token: eve},
		{op: "deleteAgent", token: tokens.supervisor, path: "/api/agents/BACKUP"},
		{op: "postJournal", token: eve},
		{op: "getJournal", token: eve, path: "/api/agents/journal?agent=EVE&cycle=C-284"},
		{op: "postSubject", token: tokens.orchestrator},
		{op: "getOpenSubjects", token: eve, path: "/api/attestations/subjects?agent=EVE"},
		{op: "postAttestation", token: eve, edit: func(b map[string]any) { signExample(eve, b) }},
		{op: "postSealAttestation", token: eve, edit: func(b map[string]any) { signExample(eve, b) }},
		{op: "getSubject", token: eve, path: "/api/attestations/subjects/seal-C-284-001"},
		{op: "getSnapshot", token: eve},
		{op: "postApproval", token: eve, header: map[string]string{api.IdempotencyKeyHeader: "drop-staging-1"}, keep: "id", as: "approval"},
		{op: "getApproval", token: eve, path: "/api/approvals/{approval}"},
		{op: "postCardSet", token: tokens.orchestrator, header: map[string]string{api.IdempotencyKeyHeader: "publish-2026-04-17-1"},
			keep: "cards.0.id", as: "card"},
		{op: "listCards", token: eve, path: "/api/cards?state=published&limit=10"},
		{op: "postCardState", token: eve, path: "/api/cards/{card}/state"},
		{op: "postSignOff", token: eve, path: "/api/cards/{card}/signoffs"},
		{op: "postNeedsDecision", token: eve, path: "/api/cards/{card}/needs-decision"},
		{op: "postAmendment", token: tokens.orchestrator, path: "/api/cards/{card}/amendments"},
		{op: "getCard", token: eve, path: "/api/cards/{card}"},
		{op: "armTripwire", token: citizen, keep: "id", as: "tripwire"},
		{op: "listTripwires", token: citizen},
		{op: "getTripwire", token: citizen, path: "/api/tripwires/{tripwire}"},
		{op: "patchTripwire", token: citizen, path: "/api/tripwires/{tripwire}"},
		{op: "tripwireHistory", token: citizen, path: "/api/tripwires/{tripwire}/history?limit=10"},
		{op: "tripwireSkips", token: citizen, path: "/api/tripwires/{tripwire}/skips?since=2026-01-01T00:00:00Z&limit=10"},
		{op: "backtestTripwire", token: citizen},
		{op: "tripwireJournal", token: citizen, path: "/api/tripwires/journal?limit=10"},
		{op: "tripwireTemplates", token: citizen},
		{op: "armTemplate", token: citizen, path: "/api/tripwires/templates/agent-offline"},
		{op: "deleteTripwire", token: citizen, path: "/api/tripwires/{tripwire}"},
		{op: "getCalendar", token: citizen},
		{op: "getBreaker", token: eve, path: "/api/breaker/EVE"},
		{op: "observeBreaker", token: tokens.supervisor, path: "/api/breaker/EVE/observations"},
		{op: "openBreaker", token: tokens.supervisor, path: "/api/breaker/EVE/open", keep: "event.id", as: "breaker"},
		{op: "verifyBreaker", token: tokens.supervisor, path: "/api/breaker/EVE/verify", before: func(t *testing.T) {
			if _, err := breakers.Resume(ctx, ids["breaker"], "@admin:example.org"); err != nil {
				t.Fatalf("resume: %v", err)
			}
		}},
		{op: "getBreakerEvents", token: eve, path: "/api/breaker/EVE/events?limit=5"},
		{op: "postAlertmanager", token: tokens.receiver},
		{op: "postSilence", token: tokens.receiver, keep: "silence.id", as: "silence"},
		{op: "listSilences", token: tokens.supervisor},
		{op: "endSilence", token: tokens.receiver, path: "/api/silences/{silence}?by=deploy.sh"},
	}
	ops := documentedOperations(t)
	replayed := map[string]bool{}
	for _, step := range steps {
		op, ok := ops[step.op]
		if !ok {
			t.Errorf("%s is not an operation of the document", step.op)
			continue
		}
		replayed[step.op] = true
		if step.before != nil {
			step.before(t)
		}
		path := step.path
		if path == "" {
			path = op.path
		}
		for k, v := range ids {
			path = strings.ReplaceAll(path, "{"+k+"}", v)
		}
		var body []byte
		if op.example != nil {
			example := map[string]any{}
			for k, v := range op.example {
				example[k] = v
			}
			if step.edit != nil {
				step.edit(example)
			}
			body, _ = json.Marshal(example)
		}
		req := httptest.NewRequest(op.method, path, strings.NewReader(string(body)))
		if step.token != "" {
			req.Header.Set("Authorization", "Bearer "+step.token)
		}
		for k, v := range step.header {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 299 {
			t.Errorf("%s: %s %s %s = %d %s", step.op, op.method, path, body, rec.Code, rec.Body)
			continue
		}
		if step.keep != "" {
			var answer any
			_ = json.Unmarshal(rec.Body.Bytes(), &answer)
			ids[step.as] = pick(answer, step.keep)
		}
	}
	for id := range ops {
		if !replayed[id] {
			t.Errorf("the document's %s is not replayed here", id)
		}
	}
}

// signExample signs an attestation example with the agent's token, at the
// timestamp it names.
func signExample(token string, b map[string]any) {
	subject, _ := b["subject_id"].(string)
	if subject == "" {
		subject, _ = b["seal_id"].(string)
	}
	b["signature"] = credential.SignAttestation(credential.SigningKey(token), "EVE", subject, "sha256:4be1…",
		b["verdict"].(string), b["timestamp"].(string), b["rationale"].(string))
}

// pick reads a dotted path ("cards.0.id") out of a decoded JSON answer,
// a string or a number.
func pick(v any, path string) string {
	for _, part := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[part]
		case []any:
			i := 0
			for _, c := range part {
				i = i*10 + int(c-'0')
			}
			if i < len(x) {
				v = x[i]
			}
		}
	}
	if n, ok := v.(float64); ok {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	s, _ := v.(string)
	return s
}

// TestAgentDocsShowTheReplayedExamples: every example request in
// docs/agents.md (a JSON block after "<!-- example: operationId -->") is
// the document's example of that operation, which TestExamplesReplay
// sends, so the page cannot show a request Jarvis refuses.
func TestAgentDocsShowTheReplayedExamples(t *testing.T) {
	page, err := os.ReadFile("../docs/agents.md")
	if err != nil {
		t.Fatal(err)
	}
	ops := documentedOperations(t)
	blocks := regexp.MustCompile("(?s)<!-- example: (\\w+) -->\\s*```json\\n(.*?)```").FindAllStringSubmatch(string(page), -1)
	if len(blocks) == 0 {
		t.Fatal("docs/agents.md shows no examples")
	}
	for _, b := range blocks {
		var shown map[string]any
		if err := json.Unmarshal([]byte(b[2]), &shown); err != nil {
			t.Errorf("the %s example is not JSON: %v", b[1], err)
			continue
		}
		if !reflect.DeepEqual(shown, ops[b[1]].example) {
			t.Errorf("docs/agents.md shows %s as\n%s\nnot as the document's example %v", b[1], b[2], ops[b[1]].example)
		}
	}
}
