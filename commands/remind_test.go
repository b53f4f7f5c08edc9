package commands

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// remindHarness is a processor with reminders on a real store; the clock
// starts on Monday 30 November 2026 at 09:00 UTC.
type remindHarness struct {
	*harness
	svc *reminder.Service
}

func newRemindHarness(t *testing.T) *remindHarness {
	t.Helper()
	h := newHarness(t)
	svc := services.Wiring{Store: h.store, Clock: h.clock}.Reminders()
	h.proc.AddFeatures(Features{Reminders: svc, People: h.store.Reminders()})
	h.proc.AddNames("jarvis")
	return &remindHarness{harness: h, svc: svc}
}

// sweep runs the reminder loop once at the clock's time and returns the
// messages it delivered, by key.
func (rh *remindHarness) sweep(t *testing.T) map[string]core.OutboxEntry {
	t.Helper()
	ctx := context.Background()
	before, err := rh.store.Outbox().Waiting(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rh.svc.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	after, err := rh.store.Outbox().Waiting(ctx, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]core.OutboxEntry{}
	for _, e := range after[len(before):] {
		if e.Kind == core.NoticeMessage {
			out[e.Key] = e
		}
	}
	return out
}

// only returns the one delivery of a sweep.
func only(t *testing.T, sent map[string]core.OutboxEntry) core.OutboxEntry {
	t.Helper()
	if len(sent) != 1 {
		t.Fatalf("delivered %d reminders, want one: %+v", len(sent), sent)
	}
	for _, e := range sent {
		return e
	}
	panic("unreachable")
}

func TestReminderIsSetDeliveredSnoozedAndDone(t *testing.T) {
	rh := newRemindHarness(t)
	wantText(t, "set", onlyReply(t, rh.say(t, alice, "Jarvis, remind me to call the bank in 20 minutes")),
		"I'll remind you today at 09:20 UTC to “call the bank”", "!remind cancel 1")
	if sent := rh.sweep(t); len(sent) != 0 {
		t.Fatalf("delivered before its time: %+v", sent)
	}
	rh.clock.Advance(20 * time.Minute)
	first := only(t, rh.sweep(t))
	if first.ToUser != alice || first.Key != "remind:1:1" || !slices.Equal(first.Mentions, []string{alice}) {
		t.Errorf("delivered %+v, want remind:1:1 to Alice's direct room, mentioning her", first)
	}
	wantText(t, "delivery", first.Body, "⏰ **Reminder:** call the bank", "reply `10m`, `1h`, `tomorrow` or `done`")
	if strings.Contains(first.Body, "late") {
		t.Errorf("an on-time reminder says it is late: %q", first.Body)
	}
	waiting, _ := rh.store.Outbox().Waiting(context.Background(), 100)
	var reactions []string
	for _, e := range waiting {
		if e.Kind == core.NoticeReaction && e.Target == first.Key {
			reactions = append(reactions, e.Body)
		}
	}
	if !slices.Equal(reactions, []string{"⏰", "🕐", "🌅", "✅"}) {
		t.Errorf("reactions on the delivery = %q", reactions)
	}
	if sent := rh.sweep(t); len(sent) != 0 {
		t.Fatalf("delivered twice: %+v", sent)
	}

	// Bob's ⏰ does nothing; Alice's snoozes it 10 minutes.
	if got := rh.answer(t, first.Key, bob, "⏰"); len(got) != 0 {
		t.Errorf("Bob's snooze got %+v", got)
	}
	got := rh.answer(t, first.Key, alice, "⏰")
	if len(got) != 1 || !strings.Contains(got[0].Body, "Snoozed: I'll remind you again today at 09:30 UTC") {
		t.Fatalf("Alice's snooze got %+v", got)
	}
	rh.clock.Advance(9 * time.Minute)
	if sent := rh.sweep(t); len(sent) != 0 {
		t.Fatalf("delivered before the snooze ended: %+v", sent)
	}
	rh.clock.Advance(time.Minute)
	second := only(t, rh.sweep(t))
	if second.Key != "remind:1:2" {
		t.Errorf("the snoozed delivery is %q, want remind:1:2", second.Key)
	}

	// A text reply does what the reactions do: where a network cannot react.
	got = rh.answer(t, second.Key, alice, "1h")
	if len(got) != 1 || !strings.Contains(got[0].Body, "today at 10:30 UTC") {
		t.Fatalf("reply 1h got %+v", got)
	}
	got = rh.answer(t, second.Key, alice, "done")
	if len(got) != 1 || !strings.Contains(got[0].Body, "Done: “call the bank”") {
		t.Fatalf("reply done got %+v", got)
	}
	rh.clock.Advance(2 * time.Hour)
	if sent := rh.sweep(t); len(sent) != 0 {
		t.Errorf("a reminder marked done came again: %+v", sent)
	}
	wantText(t, "list", onlyReply(t, rh.say(t, alice, "!remind list")), "no reminders to come")
}

func TestReminderDueWhileDownComesOnceLate(t *testing.T) {
	rh := newRemindHarness(t)
	onlyReply(t, rh.say(t, alice, "jarvis remind me at 10 to stretch"))
	onlyReply(t, rh.say(t, alice, "jarvis remind me every day at 9:30 to check the fleet"))
	// Jarvis is down from 09:05 for three days.
	rh.clock.Advance(3*24*time.Hour + 2*time.Hour)
	sent := rh.sweep(t)
	if len(sent) != 2 {
		t.Fatalf("delivered %d, want each reminder once: %+v", len(sent), sent)
	}
	wantText(t, "one-shot", sent["remind:1:1"].Body, "stretch", "This comes late: it was due on Mon 30 Nov at 10:00 UTC, when I was not running.")
	wantText(t, "daily", sent["remind:2:1"].Body, "check the fleet", "This comes late", "Next: tomorrow at 09:30 UTC.")
	if again := rh.sweep(t); len(again) != 0 {
		t.Errorf("delivered again: %+v", again)
	}
	rh.clock.Advance(23 * time.Hour)
	wantText(t, "next day", only(t, rh.sweep(t)).Body, "check the fleet", "Next: tomorrow at 09:30 UTC.")
}

func TestRemindListCancelAndTimeZone(t *testing.T) {
	rh := newRemindHarness(t)
	wantText(t, "default zone", onlyReply(t, rh.say(t, alice, "!me")), "UTC (the default")
	wantText(t, "bad zone", onlyReply(t, rh.say(t, alice, "!me tz Mars/Olympus")), "I know no time zone `Mars/Olympus`")
	wantText(t, "zone", onlyReply(t, rh.say(t, alice, "!me tz Europe/Berlin")), "Europe/Berlin now: it is 10:00 CET there")
	wantText(t, "set in Berlin", onlyReply(t, rh.say(t, alice, "jarvis, remind me at 11 to call Ana")), "today at 11:00 CET")
	wantText(t, "weekly", onlyReply(t, rh.say(t, alice, "!remind every Monday at 9 to plan the week")),
		"on Mon 7 Dec at 09:00 CET", "every Monday")
	wantText(t, "ask when", onlyReply(t, rh.say(t, alice, "jarvis remind me to breathe")), "When should I remind you?")
	wantText(t, "list", onlyReply(t, rh.sayDirect(t, alice, "!remind list")), "(Europe/Berlin)", "`1` today at 11:00 CET: “call Ana”",
		"`2` on Mon 7 Dec at 09:00 CET, every Monday: “plan the week”")
	wantText(t, "bob's list", onlyReply(t, rh.sayDirect(t, bob, "!remind list")), "no reminders")
	wantText(t, "bob cancels", onlyReply(t, rh.say(t, bob, "!remind cancel 1")), "no reminder 1")
	wantText(t, "cancel", onlyReply(t, rh.say(t, alice, "!remind cancel 1")), "Cancelled reminder 1: “call Ana”")
	rh.clock.Advance(2 * time.Hour)
	if sent := rh.sweep(t); len(sent) != 0 {
		t.Errorf("a cancelled reminder came: %+v", sent)
	}
	// Not addressed, a reminder sentence is talk between people.
	if got := rh.say(t, alice, "remind me to buy milk at 5"); len(got) != 0 {
		t.Errorf("an unaddressed reminder sentence got %q", got)
	}
	// A reminder text is shown as written, never as markup.
	got := onlyReply(t, rh.say(t, alice, "jarvis remind me in 5 minutes to **click** [here](https://evil.example)"))
	if strings.Contains(got, "[here](") || strings.Contains(got, "**click**") {
		t.Errorf("the reminder's text was rendered as markup: %q", got)
	}
}
