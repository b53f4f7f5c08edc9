package integration

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestAgentAddedOverTheAPIIsWatched: an agent a supervisor adds with PUT
// /api/agents/{name}, and one an operator adds with `jarvis agent add`
// while Jarvis runs, are watched with no edit of the configuration file
// and no restart: each that does not report within its cadence is told
// in the room once, a token is issued for it, and its first ping resolves
// the alert; an agent token may not add one, and a removed agent leaves
// !fleet.
func TestAgentAddedOverTheAPIIsWatched(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: 127.0.0.1:%d\nfleet:\n  group_window: 0s\n  agents:\n    - name: TICK\n      cadence: 4s\n", port)})
	room := j.joinRoom(t, alice)
	agents := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "TICK")}
	agents.waitUp(t, j)
	said := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
		}
	}

	if code, out := agents.callWith(t, agents.tokens.agent["TICK"], http.MethodPut, "/api/agents/MALLORY", map[string]any{"cadence": "2s"}); code != http.StatusForbidden {
		t.Fatalf("an agent token adds an agent: %d %v, want 403", code, out)
	}
	if code, out := agents.callWith(t, agents.tokens.supervisor, http.MethodPut, "/api/agents/NIGHTLY", map[string]any{"cadence": "2s", "grace": "1s"}); code != http.StatusCreated {
		t.Fatalf("a supervisor adds NIGHTLY: %d %v, want 201", code, out)
	}
	if out, err := exec.Command(jarvisBin, "agent", "add", "CRONJOB", "--config", j.cfgPath, "--cadence", "2s").CombinedOutput(); err != nil {
		t.Fatalf("jarvis agent add: %v\n%s", err, out)
	}
	for _, agent := range []string{"NIGHTLY", "CRONJOB"} {
		if _, err := alice.WaitFor(ctx, waitReply, said(agent+" has never reported")); err != nil {
			t.Fatalf("no alert that the added %s never reported: %v", agent, err)
		}
	}

	token := j.issueToken(t, "agent", "nightly")
	if code, out := agents.callWith(t, token, http.MethodPost, "/api/ping", nil); code != http.StatusOK {
		t.Fatalf("NIGHTLY pings: %d %v", code, out)
	}
	if _, err := alice.WaitFor(ctx, waitReply, said("NIGHTLY reported for the first time")); err != nil {
		t.Fatalf("NIGHTLY's first ping did not resolve its alert: %v", err)
	}
	// A cadence of 2 s would make NIGHTLY late again before !fleet is
	// answered on a busy machine: the supervisor changes it to an hour,
	// which the roster takes at once, and NIGHTLY pings once more.
	if code, out := agents.callWith(t, agents.tokens.supervisor, http.MethodPut, "/api/agents/NIGHTLY", map[string]any{"cadence": "1h", "grace": "1s"}); code != http.StatusOK {
		t.Fatalf("a supervisor changes NIGHTLY's cadence: %d %v, want 200", code, out)
	}
	// Misses the sweep counted at the old cadence stand until NIGHTLY
	// reports again.
	if code, out := agents.callWith(t, token, http.MethodPost, "/api/ping", nil); code != http.StatusOK {
		t.Fatalf("NIGHTLY pings again: %d %v", code, out)
	}
	fleet := tesths.Body(j.ask(t, alice, room, "!fleet"))
	if !strings.Contains(fleet, "NIGHTLY online") || !strings.Contains(fleet, "expected every 1h, grace 1s") || !strings.Contains(fleet, "CRONJOB never reported") {
		t.Errorf("!fleet says:\n%s\nwant NIGHTLY online with its new cadence and grace, CRONJOB never reported", fleet)
	}

	req, err := http.NewRequest(http.MethodDelete, agents.base+"/api/agents/CRONJOB", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+agents.tokens.supervisor)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("a supervisor removes CRONJOB: %d, want 204", resp.StatusCode)
	}
	if fleet := tesths.Body(j.ask(t, alice, room, "!fleet")); strings.Contains(fleet, "CRONJOB") {
		t.Errorf("!fleet after CRONJOB's removal still lists it:\n%s", fleet)
	}
	for _, text := range []string{"NIGHTLY has never reported", "CRONJOB has never reported"} {
		if n := len(alice.Events(said(text))); n != 1 {
			t.Errorf("%q was said %d times, want once", text, n)
		}
	}
}
