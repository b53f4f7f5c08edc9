package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// TestOnCallSnooze: EVE's alert carries 💤 beside 👀; a tap snoozes it
// for oncall.snooze_default and a reply `snooze 4h` or `snooze until
// tomorrow 9:00` (in the sender's time zone) for that long, the alert
// edited to say who snoozed it until when; nobody is called to it until
// the snooze ends, and then one reply in its thread says it is back.
func TestOnCallSnooze(t *testing.T) {
	setup := func(t *testing.T) (*harness, *oncall.Service) {
		h := newHarness(t)
		w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{"@admin:x"}}
		svc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute, SnoozeDefault: time.Hour})
		f := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Hour}}}, func(d *fleet.Deps) { d.Incidents = svc })
		h.proc.AddFeatures(Features{OnCall: svc, Reminders: w.Reminders(), People: h.store.Reminders()})
		h.heartbeat(t, f)
		h.clock.Advance(2*time.Hour + time.Minute) // 11:01 UTC
		if err := f.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h, svc
	}
	const alert = "fleet:alert:EVE:1"
	alertText := "⚠️ **EVE** has missed 2 heartbeats in a row: last heard 2h 1m ago (cycle C-1), expected every 1h."
	// sweep runs the escalation and wake loops once and returns what they
	// sent.
	sweep := func(t *testing.T, h *harness, svc *oncall.Service) []core.OutboxEntry {
		t.Helper()
		before, _ := h.store.Outbox().Waiting(context.Background(), 1000)
		if _, err := svc.Escalate(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Wake(context.Background()); err != nil {
			t.Fatal(err)
		}
		after, _ := h.store.Outbox().Waiting(context.Background(), 1000)
		return after[len(before):]
	}

	t.Run("the alert carries 💤", func(t *testing.T) {
		h, _ := setup(t)
		n, err := h.store.Outbox().Get(context.Background(), alert+":snooze")
		if err != nil || n.Kind != core.NoticeReaction || n.Body != oncall.SnoozeReaction || n.Target != alert {
			t.Errorf("the alert's second reaction = %+v, %v; want 💤 on %s", n.Notice, err, alert)
		}
	})
	for _, c := range []struct{ answer, tz, until string }{
		{oncall.SnoozeReaction, "", "12:01 UTC"},
		{"snooze", "", "12:01 UTC"},
		{"snooze 4h", "", "15:01 UTC"},
		{"Snooze for 30 minutes.", "", "11:31 UTC"},
		{"snooze until 18:00", "", "18:00 UTC"},
		{"snooze until tomorrow 9:00", "Europe/Berlin", "Tue Dec 1 08:00 UTC"},
	} {
		t.Run("snoozed by "+c.answer, func(t *testing.T) {
			h, _ := setup(t)
			if c.tz != "" {
				h.say(t, "@admin:x", "!me tz "+c.tz)
			}
			caused := h.answer(t, alert, "@admin:x", c.answer)
			want := alertText + "\n\n💤 Snoozed by @admin:x until " + c.until + "."
			if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || caused[0].Target != alert || caused[0].Body != want {
				t.Fatalf("after %q: %+v, want the alert edited to %q", c.answer, caused, want)
			}
		})
	}
	t.Run("a length Jarvis cannot read is asked again", func(t *testing.T) {
		h, _ := setup(t)
		for _, answer := range []string{"snooze until the deploy is done", "snooze 30 days"} {
			caused := h.answer(t, alert, "@admin:x", answer)
			if len(caused) != 1 || caused[0].Kind != core.NoticeMessage || !strings.Contains(caused[0].Body, "snooze 4h") && !strings.Contains(caused[0].Body, "7d") {
				t.Errorf("%q: %+v, want a reply saying how to snooze", answer, caused)
			}
		}
	})
	t.Run("the escalation waits for the snooze and the thread hears it is back", func(t *testing.T) {
		h, svc := setup(t)
		h.answer(t, alert, "@admin:x", oncall.SnoozeReaction)
		h.clock.Advance(59 * time.Minute)
		if caused := sweep(t, h, svc); len(caused) != 0 {
			t.Fatalf("while snoozed: %+v, want nothing", caused)
		}
		h.clock.Advance(time.Minute)
		caused := sweep(t, h, svc)
		if len(caused) != 3 {
			t.Fatalf("at the snooze's end: %+v, want the escalation, the edit back and one reply", caused)
		}
		var edit, back, called core.OutboxEntry
		for _, n := range caused {
			switch {
			case n.Kind == core.NoticeEdit:
				edit = n
			case strings.HasPrefix(n.Key, oncall.WokeKeyPrefix):
				back = n
			case strings.HasPrefix(n.Key, oncall.EscalationKeyPrefix):
				called = n
			}
		}
		if edit.Body != alertText || edit.Target != alert {
			t.Errorf("the edit back = %+v, want the alert without the snooze", edit)
		}
		wantBack := "💤 The snooze @admin:x set is over, and this alert is still open. Nobody has claimed it: tap 👀 on it or reply `mine` to take it."
		if back.Body != wantBack || !back.Thread || back.Target != alert {
			t.Errorf("the reply = %+v, want %q in the alert's thread", back, wantBack)
		}
		if !called.Thread || !strings.Contains(called.Body, "Nobody has claimed this alert") {
			t.Errorf("the escalation = %+v", called)
		}
		if caused := sweep(t, h, svc); len(caused) != 0 {
			t.Errorf("the next sweep: %+v, want nothing", caused)
		}
		if caused := h.answer(t, back.Key, "@bob:x", "mine"); len(caused) != 1 || !strings.Contains(caused[0].Body, "👀 Handled by @bob:x") {
			t.Errorf("`mine` in reply to the reply: %+v, want the claim", caused)
		}
	})
	t.Run("a resolved alert is not snoozed", func(t *testing.T) {
		h, svc := setup(t)
		if err := svc.Resolve(context.Background(), "silence:EVE:1", "✅ back."); err != nil {
			t.Fatal(err)
		}
		caused := h.answer(t, alert, "@bob:x", oncall.SnoozeReaction)
		if len(caused) != 1 || caused[0].Body != "@bob:x: This resolved at Nov 30 11:01 UTC; there is nothing left to snooze." {
			t.Errorf("💤 on a resolved alert: %+v", caused)
		}
	})
}

