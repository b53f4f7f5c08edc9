package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestHomeserverOutage stops the homeserver for at least 10 s, with chat
// commands before it, sent as it goes down, and after it, and notices
// written while it is away. Jarvis's log shows that it tried to send
// during the outage and failed; once the homeserver is back, every
// command is answered once and every notice arrives once, counted on the
// homeserver against Jarvis's outbox.
func TestHomeserverOutage(t *testing.T) {
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	var asked []id.EventID
	say := func(text string) id.EventID {
		t.Helper()
		sent, err := alice.Say(ctx, room, text)
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, sent)
		return sent
	}
	for _, text := range []string{"!ping", "!help"} {
		if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(say(text))); err != nil {
			t.Fatalf("no answer to %q before the outage: %v", text, err)
		}
	}

	// A second writer on Jarvis's own database, as any core service is.
	st := j.openStore(t)

	const sendFailed = `"Failed to send notice"`
	failedBefore := strings.Count(j.logs.String(), sendFailed)
	// Asked as the homeserver goes down: answered before it or after it.
	say("!ping")
	say("!sys status")
	if err := hs.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	restarted := false
	defer func() {
		if !restarted {
			_ = hs.Restart() // for the tests after this one
		}
	}()
	const queued = 3
	for i := range queued {
		err := st.Outbox().Enqueue(ctx, core.Notice{
			Key: fmt.Sprintf("outage-test:%d", i), RoomID: room.String(), Kind: core.NoticeMessage,
			Body: fmt.Sprintf("queued while the homeserver was away #%d", i),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The homeserver stays down until Jarvis has tried to send (an
	// answer, or a notice: the room's oldest goes first) and failed, and
	// for 10 s at least.
	deadline := time.Now().Add(time.Minute)
	for strings.Count(j.logs.String(), sendFailed) == failedBefore {
		if time.Now().After(deadline) {
			t.Fatalf("no failed send while the homeserver was down:\n%s", j.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Until(stopped.Add(10 * time.Second)))
	if err := hs.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted = true

	for _, text := range []string{"!ping", "!help"} {
		say(text)
	}
	for _, evt := range asked {
		if _, err := alice.WaitFor(ctx, 30*time.Second, j.replyTo(evt)); err != nil {
			t.Fatalf("command %s never answered across the outage: %v\n%s", evt, err, j.logs.String())
		}
	}
	notice := func(i int) func(*event.Event) bool {
		want := fmt.Sprintf("queued while the homeserver was away #%d", i)
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && tesths.Body(evt) == want
		}
	}
	for i := range queued {
		if _, err := alice.WaitFor(ctx, 30*time.Second, notice(i)); err != nil {
			t.Fatalf("notice %d never arrived after the outage: %v\n%s", i, err, j.logs.String())
		}
	}

	events := j.sentOnce(t, alice, room)
	for _, evt := range asked {
		if n := answers(events, evt); n != 1 {
			t.Errorf("command %s answered %d times in the room, want once", evt, n)
		}
	}
	for i := range queued {
		if n := len(alice.Events(notice(i))); n != 1 {
			t.Errorf("notice %d read %d times, want once", i, n)
		}
	}
	waitOutboxEmpty(t, st, 5*time.Second)
}

// waitOutboxEmpty waits until Jarvis has recorded every notice as sent:
// the person may see the last message a moment before Jarvis records it.
func waitOutboxEmpty(t *testing.T, st *store.Store, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		depth, err := st.Outbox().Depth(context.Background())
		if err == nil && depth == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("outbox depth = %d (%v), want 0", depth, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
