package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/tesths"
)

const waitReply = 20 * time.Second

func TestPingPong(t *testing.T) {
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)

	if body := tesths.Body(j.ask(t, alice, room, "!ping")); !strings.HasPrefix(body, "pong") {
		t.Errorf("reply to !ping = %q, want it to start with pong", body)
	}

	help := tesths.Body(j.ask(t, alice, room, "!help"))
	for _, want := range []string{"!ping", "!help"} {
		if !strings.Contains(help, want) {
			t.Errorf("!help reply lacks %q:\n%s", want, help)
		}
	}

	if body := tesths.Body(j.ask(t, alice, room, "!frobnicate")); !strings.Contains(body, "Unknown command") || !strings.Contains(body, "!help") {
		t.Errorf("reply to an unknown command = %q", body)
	}
}

// TestStrangersGetNoAnswer: someone outside allowed_users, in the room
// and reading it, gets nothing from Jarvis for a command: no reply, no
// notice, no direct message.
func TestStrangersGetNoAnswer(t *testing.T) {
	ctx := context.Background()
	alice := newPerson(t, "alice")
	mallory := newPerson(t, "mallory")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, allowed: []string{alice.UserID.String()}})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: mallory.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinStranger(t, mallory)

	j.noAnswer(t, mallory, alice, room, "!ping", "!sys status", "tell me when GI drops below 0.70")
}

// TestRestartAnswersOnce kills Jarvis mid-conversation and restarts it:
// every command is answered exactly once, including those sent while it
// was down. The new process waits for the killed one's lease to lapse
// (3 s here), as any second Jarvis must.
func TestRestartAnswersOnce(t *testing.T) {
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: "workspace:\n  lease_ttl: 3s\n"})
	room := j.joinRoom(t, alice)

	var sent []id.EventID
	say := func() {
		evt, err := alice.Say(ctx, room, "!ping")
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, evt)
	}
	say()
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent[0])); err != nil {
		t.Fatal(err)
	}
	say()
	say()
	j.Kill()
	say()
	say()
	j.Start()
	say()

	for _, evt := range sent {
		if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(evt)); err != nil {
			t.Fatalf("no reply to %s after restart: %v", evt, err)
		}
	}
	// Give a duplicate every chance to show up before counting.
	j.ask(t, alice, room, "!ping")
	events := j.sentOnce(t, alice, room)
	for _, evt := range sent {
		if n := answers(events, evt); n != 1 {
			t.Errorf("command %s answered %d times in the room, want once", evt, n)
		}
		if n := len(alice.Events(j.replyTo(evt))); n != 1 {
			t.Errorf("command %s: %d answers read, want one", evt, n)
		}
	}
}
