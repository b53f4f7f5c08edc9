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

// TestOnCallClaim: EVE goes silent and its alert carries 👀; the first
// tap (or reply `mine`) claims it and the alert is edited to name the
// owner, anyone after is told who has it, and when EVE reports again the
// alert is edited to resolved with one reply in its thread.
func TestOnCallClaim(t *testing.T) {
	const bob = "@bob:x"
	setup := func(t *testing.T) (*harness, *fleet.Service, *oncall.Service) {
		h := newHarness(t)
		w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x"}
		svc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
		f := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Hour}}}, func(d *fleet.Deps) { d.Incidents = svc })
		h.proc.AddFeatures(Features{OnCall: svc})
		h.heartbeat(t, f)
		h.clock.Advance(2*time.Hour + time.Minute)
		if err := f.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h, f, svc
	}
	const alert = "fleet:alert:EVE:1"
	alertText := "⚠️ **EVE** has missed 2 heartbeats in a row: last heard 2h 1m ago (cycle C-1), expected every 1h."

	t.Run("the alert carries 👀", func(t *testing.T) {
		h, _, _ := setup(t)
		n, err := h.store.Outbox().Get(context.Background(), alert+":claim")
		if err != nil || n.Kind != core.NoticeReaction || n.Body != oncall.ClaimReaction || n.Target != alert {
			t.Errorf("the alert's reaction = %+v, %v; want 👀 on %s", n.Notice, err, alert)
		}
	})
	for _, answer := range []string{oncall.ClaimReaction, "mine", "Mine."} {
		t.Run("claimed by "+answer, func(t *testing.T) {
			h, _, _ := setup(t)
			h.clock.Advance(3 * time.Minute)
			caused := h.answer(t, alert, alice, answer)
			want := alertText + "\n\n👀 Handled by @alice:x since Nov 30 11:04 UTC."
			if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || caused[0].Target != alert || caused[0].Body != want {
				t.Fatalf("after %s: %+v, want the alert edited to %q", answer, caused, want)
			}
		})
	}
	t.Run("a second person is told who has it, the owner hears nothing", func(t *testing.T) {
		h, _, _ := setup(t)
		h.answer(t, alert, alice, oncall.ClaimReaction)
		h.clock.Advance(time.Minute)
		caused := h.answer(t, alert, bob, oncall.ClaimReaction)
		want := "@bob:x: @alice:x has had this since Nov 30 11:01 UTC."
		if len(caused) != 1 || caused[0].Body != want || caused[0].Target != alert || len(caused[0].Mentions) != 1 {
			t.Errorf("bob's 👀: %+v, want one reply to the alert %q", caused, want)
		}
		if caused := h.answer(t, alert, bob, "mine"); len(caused) != 1 || caused[0].Body != "@alice:x has had this since Nov 30 11:01 UTC." {
			t.Errorf("bob's `mine`: %+v, want a reply saying alice has it", caused)
		}
		if caused := h.answer(t, alert, alice, oncall.ClaimReaction); len(caused) != 0 {
			t.Errorf("alice's second 👀 said %+v, want nothing", caused)
		}
	})
	t.Run("`mine` in reply to the call to the admins claims the alert", func(t *testing.T) {
		h, _, svc := setup(t)
		h.clock.Advance(15 * time.Minute)
		if _, err := svc.Escalate(context.Background()); err != nil {
			t.Fatal(err)
		}
		caused := h.answer(t, "escalated:silence:EVE:1", bob, "mine")
		if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || caused[0].Target != alert || !strings.Contains(caused[0].Body, "👀 Handled by @bob:x") {
			t.Errorf("bob's `mine` to the escalation: %+v, want the alert edited to name him", caused)
		}
	})
	t.Run("a crash loop and a budget alert are claimed the same way", func(t *testing.T) {
		h, _, svc := setup(t)
		for _, key := range []string{"crash-loop:EVE:b7", "spend:alert:EVE:2026-11-30"} {
			err := h.store.InTx(context.Background(), func(ctx context.Context) error {
				return svc.Raise(ctx, key, "crash-loop", "EVE", core.Notice{Key: key, RoomID: "!room:x", Kind: core.NoticeMessage, Body: "🚨 EVE"})
			})
			if err != nil {
				t.Fatal(err)
			}
			caused := h.answer(t, key, bob, oncall.ClaimReaction)
			if len(caused) != 1 || caused[0].Target != key || caused[0].Body != "🚨 EVE\n\n👀 Handled by @bob:x since Nov 30 11:01 UTC." {
				t.Errorf("bob's 👀 on %s: %+v, want the alert edited to name him", key, caused)
			}
		}
	})
	t.Run("other answers claim nothing", func(t *testing.T) {
		h, _, _ := setup(t)
		if caused := h.answer(t, alert, alice, "👍"); len(caused) != 0 {
			t.Errorf("👍 caused %+v, want nothing", caused)
		}
		if caused := h.answer(t, alert, bob, oncall.ClaimReaction); len(caused) != 1 || caused[0].Kind != core.NoticeEdit {
			t.Errorf("bob's 👀 after alice's 👍: %+v, want the claim", caused)
		}
	})
	t.Run("the all-clear edits the alert and replies once in its thread", func(t *testing.T) {
		h, f, _ := setup(t)
		h.answer(t, alert, alice, oncall.ClaimReaction)
		h.clock.Advance(20 * time.Minute)
		before, _ := h.store.Outbox().Waiting(context.Background(), 1000)
		h.heartbeat(t, f)
		after, _ := h.store.Outbox().Waiting(context.Background(), 1000)
		caused := after[len(before):]
		if len(caused) != 2 {
			t.Fatalf("EVE's heartbeat caused %+v, want an edit and a thread reply", caused)
		}
		edit, reply := caused[0], caused[1]
		if want := "✅ **Resolved** after 20m, handled by @alice:x. It was: " + alertText; edit.Kind != core.NoticeEdit || edit.Target != alert || edit.Body != want {
			t.Errorf("edit = %+v, want %q on the alert", edit, want)
		}
		want := "✅ **EVE** is back: heartbeat for C-1 after 2h 21m of silence. All clear: the alert was open 20m, handled by @alice:x."
		if reply.Kind != core.NoticeMessage || !reply.Thread || reply.Target != alert || reply.Body != want {
			t.Errorf("reply = %+v, want %q in the alert's thread", reply, want)
		}
		if caused := h.answer(t, alert, bob, oncall.ClaimReaction); len(caused) != 1 || caused[0].Body != "@bob:x: This resolved at Nov 30 11:21 UTC; @alice:x handled it." {
			t.Errorf("bob's 👀 after the all-clear: %+v", caused)
		}
	})
}