// TestTripSnooze: a trip pushed to alice carries 💤; her tap snoozes the
// tripwire's pushes for oncall.snooze_default (a reply `snooze 2h` for two
// hours), said under the push; its next trip within is not pushed; bob
// cannot snooze her push.
func TestTripSnooze(t *testing.T) {
	th := newTripwireHarness(t, 0)
	m := armedID.FindStringSubmatch(onlyReply(t, th.say(t, alice, `!tw arm GI lt 0.7 --label "GI low" --because "the Seal" --push --cooldown 0`)))
	if m == nil {
		t.Fatal("not armed")
	}
	th.tick(t, 0.5)
	push := "trip:" + m[1] + ":1"
	if n, err := th.store.Outbox().Get(context.Background(), push+":snooze"); err != nil || n.Body != "💤" || n.ToUser != alice || n.Target != push {
		t.Fatalf("the push's reaction = %+v, %v; want 💤 on it", n.Notice, err)
	}
	if caused := th.answer(t, push, bob, "💤"); len(caused) != 1 || caused[0].Body != "Only the owner of this tripwire can snooze it." {
		t.Errorf("bob's 💤: %+v", caused)
	}
	caused := th.answer(t, push, alice, "snooze 2h")
	if len(caused) != 1 || caused[0].Target != push || !strings.HasPrefix(caused[0].Body, "💤 Snoozed: `"+m[1]+"` won't push to you until 11:01 UTC;") {
		t.Fatalf("alice's `snooze 2h`: %+v", caused)
	}
	th.tick(t, 0.8)
	th.tick(t, 0.5)
	if got := th.pushes(t, alice, "trip:"+m[1]+":2"); len(got) != 0 {
		t.Errorf("a snoozed tripwire pushed: %+v", got)
	}
	th.clock.Advance(2 * time.Hour)
	th.tick(t, 0.8)
	th.tick(t, 0.5)
	if got := th.pushes(t, alice, "trip:"+m[1]+":3"); len(got) != 1 {
		t.Errorf("after the snooze: %d pushes of trip 3, want 1", len(got))
	}
}
