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

// TestThreads: a command written in a thread is answered in that thread
// (rel_type m.thread with the root, and a real reply to the command:
// is_falling_back false, m.in_reply_to the command), not in the room;
// `mine` written in an offline alert's thread, replying to nothing in
// particular (m.in_reply_to only the fallback to the thread's latest
// event, someone's message there), claims that alert.
func TestThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n      cadence: 2s\n", port)})
	room := j.joinRoom(t, alice)
	// inThread writes in root's thread as a client with threads does:
	// m.in_reply_to, falling back, names the thread's latest event.
	inThread := func(root, latest id.EventID, text string) id.EventID {
		t.Helper()
		content := &event.MessageEventContent{MsgType: event.MsgText, Body: text,
			RelatesTo: (&event.RelatesTo{}).SetThread(root, latest)}
		resp, err := alice.SendMessageEvent(ctx, room, event.EventMessage, content)
		if err != nil {
			t.Fatal(err)
		}
		return resp.EventID
	}
	fromJarvis := func(match func(evt *event.Event) bool) func(*event.Event) bool {
		return func(evt *event.Event) bool { return tesths.MessageFrom(room, j.UserID)(evt) && match(evt) }
	}

	t.Run("a command in a thread", func(t *testing.T) {
		root, err := alice.Say(ctx, room, "a thread about nothing in particular")
		if err != nil {
			t.Fatal(err)
		}
		ping := inThread(root, root, "!ping")
		pong, err := alice.WaitFor(ctx, waitReply, fromJarvis(func(evt *event.Event) bool {
			return evt.Content.AsMessage().RelatesTo.GetReplyTo() == ping
		}))
		if err != nil {
			t.Fatalf("no answer to !ping in a thread: %v", err)
		}
		rel := pong.Content.AsMessage().RelatesTo
		if rel.Type != event.RelThread || rel.EventID != root || rel.IsFallingBack || rel.GetNonFallbackReplyTo() != ping {
			t.Errorf("the answer relates as %+v (in_reply_to %+v), want in the thread of %s replying to %s", rel, rel.InReplyTo, root, ping)
		}
	})

	t.Run("mine in an alert's thread", func(t *testing.T) {
		agents := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE")}
		agents.waitUp(t, j)
		agents.heartbeat(t, "EVE", "C-1")
		alert, err := alice.WaitFor(ctx, 20*time.Second, fromJarvis(func(evt *event.Event) bool {
			return strings.Contains(tesths.Body(evt), "EVE is offline") && evt.Content.AsMessage().RelatesTo.GetReplaceID() == ""
		}))
		if err != nil {
			t.Fatalf("no offline alert: %v", err)
		}
		// The thread's latest event is alice's own, which takes no
		// answers: the alert, its root, does.
		looking := inThread(alert.ID, alert.ID, "looking at it")
		inThread(alert.ID, looking, "mine")
		claimed, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, alert.ID))
		if err != nil {
			t.Fatalf("mine in the alert's thread did not claim it: %v", err)
		}
		if body := newBody(claimed); !strings.Contains(body, "👀 Handled by "+alice.UserID.String()+" since ") {
			t.Errorf("after mine in its thread the alert reads:\n%s", body)
		}
	})
}
