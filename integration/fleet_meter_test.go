package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestSpendCrashLoopAndSilence: EVE's heartbeats carry spend and boot ids.
// Past 80 % of its daily budget the admins are warned once; three new boot
// ids within the window are a crash loop, announced once as such; `!fleet`
// shows the spend. WALL-E, configured but never heard from, is alerted once
// its first window has passed.
func TestSpendCrashLoopAndSilence(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n      cadence: 1h\n      budget: {daily: 2, currency: USD}\n"+
			"    - name: WALL-E\n      cadence: 3s\n  crash_loop:\n    restarts: 3\n    window: 10m\n", port)})
	room := j.joinRoom(t, alice)
	agents := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE", "WALL-E")}
	agents.waitUp(t, j)

	heartbeat := func(boot string, cost float64) {
		t.Helper()
		code, out := agents.call(t, http.MethodPost, "/api/agents/heartbeat", map[string]any{
			"agent": "EVE", "cycle": "C-1", "timestamp": time.Now().UTC().Format(time.RFC3339),
			"mii": 0.97, "mode_self_report": "green", "boot_id": boot,
			"spend": map[string]any{"tokens_in": 1200, "tokens_out": 300, "cost": cost, "currency": "USD"},
		})
		if code != http.StatusOK {
			t.Fatalf("heartbeat: %d %v", code, out)
		}
	}
	said := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
		}
	}

	heartbeat("boot-1", 1.7)
	if _, err := alice.WaitFor(ctx, waitReply, said("EVE has spent 1.70 USD today, 85 % of its daily budget of 2.00 USD")); err != nil {
		t.Fatalf("no budget warning: %v", err)
	}
	for _, boot := range []string{"boot-2", "boot-3", "boot-4"} {
		heartbeat(boot, 0.01)
	}
	if _, err := alice.WaitFor(ctx, waitReply, said("Crash loop: EVE has restarted 3 times in 10m")); err != nil {
		t.Fatalf("no crash-loop notice: %v", err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, said("WALL-E has never reported")); err != nil {
		t.Fatalf("no alert about WALL-E: %v", err)
	}
	body := tesths.Body(j.ask(t, alice, room, "!fleet"))
	if !strings.Contains(body, "spent 1.73 USD today (86 % of 2.00 USD), 4800 tokens in, 1200 out") || !strings.Contains(body, "3 restarts lately") {
		t.Errorf("!fleet says:\n%s", body)
	}

	for _, text := range []string{"EVE has spent", "Crash loop: EVE", "WALL-E has never reported"} {
		if n := len(alice.Events(said(text))); n != 1 {
			t.Errorf("%q was said %d times, want once", text, n)
		}
	}
}
