package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

const waitReply = 20 * time.Second

func TestPingPong(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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

// TestNoHistoryReplayed: what a person said in a room before inviting
// Jarvis (a command, a tripwire sentence) is history Jarvis can see but
// does not act on; a command after its join is answered.
func TestNoHistoryReplayed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	// Jarvis is up and syncing before anything below is said.
	home := j.joinRoom(t, alice)
	sent, _ := alice.Say(ctx, home, "!ping")
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent)); err != nil {
		t.Fatalf("no pong in the dedicated room: %v\n%s", err, j.logs.String())
	}

	created, err := alice.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "private_chat"})
	if err != nil {
		t.Fatal(err)
	}
	room := created.RoomID
	for _, text := range []string{"!ping", "tell me when GI drops below 0.70"} {
		if _, err := alice.Say(ctx, room, text); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: j.UserID}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Type == event.StateMember && evt.RoomID == room && evt.GetStateKey() == j.UserID.String() &&
			evt.Content.AsMember().Membership == event.MembershipJoin
	}); err != nil {
		t.Fatalf("Jarvis did not join: %v\n%s", err, j.logs.String())
	}
	sent, err = alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent)); err != nil {
		t.Fatalf("no pong to a !ping after the join: %v\n%s", err, j.logs.String())
	}
	// Jarvis reads a room in order: by the time it answered the last
	// !ping it had seen the history, and said nothing else there.
	said := alice.Events(func(evt *event.Event) bool {
		return evt.RoomID == room && evt.Sender == j.UserID &&
			(evt.Type == event.EventMessage || evt.Type == event.EventReaction)
	})
	if len(said) != 1 {
		for _, evt := range said {
			t.Logf("Jarvis said: %q", tesths.Body(evt))
		}
		t.Errorf("Jarvis sent %d events in the room, want only the one pong", len(said))
	}
}

// TestSenderFlood: 50 `!ping` from one person get at most the burst of
// pongs and one notice; another person is still answered.
func TestSenderFlood(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	const burst = 5
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID, bob.UserID},
		extra: "chat:\n  sender_limit:\n    per_second: 0.01\n    burst: 5\n"})
	room := j.joinRoom(t, alice)
	j.joinRoom(t, bob)
	// Alice sees bob come in once the homeserver has both joins.
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Type == event.StateMember && evt.RoomID == room && evt.GetStateKey() == bob.UserID.String() &&
			evt.Content.AsMember().Membership == event.MembershipJoin
	}); err != nil {
		t.Fatalf("alice never saw bob join: %v", err)
	}

	flood := map[id.EventID]bool{}
	for range 50 {
		sent, err := alice.Say(ctx, room, "!ping")
		if err != nil {
			t.Fatal(err)
		}
		flood[sent] = true
	}
	sent, err := bob.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent)); err != nil {
		t.Fatalf("no pong for another person during the flood: %v\n%s", err, j.logs.String())
	}
	// Jarvis reads the room in order and sends in order: by the time
	// bob's pong arrived, everything it said to the flood had too.
	var pongs, notices int
	for _, evt := range alice.Events(func(evt *event.Event) bool {
		if evt.Type != event.EventMessage || evt.Sender != j.UserID {
			return false
		}
		rel := evt.Content.AsMessage().RelatesTo
		return rel != nil && flood[rel.GetReplyTo()]
	}) {
		switch body := tesths.Body(evt); {
		case strings.HasPrefix(body, "pong"):
			pongs++
		case strings.Contains(body, "You are sending faster than I can answer; I will ignore messages for"):
			notices++
		default:
			t.Errorf("unexpected reply to the flood: %q", body)
		}
	}
	if pongs > burst || notices != 1 {
		t.Errorf("a flood of 50 got %d pongs and %d notices, want at most %d and 1", pongs, notices, burst)
	}
}

// TestAnswersWhileStarting: someone who joins the dedicated room as soon as
// Jarvis has created it, and speaks before Jarvis's first sync, is
// answered; what they said is not history from before Jarvis started. A
// proxy holds the homeserver's answer to Jarvis's createRoom until alice,
// invited as an admin, has joined and said !ping, so she speaks while
// Jarvis is still starting.
func TestAnswersWhileStarting(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	proxy := newStallProxy(t, hs.URL)
	proxy.stallNext(func(r *http.Request) bool {
		return r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/createRoom")
	})
	proxied := *hs
	proxied.URL = proxy.URL
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, hs: &proxied})
	select {
	case <-proxy.stalled:
	case <-time.After(waitReply):
		t.Fatalf("Jarvis created no room within %s:\n%s", waitReply, j.logs.String())
	}
	room := j.enter(t, alice)
	if err := alice.WaitReady(ctx, room, j.UserID, waitReply); err != nil {
		t.Fatal(err)
	}
	sent, err := alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	close(proxy.release)
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent)); err != nil {
		t.Fatalf("no answer to a !ping said while Jarvis was starting: %v\n%s", err, j.logs.String())
	}
}
