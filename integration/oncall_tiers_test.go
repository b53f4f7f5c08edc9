package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// inThreadOf matches Jarvis's messages in the thread of root that say text.
func inThreadOf(j *jarvis, room id.RoomID, root id.EventID, text string) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		if !tesths.MessageFrom(room, j.UserID)(evt) || !strings.Contains(tesths.Body(evt), text) {
			return false
		}
		rel := evt.Content.AsMessage().RelatesTo
		return rel != nil && rel.Type == event.RelThread && rel.EventID == root
	}
}

// TestOnCallHaltClaimAndResume: the supervisor halts eve. carol taps 💤
// on the halt notice and is refused (she does not hold it); alice, the
// admin, taps 💤: it is edited to say she snoozed it. bob, who is no
// admin, taps 👀 and owns it: the breaker's edit says he is reviewing it
// and still says alice's snooze. carol's 👀 is told bob has it. bob's ▶️ resumes
// nothing (a claim grants nothing else); alice, the admin, taps ▶️ and the
// one edit that puts eve on its trial also says the alert resolved, how
// long it was open and that bob handled it, with one all-clear reply in
// the notice's thread and no new message in the room after the notice.
func TestOnCallHaltClaimAndResume(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, bob, api := onCallRoom(t, "fleet:\n  agents:\n    - name: eve\n")
	carol := newPerson(t, "carol")
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: carol.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, carol)
	code, out := api.call(t, http.MethodPost, "/api/breaker/eve/open", map[string]any{"severity": "safety", "reason": "tried to delete the workspace"})
	if code != http.StatusCreated {
		t.Fatalf("open: %d %v", code, out)
	}
	eventID, _ := out["event"].(map[string]any)["id"].(string)
	notice, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), eventID)
	})
	if err != nil {
		t.Fatalf("no halt notice: %v", err)
	}
	for _, key := range []string{"👀", "💤"} {
		if _, err := bob.WaitFor(ctx, waitReply, reactionBy(j.UserID, notice.ID, key)); err != nil {
			t.Fatalf("no %s on the halt notice: %v", key, err)
		}
	}
	editSays := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return editOf(j.UserID, notice.ID)(evt) && strings.Contains(newBody(evt), text)
		}
	}

	// carol, who does not hold the halt, cannot snooze it; the admin can.
	if _, err := carol.SendReaction(ctx, room, notice.ID, "💤"); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) &&
			strings.Contains(tesths.Body(evt), carol.UserID.String()+": Only whoever claimed this alert, or an admin, can snooze it")
	}); err != nil {
		t.Fatalf("carol's 💤 was not refused: %v", err)
	}
	snoozed := "💤 Snoozed by " + alice.UserID.String() + " until "
	if _, err := alice.SendReaction(ctx, room, notice.ID, "💤"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, editSays(snoozed)); err != nil {
		t.Fatalf("alice's 💤 did not edit the halt notice: %v", err)
	}
	if _, err := bob.SendReaction(ctx, room, notice.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	reviewed, err := alice.WaitFor(ctx, waitReply, editSays("👀 reviewing by "+bob.UserID.String()+" since"))
	if err != nil {
		t.Fatalf("bob's 👀 did not edit the halt notice to name him: %v\n%s", err, j.logs.String())
	}
	if body := newBody(reviewed); !strings.Contains(body, snoozed) || !strings.Contains(body, "HALTED") {
		t.Errorf("the breaker's edit for bob's review lost alice's snooze:\n%s", body)
	}
	if _, err := carol.SendReaction(ctx, room, notice.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if _, err := carol.WaitFor(ctx, waitReply, inThreadOf(j, room, notice.ID, bob.UserID.String()+" has had this since ")); err != nil {
		t.Fatalf("carol's 👀 was not told that bob has it: %v", err)
	}
	if _, err := bob.SendReaction(ctx, room, notice.ID, "▶️"); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.WaitFor(ctx, waitReply, inThreadOf(j, room, notice.ID, "resuming a breaker is for admins")); err != nil {
		t.Fatalf("bob's ▶️ was not refused: %v", err)
	}
	if state := api.state(t, "eve"); state != "open" {
		t.Fatalf("after bob's ▶️ the breaker is %s, want open", state)
	}

	if _, err := alice.SendReaction(ctx, room, notice.ID, "▶️"); err != nil {
		t.Fatal(err)
	}
	resolved, err := alice.WaitFor(ctx, waitReply, editSays("HALF-OPEN"))
	if err != nil {
		t.Fatalf("alice's ▶️ did not edit the halt notice: %v", err)
	}
	if body := newBody(resolved); !strings.Contains(body, "On call: ✅ resolved: the alert was open ") ||
		!strings.Contains(body, "handled by "+bob.UserID.String()) {
		t.Errorf("the halt notice after the resume reads:\n%s", body)
	}
	allClear := inThreadOf(j, room, notice.ID, "All clear: the alert was open ")
	reply, err := alice.WaitFor(ctx, waitReply, allClear)
	if err != nil {
		t.Fatalf("no all-clear in the halt's thread: %v", err)
	}
	if body := tesths.Body(reply); !strings.HasSuffix(body, "handled by "+bob.UserID.String()+".") {
		t.Errorf("the all-clear reads %q", body)
	}
	if n := len(alice.Events(editOf(j.UserID, notice.ID))); n != 3 {
		t.Errorf("%d edits of the halt notice, want three: carol's snooze, bob's claim and the resume", n)
	}
	if n := len(alice.Events(allClear)); n != 1 {
		t.Errorf("%d all-clear replies, want one", n)
	}
	if top := alice.Events(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Timestamp > notice.Timestamp && evt.Content.AsMessage().RelatesTo == nil
	}); len(top) != 0 {
		t.Errorf("a new message in the room: %q", tesths.Body(top[0]))
	}
}

