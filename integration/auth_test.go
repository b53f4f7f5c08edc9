package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core/credential"
)

// TestAttacks makes each attack on the agents' API over real HTTP against
// the real binary, with tokens issued by `jarvis token issue`, and checks
// that it fails with the answer the README's "Attacks and what stops them"
// table gives and changes nothing.
func TestAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n    - name: ZEUS\n", port)})
	room := j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE", "ZEUS")}
	api.waitUp(t, j)
	eve, orchestrator, supervisor := api.tokens.agent["EVE"], api.tokens.orchestrator, api.tokens.supervisor
	now := func() string { return time.Now().UTC().Format(time.RFC3339) }

	// zeus is ZEUS's record as the snapshot and the journal show it.
	zeus := func(t *testing.T) string {
		t.Helper()
		_, snap := api.callWith(t, orchestrator, http.MethodGet, "/api/terminal/snapshot", nil)
		var rec map[string]any
		for _, a := range snap["agents"].([]any) {
			if a := a.(map[string]any); a["agent"] == "ZEUS" {
				rec = a
			}
		}
		_, journal := api.callWith(t, orchestrator, http.MethodGet, "/api/agents/journal?agent=ZEUS", nil)
		return fmt.Sprintf("last %v, streak %v, journal %v", rec["heartbeat_last_at"], rec["heartbeat_streak"], journal["entries"])
	}
	// forbidden checks a 403 that names the role needed.
	forbidden := func(t *testing.T, code int, body map[string]any, role string) {
		t.Helper()
		roles, _ := body["needs_role"].([]any)
		if code != http.StatusForbidden || len(roles) != 1 || roles[0] != role {
			t.Fatalf("%d %v, want 403 naming the %s role", code, body, role)
		}
	}

	t.Run("one agent's token reports as another", func(t *testing.T) {
		before := zeus(t)
		code, body := api.callWith(t, eve, http.MethodPost, "/api/agents/heartbeat", map[string]any{
			"agent": "ZEUS", "cycle": "C-1", "timestamp": now(), "mii": 0.1, "mode_self_report": "red"})
		forbidden(t, code, body, "agent")
		if body["token_agent"] != "EVE" {
			t.Errorf("heartbeat refusal %v does not say the token is EVE's", body)
		}
		code, body = api.callWith(t, eve, http.MethodPost, "/api/agents/journal", map[string]any{
			"agent": "ZEUS", "cycle": "C-1", "entry_id": "zeus-forged-1", "title": "all clear", "content": "nothing to see",
			"signal_weight": 0.9, "timestamp": now()})
		forbidden(t, code, body, "agent")
		if after := zeus(t); after != before {
			t.Errorf("ZEUS's record changed: %s, was %s", after, before)
		}
	})

	t.Run("an orchestrator token opens a breaker", func(t *testing.T) {
		code, body := api.callWith(t, orchestrator, http.MethodPost, "/api/breaker/ZEUS/open", map[string]any{
			"severity": "safety", "reason": "forged"})
		forbidden(t, code, body, "supervisor")
		if state := api.state(t, "ZEUS"); state != "closed" {
			t.Errorf("ZEUS's breaker is %s, want closed", state)
		}
		if _, events := api.callWith(t, supervisor, http.MethodGet, "/api/breaker/ZEUS/events", nil); len(events["events"].([]any)) != 0 {
			t.Errorf("ZEUS has events: %v", events["events"])
		}
	})

	t.Run("a replayed attestation and one re-targeted to another subject", func(t *testing.T) {
		for _, id := range []string{"seal-A", "seal-B"} {
			if code, body := api.callWith(t, orchestrator, http.MethodPost, "/api/attestations/subjects", map[string]any{
				"subject_id": id, "subject_hash": "sha256:same", "agents": []string{"EVE"}}); code != http.StatusCreated {
				t.Fatalf("open %s: %d %v", id, code, body)
			}
		}
		ts := now()
		attestation := map[string]any{"subject_id": "seal-A", "agent": "EVE", "verdict": "pass", "rationale": "checks out",
			"timestamp": ts, "signature": credential.SignAttestation(credential.SigningKey(eve), "EVE", "seal-A", "sha256:same", "pass", ts, "checks out")}
		if code, body := api.callWith(t, eve, http.MethodPost, "/api/attestations", attestation); code != http.StatusOK {
			t.Fatalf("the genuine attestation: %d %v", code, body)
		}
		if code, body := api.callWith(t, eve, http.MethodPost, "/api/attestations", attestation); code != http.StatusConflict {
			t.Errorf("the replay: %d %v, want 409", code, body)
		}
		attestation["subject_id"] = "seal-B"
		if code, body := api.callWith(t, eve, http.MethodPost, "/api/attestations", attestation); code != http.StatusUnauthorized {
			t.Errorf("re-targeted to seal-B: %d %v, want 401", code, body)
		}
		for id, want := range map[string]int{"seal-A": 1, "seal-B": 0} {
			_, subject := api.callWith(t, orchestrator, http.MethodGet, "/api/attestations/subjects/"+id, nil)
			if got, _ := subject["attestations"].([]any); len(got) != want {
				t.Errorf("%s holds %d attestations, want %d", id, len(got), want)
			}
		}
	})

	// The supervisor halts EVE for the last two attacks.
	code, opened := api.callWith(t, supervisor, http.MethodPost, "/api/breaker/EVE/open", map[string]any{
		"severity": "safety", "reason": "drifted from its brief"})
	if code != http.StatusCreated {
		t.Fatalf("open EVE's breaker: %d %v", code, opened)
	}
	eventID := opened["event"].(map[string]any)["id"].(string)

	t.Run("a halted agent claims a card", func(t *testing.T) {
		var set struct {
			Cards []struct {
				ID string `json:"id"`
			} `json:"cards"`
		}
		cards := cardAPI{t: t, base: api.base, tokens: api.tokens}
		cards.call(http.MethodPost, "/api/cardsets", map[string]string{"Idempotency-Key": "attack-set"}, map[string]any{
			"cards": []map[string]any{{"goal": "Rotate the keys", "acceptance": []string{"rotated"}, "priority": "P2"}},
		}, http.StatusOK, &set)
		card := set.Cards[0].ID
		code, body := api.callWith(t, eve, http.MethodPost, "/api/cards/"+card+"/state", map[string]any{"state": "claimed"})
		if code != http.StatusLocked || body["breaker_event"] != eventID {
			t.Errorf("claim while halted: %d %v, want 423 naming %s", code, body, eventID)
		}
		var got apiCard
		cards.call(http.MethodGet, "/api/cards/"+card, nil, nil, http.StatusOK, &got)
		if got.State != "published" {
			t.Errorf("the card is %s, want published", got.State)
		}
		code, body = api.callWith(t, eve, http.MethodPost, "/api/agents/heartbeat", map[string]any{
			"agent": "EVE", "cycle": "C-1", "timestamp": now(), "mii": 0.5, "mode_self_report": "yellow"})
		if code != http.StatusOK || body["breaker_state"] != "open" || body["instruction"] != "halted: stop your turn" {
			t.Errorf("heartbeat while halted: %d %v, want 200 with breaker_state open and the instruction to stop", code, body)
		}
	})

	t.Run("a halted agent attests", func(t *testing.T) {
		if code, body := api.callWith(t, orchestrator, http.MethodPost, "/api/attestations/subjects", map[string]any{
			"subject_id": "seal-H", "subject_hash": "sha256:held", "agents": []string{"EVE"}}); code != http.StatusCreated {
			t.Fatalf("open seal-H: %d %v", code, body)
		}
		ts := now()
		attestation := map[string]any{"subject_id": "seal-H", "agent": "EVE", "verdict": "pass", "rationale": "looks fine",
			"timestamp": ts, "signature": credential.SignAttestation(credential.SigningKey(eve), "EVE", "seal-H", "sha256:held", "pass", ts, "looks fine")}
		for _, path := range []string{"/api/attestations", "/api/vault/seal/attest"} {
			code, body := api.callWith(t, eve, http.MethodPost, path, attestation)
			if code != http.StatusLocked || body["breaker_event"] != eventID || body["type"] != "urn:jarvis:problem:breaker-open" {
				t.Errorf("%s while halted: %d %v, want 423 naming %s", path, code, body, eventID)
			}
		}
		_, subject := api.callWith(t, orchestrator, http.MethodGet, "/api/attestations/subjects/seal-H", nil)
		if got, _ := subject["attestations"].([]any); len(got) != 0 {
			t.Errorf("seal-H holds %d attestations after the refusals, want 0", len(got))
		}
	})

	t.Run("an agent verifies its own breaker", func(t *testing.T) {
		sent, err := alice.Say(ctx, room, "!breaker resume "+eventID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent)); err != nil {
			t.Fatalf("no reply to the resume: %v", err)
		}
		if state := api.state(t, "EVE"); state != "half-open" {
			t.Fatalf("EVE's breaker is %s after the resume, want half-open", state)
		}
		code, body := api.callWith(t, eve, http.MethodPost, "/api/breaker/EVE/verify", map[string]any{"ok": true, "note": "I am fine"})
		forbidden(t, code, body, "supervisor")
		if state := api.state(t, "EVE"); state != "half-open" {
			t.Errorf("EVE's breaker is %s after its own verify, want half-open", state)
		}
		code, body = api.callWith(t, supervisor, http.MethodPost, "/api/breaker/EVE/verify", map[string]any{"ok": true})
		if code != http.StatusOK || body["state"] != "closed" {
			t.Errorf("the supervisor's verify: %d %v, want closed", code, body)
		}
	})
	if strings.Contains(j.logs.String(), eve) {
		t.Errorf("the log shows a token")
	}
}