// heartbeat records one heartbeat of EVE at the harness's time.
func (h *harness) heartbeat(t *testing.T, f *fleet.Service) {
	t.Helper()
	if _, err := f.RecordHeartbeat(context.Background(), fleet.Heartbeat{Agent: "EVE", Cycle: "C-1", Timestamp: h.clock.Now(), MII: 0.9, Mode: "green"}); err != nil {
		t.Fatal(err)
	}
}

// TestOnCallWhoMayClaimAndSnooze: a bridged account linked to nobody
// neither claims nor snoozes an alert, and is told so once; someone who
// does not own an alert cannot snooze it; an admin takes over a claim,
// and a linked account claims as its Matrix account.
func TestOnCallWhoMayClaimAndSnooze(t *testing.T) {
	const alert, stranger = "fleet:alert:EVE:1", "@telegram_666:x"
	setup := func(t *testing.T) (*harness, *oncall.Service) {
		h := newHarness(t)
		w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{cardAdmin}}
		svc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour})
		f := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Hour}}}, func(d *fleet.Deps) { d.Incidents = svc })
		h.proc.AddFeatures(Features{OnCall: svc})
		h.heartbeat(t, f)
		h.clock.Advance(2*time.Hour + time.Minute)
		if err := f.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
		return h, svc
	}
	bridged := Message{Sender: stranger, Puppet: stranger, Network: "telegram"}
	unchanged := func(t *testing.T, svc *oncall.Service, owner string) {
		t.Helper()
		inc, err := svc.Incident(context.Background(), "silence:EVE:1")
		if err != nil || inc.Owner != owner || !inc.SnoozedUntil.IsZero() {
			t.Errorf("the alert is owned by %q, snoozed until %v (%v); want %q, not snoozed", inc.Owner, inc.SnoozedUntil, err, owner)
		}
	}
	for _, answer := range []string{oncall.ClaimReaction, "mine", oncall.SnoozeReaction, "snooze 7d"} {
		t.Run("a bridged stranger's "+answer, func(t *testing.T) {
			h, svc := setup(t)
			caused := h.answerAs(t, alert, bridged, answer)
			if len(caused) != 1 || caused[0].Kind != core.NoticeMessage || !strings.Contains(caused[0].Body, "nothing changed") {
				t.Fatalf("%s: %+v, want one refusal", answer, caused)
			}
			unchanged(t, svc, "")
		})
	}
	t.Run("someone else's snooze of a claimed alert", func(t *testing.T) {
		h, svc := setup(t)
		h.answer(t, alert, alice, oncall.ClaimReaction)
		caused := h.answer(t, alert, "@bob:x", oncall.SnoozeReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Only whoever claimed this alert, or an admin, can snooze it") {
			t.Fatalf("bob's 💤: %+v, want one refusal", caused)
		}
		unchanged(t, svc, alice)
		if caused := h.answer(t, alert, alice, oncall.SnoozeReaction); len(caused) != 1 || !strings.Contains(caused[0].Body, "💤 Snoozed by @alice:x") {
			t.Errorf("the owner's 💤: %+v, want the alert snoozed", caused)
		}
	})
	t.Run("an admin takes over a claim", func(t *testing.T) {
		h, svc := setup(t)
		h.answer(t, alert, alice, oncall.ClaimReaction)
		h.clock.Advance(time.Minute)
		caused := h.answer(t, alert, cardAdmin, oncall.ClaimReaction)
		if len(caused) != 2 || caused[0].Kind != core.NoticeEdit || !strings.Contains(caused[0].Body, "👀 Handled by @admin:x since Nov 30 11:02 UTC.") ||
			!strings.Contains(caused[1].Body, "You took this over from @alice:x.") {
			t.Fatalf("the admin's 👀: %+v, want the alert naming them and one reply", caused)
		}
		inc, _ := svc.Incident(context.Background(), "silence:EVE:1")
		if inc.Owner != cardAdmin {
			t.Errorf("the alert is owned by %q, want the admin", inc.Owner)
		}
		// The admin's own puppet takes nothing over: admin verbs are native.
		h2, svc2 := setup(t)
		h2.answer(t, alert, alice, oncall.ClaimReaction)
		h2.answerAs(t, alert, Message{Sender: cardAdmin, Puppet: "@telegram_1:x", Network: "telegram"}, oncall.ClaimReaction)
		unchanged(t, svc2, alice)
	})
	t.Run("a linked account claims as its Matrix account", func(t *testing.T) {
		h, svc := setup(t)
		h.answerAs(t, alert, Message{Sender: alice, Puppet: "@telegram_1:x", Network: "telegram"}, oncall.ClaimReaction)
		unchanged(t, svc, alice)
	})
}
