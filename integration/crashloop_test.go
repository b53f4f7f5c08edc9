package integration

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestCrashLoopAnnounced: Jarvis killed twice in a row, as a crash would,
// says once it is back that it was in a crash loop, and `!sys status`
// counts its starts and the ones that ended without a clean stop; a
// restart after a clean stop is no crash.
func TestCrashLoopAnnounced(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: "workspace:\n  lease_ttl: 3s\nwatchdog:\n  crash_loop:\n    restarts: 2\n    window: 15m\n"})
	room := j.joinRoom(t, alice)
	crashLoop := func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "crash loop")
	}

	j.Stop()
	j.Start()
	j.ask(t, alice, room, "!ping")
	j.Kill()
	j.Start()
	j.ask(t, alice, room, "!ping")
	j.Kill()
	j.Start()
	announced, err := alice.WaitFor(ctx, waitReply, crashLoop)
	if err != nil {
		t.Fatalf("no crash loop announced after two kills: %v", err)
	}
	if body := tesths.Body(announced); !strings.Contains(body, "started 2 times within 15m0s") {
		t.Errorf("the announcement says %q, want the two crashed starts", body)
	}
	if body := tesths.Body(j.ask(t, alice, room, "!sys status")); !strings.Contains(body, "4 starts in the last 24 hours, 2 earlier ones without a clean stop") {
		t.Errorf("!sys status says:\n%s\nwant 4 starts, 2 without a clean stop", body)
	}
}
