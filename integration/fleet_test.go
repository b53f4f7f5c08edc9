package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestFleetWatch: agents report, then one goes silent. Jarvis answers the
// room's question from the heartbeat records, raises an alert after the
// second missed heartbeat, marks the agent offline after the third, and
// says in the alert's thread that it is back when it reports again; each
// notice once. The
// question is put to an agent whose hourly cadence cannot lapse while
// Jarvis answers, so the answer's "online" does not depend on how fast a
// busy machine answers; EVE's 2 s cadence is for the notices, each waited
// for as a state.
func TestFleetWatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n      cadence: 2s\n    - name: HAL\n      cadence: 1h\n", port)})
	room := j.joinRoom(t, alice)
	agents := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE", "HAL")}
	agents.waitUp(t, j)

	agents.heartbeat(t, "HAL", "H-1")
	agents.heartbeat(t, "EVE", "C-1")

	body := tesths.Body(j.ask(t, alice, room, "what's the fleet doing?"))
	var hal string
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, "HAL") {
			hal = line
		}
	}
	if !strings.Contains(hal, "online") || !strings.Contains(hal, "H-1") || !strings.Contains(hal, "0.97") || !strings.Contains(body, "EVE") {
		t.Errorf("the fleet answer says %q", body)
	}

	from := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo.GetReplaceID() == "" && strings.Contains(tesths.Body(evt), text)
		}
	}
	if _, err := alice.WaitFor(ctx, 15*time.Second, from("EVE has missed 2 heartbeats")); err != nil {
		t.Fatalf("no alert after the second missed heartbeat: %v", err)
	}
	if _, err := alice.WaitFor(ctx, 15*time.Second, from("EVE is offline")); err != nil {
		t.Fatalf("no offline notice after the third: %v", err)
	}
	if body := tesths.Body(j.ask(t, alice, room, "is EVE ok?")); !strings.Contains(body, "offline") {
		t.Fatalf("'is EVE ok?' got %q", body)
	}

	agents.heartbeat(t, "EVE", "C-2")
	if _, err := alice.WaitFor(ctx, 15*time.Second, from("EVE is back")); err != nil {
		t.Fatalf("no recovery notice: %v", err)
	}
	for _, text := range []string{"EVE has missed", "EVE is offline", "EVE is back"} {
		if n := len(alice.Events(from(text))); n != 1 {
			t.Errorf("%q posted %d times, want once", text, n)
		}
	}
}
