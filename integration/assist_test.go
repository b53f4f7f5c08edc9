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

// sendAs has p send content in room, retrying while p's client has no
// session to encrypt with yet, and returns the event ID.
func sendAs(t *testing.T, p *tesths.Person, room id.RoomID, content *event.MessageEventContent) id.EventID {
	t.Helper()
	resp, err := p.SendMessageEvent(context.Background(), room, event.EventMessage, content)
	if err != nil {
		t.Fatalf("%s sends %q: %v", p.UserID, content.Body, err)
	}
	return resp.EventID
}

// answered waits for Jarvis's reply to sent and returns its body.
func (j *jarvis) answered(t *testing.T, p *tesths.Person, sent id.EventID, what string) string {
	t.Helper()
	reply, err := p.WaitFor(context.Background(), waitReply, j.replyTo(sent))
	if err != nil {
		t.Fatalf("no answer to %s: %v", what, err)
	}
	return tesths.Body(reply)
}

// TestSpokenToMeansAnswered: a message that starts with Jarvis's display
// name, mentions it, replies to it, or is in a direct room with it is
// answered; small talk in the shared room is not; a question by name is
// answered from the records (a breaker an agent's supervisor opened over
// the API), ending with the command that shows more.
func TestSpokenToMeansAnswered(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, displayName: "Jarvis",
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: eve\n", port)})
	room := j.joinRoom(t, alice)

	smallTalk, err := alice.Say(ctx, room, "good morning everyone, the coffee is fresh")
	if err != nil {
		t.Fatal(err)
	}
	byName, err := alice.Say(ctx, room, "Jarvis, what's the weather like?")
	if err != nil {
		t.Fatal(err)
	}
	if body := j.answered(t, alice, byName, "a message by name"); !strings.Contains(body, "!help") {
		t.Errorf("by name: %q, want a short line with !help", body)
	}
	if got := alice.Events(j.replyTo(smallTalk)); len(got) != 0 {
		t.Errorf("small talk was answered: %q", tesths.Body(got[0]))
	}

	mention := sendAs(t, alice, room, &event.MessageEventContent{MsgType: event.MsgText, Body: "Jarvis: any cards blocked?",
		Format: event.FormatHTML, FormattedBody: fmt.Sprintf(`<a href="https://matrix.to/#/%s">Jarvis</a>: any cards blocked?`, j.UserID),
		Mentions: &event.Mentions{UserIDs: []id.UserID{j.UserID}}})
	if body := j.answered(t, alice, mention, "a mention"); !strings.Contains(body, "No card is blocked") || !strings.Contains(body, "!card list") {
		t.Errorf("a mention asking about cards: %q", body)
	}
	onlyMention := sendAs(t, alice, room, &event.MessageEventContent{MsgType: event.MsgText, Body: "what do you think?",
		Mentions: &event.Mentions{UserIDs: []id.UserID{j.UserID}}})
	if body := j.answered(t, alice, onlyMention, "m.mentions alone"); !strings.Contains(body, "!help") {
		t.Errorf("m.mentions alone: %q", body)
	}

	pong := j.ask(t, alice, room, "!ping")
	reply := sendAs(t, alice, room, &event.MessageEventContent{MsgType: event.MsgText, Body: "nice, and what else?",
		RelatesTo: &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: pong.ID}}})
	if body := j.answered(t, alice, reply, "a reply to Jarvis"); !strings.Contains(body, "!help") {
		t.Errorf("a reply to Jarvis: %q", body)
	}

	dm := j.directRoom(t, alice)
	if body := tesths.Body(j.ask(t, alice, dm, "hello")); !strings.Contains(body, "Hello!") && !strings.Contains(body, "!help") {
		t.Errorf("hello in the direct room: %q", body)
	}
	if body := tesths.Body(j.ask(t, alice, dm, "help")); !strings.Contains(body, "!remind") {
		t.Errorf("help in the direct room: %q", body)
	}

	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t)}
	api.waitUp(t, j)
	if code, out := api.call(t, http.MethodPost, "/api/breaker/eve/open", map[string]any{
		"severity": "safety", "reason": "tried to delete the workspace", "evidence": []string{"tool call: rm -rf /srv/workspace"},
	}); code != http.StatusCreated {
		t.Fatalf("open: %d %v", code, out)
	}
	body := tesths.Body(j.ask(t, alice, room, "Jarvis, is anything halted?"))
	for _, want := range []string{"eve is halted since", "tried to delete the workspace", "!breaker status"} {
		if !strings.Contains(body, want) {
			t.Errorf("is anything halted: %q lacks %q", body, want)
		}
	}
	if body := tesths.Body(j.ask(t, alice, room, "Jarvis, did anything trip overnight?")); !strings.Contains(body, "Nothing tripped overnight") {
		t.Errorf("did anything trip overnight: %q", body)
	}
}

