package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

func TestApprovalsAPI(t *testing.T) {
	ctx := context.Background()
	clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	st := testdb.OpenStore(t, store.SQLite)
	w := services.Wiring{Store: st, Clock: clock, Room: "!jarvis:example.org", Admins: []string{"@admin:example.org"}}
	approvals := w.Approvals(approval.Config{RemindAfter: 15 * time.Minute, Approvers: []string{"@alice:example.org"}}, func(d *approval.Deps) {
		d.MayAsk = func(u string) bool { return strings.HasSuffix(u, ":example.org") }
	})
	breakers := w.Breakers(testconfig.Breaker())
	tokens := issueTokens(t, st, "worker", "other")
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterApprovals(server, approvals, breakers)
	fx := &cardsAPIFixture{server: server, store: st, tokens: tokens}

	body := `{"action": "drop the staging database", "reason": "it is rebuilt nightly", "approver": "@alice:example.org",
		"deadline": "2026-07-09T10:00:00Z", "default": "deny"}`
	key := map[string]string{"Idempotency-Key": "drop-staging-1"}
	worker := tokens.agent["worker"]

	rec := fx.sendAs(t, worker, "POST", "/api/approvals", body, key)
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST = %d %s, want 201", rec.Code, rec.Body)
	}
	var created struct {
		ID       string   `json:"id"`
		Agent    string   `json:"agent"`
		Status   string   `json:"status"`
		Asked    []string `json:"asked"`
		Deadline string   `json:"deadline"`
	}
	_ = json.Unmarshal(rec.Body.Bytes(), &created)
	if created.Agent != "worker" || created.Status != "pending" || strings.Join(created.Asked, ",") != "@alice:example.org" ||
		created.Deadline != "2026-07-09T10:00:00Z" {
		t.Errorf("created %s", rec.Body)
	}

	t.Run("a replay answers the same request", func(t *testing.T) {
		rec := fx.sendAs(t, worker, "POST", "/api/approvals", body, key)
		if rec.Code != http.StatusOK || rec.Header().Get("Idempotent-Replayed") != "true" || !strings.Contains(rec.Body.String(), created.ID) {
			t.Errorf("replay = %d %s (replayed %q)", rec.Code, rec.Body, rec.Header().Get("Idempotent-Replayed"))
		}
	})
	t.Run("the key for another request is refused", func(t *testing.T) {
		other := strings.Replace(body, "staging", "production", 1)
		if rec := fx.sendAs(t, worker, "POST", "/api/approvals", other, key); rec.Code != http.StatusUnprocessableEntity {
			t.Errorf("reused key = %d %s, want 422", rec.Code, rec.Body)
		}
	})
	t.Run("the agent reads the outcome", func(t *testing.T) {
		if _, err := approvals.Decide(ctx, created.ID, approval.Verdict{Approve: true}, approval.Decider{Who: "@alice:example.org", Network: "matrix", Trust: core.TrustNative}); err != nil {
			t.Fatal(err)
		}
		rec := fx.sendAs(t, worker, "GET", "/api/approvals/"+created.ID, "", nil)
		var got struct {
			Status    string `json:"status"`
			DecidedBy string `json:"decided_by"`
			DecidedAt string `json:"decided_at"`
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &got)
		if rec.Code != http.StatusOK || got.Status != "approved" || got.DecidedBy != "@alice:example.org" || got.DecidedAt != "2026-07-09T09:00:00Z" {
			t.Errorf("GET = %d %s", rec.Code, rec.Body)
		}
		if rec := fx.sendAs(t, worker, "GET", "/api/approvals/apr_nothing", "", nil); rec.Code != http.StatusNotFound {
			t.Errorf("GET of an unknown request = %d, want 404", rec.Code)
		}
	})

	refusals := []struct {
		name  string
		token string
		body  string
		key   string
		want  int
	}{
		{"no idempotency key", worker, body, "", http.StatusBadRequest},
		{"another agent's name", worker, `{"agent": "other", "action": "a", "reason": "b"}`, "k-other", http.StatusForbidden},
		{"an orchestrator's token", tokens.orchestrator, `{"action": "a", "reason": "b"}`, "k-orch", http.StatusForbidden},
		{"an over-long reason", worker, `{"action": "a", "reason": "` + strings.Repeat("x", approval.MaxReasonLen+1) + `"}`, "k-long", http.StatusBadRequest},
		{"an unknown approver", worker, `{"action": "a", "reason": "b", "approver": "@mallory:evil.example"}`, "k-evil", http.StatusBadRequest},
		{"a deadline that is no time", worker, `{"action": "a", "reason": "b", "deadline": "tomorrow"}`, "k-time", http.StatusBadRequest},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.key != "" {
				h["Idempotency-Key"] = tt.key
			}
			if rec := fx.sendAs(t, tt.token, "POST", "/api/approvals", tt.body, h); rec.Code != tt.want {
				t.Errorf("= %d %s, want %d", rec.Code, rec.Body, tt.want)
			}
		})
	}
	t.Run("a halted agent is refused", func(t *testing.T) {
		if _, err := breakers.Open(ctx, "worker", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "drift", By: "aster"}); err != nil {
			t.Fatal(err)
		}
		if rec := fx.sendAs(t, worker, "POST", "/api/approvals", `{"action": "a", "reason": "b"}`, map[string]string{"Idempotency-Key": "k-halt"}); rec.Code != http.StatusLocked {
			t.Errorf("= %d %s, want 423", rec.Code, rec.Body)
		}
	})
	if pending, _ := approvals.Pending(ctx); len(pending) != 0 {
		t.Errorf("the refusals left %d pending requests, want none", len(pending))
	}
}
