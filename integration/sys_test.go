package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

func TestSysVerbsForAdminsOnly(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)

	tests := []struct {
		name   string
		who    *tesths.Person
		say    string
		want   []string
		forbid []string
	}{
		{"status", alice, "!sys status", []string{"Jarvis", "Matrix", "end-to-end encryption on", "Lease", "Outbox", "0 waiting", "Database", "tripwires: 0 armed", "breakers: all closed", "cards: none"}, nil},
		{"logs are redacted", alice, "!sys logs 50", []string{"Logged in with password"}, []string{"jarvis-password", "syt_"}},
		{"non-admin status", bob, "!sys status", []string{"admins only"}, []string{"Outbox"}},
		{"non-admin logs", bob, "!sys logs", []string{"admins only"}, []string{"Logged in"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := tesths.Body(j.ask(t, tt.who, room, tt.say))
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("%s: reply lacks %q:\n%s", tt.say, w, body)
				}
			}
			for _, f := range tt.forbid {
				if strings.Contains(body, f) {
					t.Errorf("%s: reply shows %q:\n%s", tt.say, f, body)
				}
			}
		})
	}
}

// TestSysStatusShowsRetention: the retention loop prunes once when Jarvis
// gains the lease, and `!sys status` says so. The pass runs beside the
// first commands, so the status is asked again until it shows the pass.
func TestSysStatusShowsRetention(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)
	var body string
	for range 20 {
		sent, err := alice.Say(ctx, room, "!sys status")
		if err != nil {
			t.Fatal(err)
		}
		reply, err := alice.WaitFor(ctx, waitReply, j.replyTo(sent))
		if err != nil {
			t.Fatal(err)
		}
		if body = tesths.Body(reply); strings.Contains(body, "retention: last pass") {
			break
		}
	}
	for _, w := range []string{"retention: last pass", "removed (", "sent messages", "deleted tripwires"} {
		if !strings.Contains(body, w) {
			t.Errorf("!sys status lacks %q:\n%s", w, body)
		}
	}
	if strings.Contains(body, "failed:") {
		t.Errorf("!sys status shows a failed pass:\n%s", body)
	}
}

// TestSysClearAndRestart: both verbs wait for the admin's ✅; restart
// drains the outbox, re-executes Jarvis, and the new process says it is
// back and answers again. The restart begins only once the ✅ is recorded
// as handled, so the new process does not take the same ✅ again: one
// restart, one answer to it, one "Back".
func TestSysClearAndRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}})
	room := j.joinRoom(t, alice)

	ask := func(text string) id.EventID {
		t.Helper()
		question := j.ask(t, alice, room, text)
		// Jarvis puts ✅ on its own question.
		if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, question.ID, "✅")); err != nil {
			t.Fatalf("no ✅ on %q: %v", tesths.Body(question), err)
		}
		if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		return question.ID
	}

	q := ask("!sys clear")
	edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, q))
	if err != nil {
		t.Fatal(err)
	}
	if body := newBody(edit); !strings.Contains(body, "Cleared") {
		t.Errorf("clear edited its question to %q", body)
	}

	ask("!sys restart")
	if _, err := alice.WaitFor(ctx, 40*time.Second, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.HasPrefix(tesths.Body(evt), "Back:")
	}); err != nil {
		t.Fatalf("Jarvis never said it was back: %v\n%s", err, j.logs.String())
	}
	j.ask(t, alice, room, "!ping") // answered after the restart
	if n := len(alice.Events(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.HasPrefix(tesths.Body(evt), "Back:")
	})); n != 1 {
		t.Errorf("said it was back %d times", n)
	}
	if n := len(alice.Events(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.HasPrefix(newBody(evt), "Restarting, as")
	})); n != 1 {
		t.Errorf("answered the restart's ✅ %d times, want once", n)
	}
	if n := strings.Count(j.logs.String(), "Restart asked"); n != 1 {
		t.Errorf("restarted %d times, want once", n)
	}
}

func reactionBy(sender id.UserID, target id.EventID, key string) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		if evt.Type != event.EventReaction || evt.Sender != sender {
			return false
		}
		_ = evt.Content.ParseRaw(evt.Type)
		rel := evt.Content.AsReaction().RelatesTo
		return rel.EventID == target && rel.Key == key
	}
}

func editOf(sender id.UserID, target id.EventID) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		if evt.Type != event.EventMessage || evt.Sender != sender {
			return false
		}
		_ = evt.Content.ParseRaw(evt.Type)
		return evt.Content.AsMessage().RelatesTo.GetReplaceID() == target
	}
}

// newBody is the text an edit replaces its target's with.
func newBody(evt *event.Event) string {
	if msg := evt.Content.AsMessage(); msg.NewContent != nil {
		return msg.NewContent.Body
	}
	return tesths.Body(evt)
}
