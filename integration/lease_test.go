package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

// TestExactlyOneJarvis is the PRD's fencing criterion: a second Jarvis on
// the same workspace posts one notice and stays mute; nothing is answered
// twice; when the holder is killed, the second takes over within the
// lease time, says so, and answers what was asked in between.
func TestExactlyOneJarvis(t *testing.T) {
	ctx := context.Background()
	const ttl = 3 * time.Second
	alice := newPerson(t, "alice")
	first := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: "workspace:\n  lease_ttl: 3s\n"})
	room := first.joinRoom(t, alice)
	fromJarvis := func(prefix string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, first.UserID)(evt) && strings.Contains(tesths.Body(evt), prefix)
		}
	}
	var asked []id.EventID
	ping := func() id.EventID {
		t.Helper()
		sent, err := alice.Say(ctx, room, "!ping")
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, sent)
		return sent
	}
	if _, err := alice.WaitFor(ctx, waitReply, first.replyTo(ping())); err != nil {
		t.Fatal(err)
	}

	second := first.Twin(t)
	if _, err := alice.WaitFor(ctx, waitReply, fromJarvis("stays mute")); err != nil {
		t.Fatalf("the second Jarvis posted no mute notice: %v\n%s", err, second.logs.String())
	}
	for range 3 {
		if _, err := alice.WaitFor(ctx, waitReply, first.replyTo(ping())); err != nil {
			t.Fatal(err)
		}
	}

	first.Kill()
	killed := time.Now()
	during := ping()
	if _, err := alice.WaitFor(ctx, ttl+10*time.Second, fromJarvis("took over")); err != nil {
		t.Fatalf("the second Jarvis did not take over: %v\n%s", err, second.logs.String())
	}
	if _, err := alice.WaitFor(ctx, waitReply, first.replyTo(during)); err != nil {
		t.Fatalf("the message sent during the switch was never answered: %v", err)
	}
	if took := time.Since(killed); took > ttl+5*time.Second {
		t.Errorf("takeover took %s, want within the lease time %s (+5 s)", took, ttl)
	}
	if _, err := alice.WaitFor(ctx, waitReply, first.replyTo(ping())); err != nil {
		t.Fatal(err)
	}

	for _, evt := range asked {
		if n := len(alice.Events(first.replyTo(evt))); n != 1 {
			t.Errorf("%s answered %d times, want once", evt, n)
		}
	}
	if n := len(alice.Events(fromJarvis("stays mute"))); n != 1 {
		t.Errorf("%d mute notices, want one", n)
	}
}
