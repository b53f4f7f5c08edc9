package integration

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestAttestationOutcome: an agent's heartbeat answer says a subject
// awaits its verdict; once a quorum of the awaited agents has attested the
// outcome is relayed to the room, and again when the veto agent rejects;
// `!fleet` shows the stored outcome with the verdicts behind it.
func TestAttestationOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(`api:
  listen: 127.0.0.1:%d
fleet:
  agents:
    - name: EVE
    - name: ZEUS
    - name: ATLAS
  attestations:
    quorum: 0.6
    veto_agent: ZEUS
`, port)})
	room := j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE", "ZEUS", "ATLAS")}
	api.waitUp(t, j)
	const hash = "sha256:release-284"
	if code, body := api.callWith(t, api.tokens.orchestrator, http.MethodPost, "/api/attestations/subjects", map[string]any{
		"subject_id": "seal-284", "subject_hash": hash, "title": "Release 284", "agents": []string{"EVE", "ZEUS", "ATLAS"}}); code != http.StatusCreated {
		t.Fatalf("open the subject: %d %v", code, body)
	}
	code, answer := api.call(t, http.MethodPost, "/api/agents/heartbeat", heartbeatBody("EVE", "C-1"))
	if awaited, _ := answer["attestations_awaited"].([]any); code != http.StatusOK || !slices.Equal(awaited, []any{"seal-284"}) {
		t.Fatalf("EVE's heartbeat answer = %d %v, want seal-284 awaited", code, answer)
	}
	attest := func(agent, verdict string) {
		t.Helper()
		ts := time.Now().UTC().Format(time.RFC3339Nano)
		sig := credential.SignAttestation(credential.SigningKey(api.tokens.agent[agent]), agent, "seal-284", hash, verdict, ts, "my dimension")
		if code, body := api.call(t, http.MethodPost, "/api/attestations", map[string]any{"subject_id": "seal-284", "agent": agent,
			"verdict": verdict, "rationale": "my dimension", "timestamp": ts, "signature": sig}); code != http.StatusOK {
			t.Fatalf("%s attests %s: %d %v", agent, verdict, code, body)
		}
	}
	relayed := func(what string) {
		t.Helper()
		if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			return evt.Type == event.EventMessage && evt.Sender == j.UserID && evt.RoomID == room &&
				strings.Contains(tesths.Body(evt), "Attestation seal-284 (Release 284): "+what)
		}); err != nil {
			t.Fatalf("the room was not told %q: %v", what, err)
		}
	}
	attest("EVE", "pass")
	attest("ATLAS", "pass")
	relayed("passed — 2 of 3 verdicts in (pass 2), quorum 2")
	attest("ZEUS", "reject")
	relayed("vetoed — vetoed by ZEUS; 3 of 3 verdicts in (pass 2, reject 1), quorum 2")
	if code, answer := api.call(t, http.MethodPost, "/api/agents/heartbeat", heartbeatBody("EVE", "C-1")); code != http.StatusOK || answer["attestations_awaited"] != nil {
		t.Errorf("after attesting, EVE's heartbeat answer = %d %v, want nothing awaited", code, answer)
	}
	if body := tesths.Body(j.ask(t, alice, room, "!fleet")); !strings.Contains(body, "seal-284 Release 284: vetoed — vetoed by ZEUS") {
		t.Errorf("!fleet does not show the outcome:\n%s", body)
	}
	if n := len(alice.Events(func(evt *event.Event) bool {
		return evt.Sender == j.UserID && strings.Contains(tesths.Body(evt), "Attestation seal-284")
	})); n != 2 {
		t.Errorf("the room was told of seal-284 %d times, want twice", n)
	}
}