// TestOnCallEscalationTiers: EVE goes offline and nobody claims its alert
// within a short escalate_after: the admins are called in its thread,
// then dave, the next tier of oncall.escalation, once each, and nobody
// after that. Which of EVE's alerts (missed heartbeats, then offline)
// stands for the incident at each call depends on when the sweeps fall;
// each call goes to the one that does.
func TestOnCallEscalationTiers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dave := newPerson(t, "dave")
	j, room, alice, _, _ := onCallRoom(t, fmt.Sprintf("oncall:\n  escalate_after: 1s\n  escalation: [[%q]]\n", dave.UserID)+eveEvery2s, "EVE")

	calls := func(who id.UserID) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			if !tesths.MessageFrom(room, j.UserID)(evt) {
				return false
			}
			msg := evt.Content.AsMessage()
			return msg.RelatesTo != nil && msg.RelatesTo.Type == event.RelThread && strings.HasPrefix(msg.Body, who.String()+": Nobody has claimed this alert") &&
				msg.Mentions != nil && len(msg.Mentions.UserIDs) == 1 && msg.Mentions.UserIDs[0] == who
		}
	}
	admins, err := alice.WaitFor(ctx, 30*time.Second, calls(alice.UserID))
	if err != nil {
		t.Fatalf("the admins were not called: %v", err)
	}
	next, err := alice.WaitFor(ctx, 20*time.Second, calls(dave.UserID))
	if err != nil {
		t.Fatalf("the next tier was not called: %v", err)
	}
	// EVE's silence is one incident; its alert is the missed-heartbeats
	// notice, then the offline notice once EVE is offline. Each tier is
	// called in the thread of the alert that stands for the incident when
	// it is called: the admins and dave in one thread, or, when EVE went
	// offline between the two calls, each under its own alert.
	alerts := alice.Events(func(evt *event.Event) bool {
		b := tesths.Body(evt)
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil &&
			(strings.Contains(b, "EVE has missed") || strings.Contains(b, "EVE is offline"))
	})
	for _, call := range []*event.Event{admins, next} {
		var current *event.Event
		for _, a := range alerts {
			if a.Timestamp <= call.Timestamp && (current == nil || a.Timestamp >= current.Timestamp) {
				current = a
			}
		}
		if root := call.Content.AsMessage().RelatesTo.EventID; current == nil || root != current.ID {
			t.Errorf("%q was called in the thread of %q, not of EVE's alert then (%d alerts)", tesths.Body(call), eventBody(alice, root), len(alerts))
		}
	}
	if !strings.Contains(tesths.Body(next), "Nobody has claimed this alert in 2s.") {
		t.Errorf("dave's call reads %q", tesths.Body(next))
	}
	// The sweep runs every 5 s: two more find no tier left.
	if again, err := alice.WaitFor(ctx, 11*time.Second, func(evt *event.Event) bool {
		return evt.ID != admins.ID && evt.ID != next.ID && (calls(alice.UserID)(evt) || calls(dave.UserID)(evt))
	}); err == nil {
		t.Errorf("called again: %q", tesths.Body(again))
	}
}

// TestOnCallReminder: bob claims EVE's offline alert with `mine`; EVE
// stays offline, and a reply in the alert's thread reminds bob, mentioning
// him, every oncall.remind_every.
func TestOnCallReminder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, _, bob, _ := onCallRoom(t, "oncall:\n  remind_every: 3s\n"+eveEvery2s, "EVE")
	alert, err := bob.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "EVE is offline") &&
			evt.Content.AsMessage().RelatesTo.GetReplaceID() == ""
	})
	if err != nil {
		t.Fatalf("no offline alert: %v", err)
	}
	if _, err := bob.SendMessageEvent(ctx, room, event.EventMessage, &event.MessageEventContent{MsgType: event.MsgText, Body: "mine",
		RelatesTo: &event.RelatesTo{InReplyTo: &event.InReplyTo{EventID: alert.ID}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := bob.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, alert.ID)(evt) && strings.Contains(newBody(evt), "👀 Handled by "+bob.UserID.String())
	}); err != nil {
		t.Fatalf("bob's `mine` did not claim the alert: %v", err)
	}
	reminder := inThreadOf(j, room, alert.ID, bob.UserID.String()+": this alert is still open; you have had it for ")
	first, err := bob.WaitFor(ctx, 20*time.Second, reminder)
	if err != nil {
		t.Fatalf("bob was not reminded: %v", err)
	}
	if m := first.Content.AsMessage().Mentions; m == nil || !m.Has(bob.UserID) {
		t.Errorf("the reminder does not mention bob: %+v", m)
	}
	if _, err := bob.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool { return evt.ID != first.ID && reminder(evt) }); err != nil {
		t.Errorf("bob was reminded only once: %v", err)
	}
}
