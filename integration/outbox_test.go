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

// TestHomeserverOutage stops the homeserver for 10 s while notices queue
// up; once it is back, Jarvis reconnects and delivers every one of them,
// once, and answers commands again.
func TestHomeserverOutage(t *testing.T) {
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	j.ask(t, alice, room, "!ping")

	// A second writer on Jarvis's own database, as any core service is.
	st := j.openStore(t)

	if err := hs.Stop(); err != nil {
		t.Fatal(err)
	}
	const queued = 3
	for i := range queued {
		err := st.Outbox().Enqueue(ctx, core.Notice{
			Key: fmt.Sprintf("outage-test:%d", i), RoomID: room.String(), Kind: core.NoticeMessage,
			Body: fmt.Sprintf("queued while the homeserver was away #%d", i), Coalesce: true,
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Second) // the outage itself is real time
	if err := hs.Restart(); err != nil {
		t.Fatal(err)
	}

	for i := range queued {
		want := fmt.Sprintf("#%d", i)
		_, err := alice.WaitFor(ctx, 30*time.Second, func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "queued while") && strings.Contains(tesths.Body(evt), want)
		})
		if err != nil {
			t.Fatalf("notice %d never arrived after the outage: %v\n%s", i, err, j.logs.String())
		}
	}
	j.ask(t, alice, room, "!ping") // answered after the outage
	for i := range queued {
		want := fmt.Sprintf("#%d", i)
		n := len(alice.Events(func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), want) && strings.Contains(tesths.Body(evt), "queued while")
		}))
		if n != 1 {
			t.Errorf("notice %d arrived %d times, want once", i, n)
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
