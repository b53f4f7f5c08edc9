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
	alice := newPerson(t, "alice")
	failover(t, alice, options{admins: []id.UserID{alice.UserID}, extra: "workspace:\n  lease_ttl: 3s\n"})
}

// failover runs the fencing scenario on a workspace whose Jarvis opts
// configure (with a 3 s lease): one mute notice from the second process,
// every command answered once, takeover within the lease time after the
// holder's SIGKILL; and, counted on the homeserver, every event Jarvis
// put in the room is one sent outbox row, and every sent row is there
// once.
func failover(t *testing.T, alice *tesths.Person, opts options) {
	t.Helper()
	ctx := context.Background()
	const ttl = 3 * time.Second
	holder := newJarvis(t, opts)
	room := holder.joinRoom(t, alice)
	fromJarvis := func(prefix string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, holder.UserID)(evt) && strings.Contains(tesths.Body(evt), prefix)
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
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(ping())); err != nil {
		t.Fatal(err)
	}

	standby := holder.Twin(t)
	if _, err := alice.WaitFor(ctx, waitReply, fromJarvis("stays mute")); err != nil {
		t.Fatalf("the standby posted no mute notice: %v\n%s", err, standby.logs.String())
	}
	for range 3 {
		if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(ping())); err != nil {
			t.Fatal(err)
		}
	}

	holder.Kill()
	killed := time.Now()
	during := ping()
	if _, err := alice.WaitFor(ctx, ttl+10*time.Second, fromJarvis("took over")); err != nil {
		t.Fatalf("the standby did not take over: %v\n%s", err, standby.logs.String())
	}
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(during)); err != nil {
		t.Fatalf("the message sent during the switch was never answered: %v", err)
	}
	if took := time.Since(killed); took > ttl+5*time.Second {
		t.Errorf("takeover took %s, want within the lease time %s (+5 s)", took, ttl)
	}
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(ping())); err != nil {
		t.Fatal(err)
	}

	events := holder.sentOnce(t, alice, room)
	for _, evt := range asked {
		if n := answers(events, evt); n != 1 {
			t.Errorf("%s answered %d times in the room, want once", evt, n)
		}
		if n := len(alice.Events(holder.replyTo(evt))); n != 1 {
			t.Errorf("%s: %d answers read, want one", evt, n)
		}
	}
	if n := len(alice.Events(fromJarvis("stays mute"))); n != 1 {
		t.Errorf("%d mute notices, want one", n)
	}
}