// isReminder matches a reminder Jarvis delivers in room with text in it.
func (j *jarvis) isReminder(room id.RoomID, text string) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		body := tesths.Body(evt)
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(body, "Reminder:") && strings.Contains(body, text)
	}
}

// TestReminderInOneMinute, in real time: a reminder set "in 1 minute"
// reaches the direct room on time; ⏰ snoozes it (chat.snooze is 3 s here)
// and it comes again. A reminder due while Jarvis was stopped comes once
// after the start, saying it is late.
func TestReminderInOneMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, displayName: "Jarvis",
		extra: "chat:\n  snooze: 3s\n  sender_limit:\n    per_second: 100\n    burst: 100\nworkspace:\n  lease_ttl: 3s\n"})
	room := j.joinRoom(t, alice)
	dm := j.directRoom(t, alice)

	set := time.Now()
	if body := tesths.Body(j.ask(t, alice, room, "Jarvis, remind me in 1 minute to stretch")); !strings.Contains(body, "I'll remind you today at") {
		t.Fatalf("setting the reminder: %q", body)
	}
	first, err := alice.WaitFor(ctx, 90*time.Second, j.isReminder(dm, "stretch"))
	if err != nil {
		t.Fatalf("the reminder never came: %v", err)
	}
	if took := time.Since(set); took < 55*time.Second || took > 75*time.Second {
		t.Errorf("the reminder came after %s, want about a minute", took.Round(time.Second))
	}
	if strings.Contains(tesths.Body(first), "late") {
		t.Errorf("an on-time reminder says it is late: %q", tesths.Body(first))
	}
	if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, first.ID, "⏰")); err != nil {
		t.Fatalf("no ⏰ on the reminder: %v", err)
	}
	if _, err := alice.SendReaction(ctx, dm, first.ID, "⏰"); err != nil {
		t.Fatal(err)
	}
	again, err := alice.WaitFor(ctx, 30*time.Second, func(evt *event.Event) bool {
		return evt.ID != first.ID && j.isReminder(dm, "stretch")(evt)
	})
	if err != nil {
		t.Fatalf("the snoozed reminder never came again: %v", err)
	}
	if _, err := alice.SendReaction(ctx, dm, again.ID, "✅"); err != nil {
		t.Fatal(err)
	}

	// Set another, and stop Jarvis before it is due.
	if body := tesths.Body(j.ask(t, alice, dm, "remind me in 1 minute to drink water")); !strings.Contains(body, "I'll remind you") {
		t.Fatalf("setting the second reminder: %q", body)
	}
	// Jarvis stays stopped past the reminder's time: while it is stopped,
	// the reminder's time moves 95 s back, as a stop that long would have
	// left it, without the test waiting for it.
	j.Stop()
	res, err := j.openStore(t).DB.Exec(ctx, `UPDATE reminder SET due_at = due_at - 95000, at_time = at_time - 95000
		WHERE body LIKE '%drink water%' AND status = 'waiting'`)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		t.Fatalf("moved %d reminders back (%v), want the one", n, err)
	}
	j.Start()
	late, err := alice.WaitFor(ctx, 60*time.Second, j.isReminder(dm, "drink water"))
	if err != nil {
		t.Fatalf("the reminder due during the stop never came: %v", err)
	}
	if body := tesths.Body(late); !strings.Contains(body, "This comes late") {
		t.Errorf("the late reminder does not say so: %q", body)
	}
	// Once: a !ping answered after it shows nothing more was queued.
	j.ask(t, alice, dm, "!ping")
	if n := len(alice.Events(j.isReminder(dm, "drink water"))); n != 1 {
		t.Errorf("the late reminder came %d times", n)
	}
	if n := len(alice.Events(j.isReminder(dm, "stretch"))); n != 2 {
		t.Errorf("the snoozed reminder came %d times, want twice", n)
	}
}
