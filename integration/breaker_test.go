package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testport"
)

// agentAPI is Jarvis's HTTP API as the supervisor and the agents call it.
type agentAPI struct {
	base   string
	tokens roleTokens
}

// freeLoopbackPort returns a port on 127.0.0.1 that nothing listens on.
func freeLoopbackPort(t *testing.T) int {
	t.Helper()
	port, err := testport.Get()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// call sends a request with the token of whoever makes it (the agent the
// body names for its reports, the supervisor for breaker changes) and
// decodes the JSON answer.
func (a agentAPI) call(t *testing.T, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return a.callWith(t, a.tokens.forRoute(method, path, body), method, path, body)
}

// callWith sends a request bearing token and decodes the JSON answer.
func (a agentAPI) callWith(t *testing.T, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	return a.callWithHeaders(t, token, method, path, nil, body)
}

// callWithHeaders is callWith with more request headers.
func (a agentAPI) callWithHeaders(t *testing.T, token, method, path string, headers map[string]string, body any) (int, map[string]any) {
	t.Helper()
	var reader *bytes.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		reader = bytes.NewReader(data)
	} else {
		reader = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, a.base+path, reader)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %d, undecodable body: %v", method, path, resp.StatusCode, err)
	}
	return resp.StatusCode, out
}

// state is the agent's breaker as its turn loop reads it.
func (a agentAPI) state(t *testing.T, agent string) string {
	t.Helper()
	code, out := a.call(t, http.MethodGet, "/api/breaker/"+agent, nil)
	if code != http.StatusOK {
		t.Fatalf("GET /api/breaker/%s: %d %v", agent, code, out)
	}
	state, _ := out["state"].(string)
	return state
}

// heartbeatBody is a healthy heartbeat of agent for cycle, now.
func heartbeatBody(agent, cycle string) map[string]any {
	return map[string]any{
		"agent": agent, "cycle": cycle, "timestamp": time.Now().UTC().Format(time.RFC3339),
		"mii": 0.97, "mode_self_report": "green", "notes": "narrative check clean",
	}
}

// heartbeat reports a heartbeat of agent for cycle, now.
func (a agentAPI) heartbeat(t *testing.T, agent, cycle string) {
	t.Helper()
	code, out := a.call(t, http.MethodPost, "/api/agents/heartbeat", heartbeatBody(agent, cycle))
	if code != http.StatusOK || out["ok"] != true {
		t.Fatalf("heartbeat: %d %v", code, out)
	}
}

// waitUp waits until the API answers.
func (a agentAPI) waitUp(t *testing.T, j *jarvis) {
	t.Helper()
	// Jarvis listens once it is in its room: on a loaded machine the
	// homeserver can take its time.
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(a.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the API at %s never answered\n%s", a.base, j.logs.String())
}

// TestBreakerHaltNotice follows one halt through the room: the supervisor
// opens the breaker over the API, the halt notice reaches the room with
// its reactions and a mention of the admin, a non-admin's ▶️ is refused,
// the admin's ▶️ resumes into half-open, and the supervisor's verification
// closes it; the notice is edited at each step.
func TestBreakerHaltNotice(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: eve\n", port)})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t)}
	api.waitUp(t, j)

	code, out := api.call(t, http.MethodPost, "/api/breaker/eve/open", map[string]any{
		"severity": "safety", "reason": "tried to delete the workspace", "evidence": []string{"tool call: rm -rf /srv/workspace"},
	})
	if code != http.StatusCreated {
		t.Fatalf("open: %d %v", code, out)
	}
	eventID, _ := out["event"].(map[string]any)["id"].(string)

	notice, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), eventID)
	})
	if err != nil {
		t.Fatalf("no halt notice: %v\n%s", err, j.logs.String())
	}
	body := tesths.Body(notice)
	for _, want := range []string{"HALTED", "eve", "tried to delete the workspace", "rm -rf /srv/workspace", alice.UserID.String()} {
		if !strings.Contains(body, want) {
			t.Errorf("halt notice lacks %q:\n%s", want, body)
		}
	}
	if m := notice.Content.AsMessage().Mentions; m == nil || !m.Has(alice.UserID) {
		t.Errorf("halt notice does not mention the admin: %+v", m)
	}
	for _, key := range []string{"👀", "▶️", "⏹️"} {
		if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, notice.ID, key)); err != nil {
			t.Errorf("no %s on the halt notice: %v", key, err)
		}
	}

	inThread := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			if !tesths.MessageFrom(room, j.UserID)(evt) || !strings.Contains(tesths.Body(evt), text) {
				return false
			}
			rel := evt.Content.AsMessage().RelatesTo
			return rel != nil && rel.GetThreadParent() == notice.ID
		}
	}
	editSays := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return editOf(j.UserID, notice.ID)(evt) && strings.Contains(newBody(evt), text)
		}
	}

	// Bob is not an admin: his ▶️ is answered and changes nothing.
	if _, err := bob.SendReaction(ctx, room, notice.ID, "▶️"); err != nil {
		t.Fatal(err)
	}
	refusal, err := bob.WaitFor(ctx, waitReply, inThread("resuming a breaker is for admins"))
	if err != nil {
		t.Fatalf("no refusal of bob's ▶️: %v\n%s", err, j.logs.String())
	}
	if m := refusal.Content.AsMessage().Mentions; m == nil || !m.Has(bob.UserID) {
		t.Errorf("the refusal does not mention bob: %q", tesths.Body(refusal))
	}
	if state := api.state(t, "eve"); state != "open" {
		t.Fatalf("after bob's ▶️ the breaker is %s, want open", state)
	}

	status := tesths.Body(j.ask(t, bob, room, "!breaker status"))
	for _, want := range []string{"eve halted since", eventID, "tried to delete the workspace"} {
		if !strings.Contains(status, want) {
			t.Errorf("!breaker status lacks %q:\n%s", want, status)
		}
	}

	// Alice is: her ▶️ starts the half-open trial.
	if _, err := alice.SendReaction(ctx, room, notice.ID, "▶️"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, editSays("HALF-OPEN")); err != nil {
		t.Fatalf("the halt notice was not edited to half-open: %v\n%s", err, j.logs.String())
	}
	if state := api.state(t, "eve"); state != "half-open" {
		t.Fatalf("after alice's ▶️ the breaker is %s, want half-open", state)
	}

	code, out = api.call(t, http.MethodPost, "/api/breaker/eve/verify", map[string]any{"ok": true})
	if code != http.StatusOK || out["state"] != "closed" {
		t.Fatalf("verify: %d %v", code, out)
	}
	if _, err := alice.WaitFor(ctx, waitReply, editSays("RESOLVED")); err != nil {
		t.Fatalf("the halt notice was not edited to closed: %v", err)
	}

	if body := tesths.Body(j.ask(t, alice, room, "!breaker status eve")); !strings.Contains(body, "eve runs") || !strings.Contains(body, "verified by cred_") {
		t.Errorf("!breaker status eve after the verification:\n%s", body)
	}
}
