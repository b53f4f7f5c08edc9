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

// TestOnCallSnooze: EVE goes silent and its alert carries 💤 beside 👀.
// alice taps 💤: the alert is edited to say she snoozed it until when,
// and nobody is called to it before the snooze (oncall.snooze_default,
// short here) ends, though escalate_after passes meanwhile; when it ends,
// one reply in the alert's thread says it is back, and the admins are
// called only then. bob, who does not hold it, replies `snooze 1h` to
// the alert and is refused; he claims it (`mine`) and replies again: it
// is edited to say he snoozed it, an hour on.
func TestOnCallSnooze(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const snooze = 15 * time.Second
	j, room, alice, bob, _ := onCallRoom(t, fmt.Sprintf("oncall:\n  escalate_after: 8s\n  snooze_default: %s\n", snooze)+eveEvery2s, "EVE")

	fromJarvis := func(match func(evt *event.Event) bool) func(*event.Event) bool {
		return func(evt *event.Event) bool { return tesths.MessageFrom(room, j.UserID)(evt) && match(evt) }
	}
	alert, err := alice.WaitFor(ctx, 20*time.Second, fromJarvis(func(evt *event.Event) bool {
		return strings.Contains(tesths.Body(evt), "EVE has missed 2 heartbeats") && evt.Content.AsMessage().RelatesTo.GetReplaceID() == ""
	}))
	if err != nil {
		t.Fatalf("no alert: %v", err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, alert.ID, "💤")); err != nil {
		t.Fatalf("no 💤 from Jarvis on the alert: %v", err)
	}
	tapped := time.Now()
	if _, err := alice.SendReaction(ctx, room, alert.ID, "💤"); err != nil {
		t.Fatal(err)
	}
	// The incident's alert is the first one or, once EVE is offline, the
	// offline notice, which says from the start that it is snoozed.
	snoozedBy := func(who id.UserID) func(*event.Event) bool {
		return fromJarvis(func(evt *event.Event) bool {
			return strings.Contains(newBody(evt), "💤 Snoozed by "+who.String()+" until ")
		})
	}
	if _, err := alice.WaitFor(ctx, waitReply, snoozedBy(alice.UserID)); err != nil {
		t.Fatalf("alice's 💤 did not edit the alert: %v", err)
	}

	inThread := func(text string) func(*event.Event) bool {
		return fromJarvis(func(evt *event.Event) bool {
			rel := evt.Content.AsMessage().RelatesTo
			return rel != nil && rel.Type == event.RelThread && strings.Contains(tesths.Body(evt), text)
		})
	}
	back, err := alice.WaitFor(ctx, snooze+20*time.Second, inThread("The snooze "+alice.UserID.String()+" set is over, and this alert is still open."))
	if err != nil {
		t.Fatalf("no reply in the alert's thread when the snooze ended: %v", err)
	}
	if since := time.Since(tapped); since < snooze {
		t.Errorf("the snooze ended %s after the tap, before its %s", since.Round(time.Second), snooze)
	}
	called, err := alice.WaitFor(ctx, waitReply, inThread("Nobody has claimed this alert"))
	if err != nil {
		t.Fatalf("the admins were not called after the snooze: %v", err)
	}
	if at := time.UnixMilli(called.Timestamp); at.Before(tapped.Add(snooze - time.Second)) {
		t.Errorf("the admins were called %s after the tap, within the snooze", at.Sub(tapped).Round(time.Second))
	}
	if n := len(alice.Events(inThread("is over"))); n != 1 {
		t.Errorf("%d replies said the snooze was over, want one (the first: %q)", n, tesths.Body(back))
	}

	refused := replyTo(t, bob.Client, room, alert.ID, "snooze 1h")
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return j.replyTo(refused)(evt) && strings.Contains(tesths.Body(evt), "Only whoever claimed this alert, or an admin, can snooze it")
	}); err != nil {
		t.Fatalf("bob's snooze of an alert he does not hold was not refused: %v", err)
	}
	replyTo(t, bob.Client, room, alert.ID, "mine")
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Sender == j.UserID && strings.Contains(newBody(evt), "👀 Handled by "+bob.UserID.String())
	}); err != nil {
		t.Fatalf("bob's `mine` did not claim the alert: %v", err)
	}
	replied := time.Now().UTC()
	replyTo(t, bob.Client, room, alert.ID, "snooze 1h")
	edit, err := alice.WaitFor(ctx, waitReply, snoozedBy(bob.UserID))
	if err != nil {
		t.Fatalf("bob's `snooze 1h` did not edit the alert: %v", err)
	}
	// "16:05 UTC", or with the day when that is tomorrow.
	until := newBody(edit)[strings.LastIndex(newBody(edit), " until "):]
	if want := replied.Add(time.Hour).Format("15:04 UTC."); !strings.HasSuffix(until, want) && !strings.HasSuffix(until, replied.Add(time.Hour+time.Minute).Format("15:04 UTC.")) {
		t.Errorf("bob's snooze is%s, want until %s", until, want)
	}
}
