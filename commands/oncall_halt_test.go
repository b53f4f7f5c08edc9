package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// TestOnCallHalt: a halt is an incident. bob (no admin) taps 👀 and owns
// it: the halt notice's own edit names him, and nothing else is sent;
// carol's 👀 is told he has it and changes nothing; bob's ▶️ resumes
// nothing, since a claim grants no more than it did; the admin's ▶️
// resumes the agent and the one edit of the notice says the alert
// resolved, how long it was open and who handled it, with one reply in
// its thread. Escalation calls the admins about a halt nobody reviewed,
// and `mine` in reply to that call claims it. A halt carries 💤 too: a
// tap snoozes it, nobody is called to it meanwhile, and the breaker's own
// edits (a review, keeping it halted) keep saying who handles it and who
// snoozed it until when.
func TestOnCallHalt(t *testing.T) {
	const bob, carol, admin = "@bob:x", "@carol:x", "@admin:x"
	setup := func(t *testing.T) (*harness, *breaker.Service, *oncall.Service, string) {
		h := newHarness(t)
		w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{admin}}
		svc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute, SnoozeDefault: time.Hour})
		b := w.Breakers(testconfig.Breaker(), func(d *breaker.Deps) { d.Incidents = svc })
		h.proc.AddFeatures(Features{Breakers: b, OnCall: svc})
		ev, err := b.Open(context.Background(), "eve", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "tried to delete the workspace"})
		if err != nil {
			t.Fatal(err)
		}
		return h, b, svc, ev.NoticeKey()
	}

	t.Run("claimed by 👀, resumed by an admin, resolved in one edit", func(t *testing.T) {
		h, b, _, halt := setup(t)
		h.clock.Advance(5 * time.Minute)
		caused := h.answer(t, halt, bob, oncall.ClaimReaction)
		if len(caused) != 2 || caused[0].Kind != core.NoticeEdit || !strings.Contains(caused[0].Body, "👀 reviewing by @bob:x since") {
			t.Fatalf("bob's 👀: %+v, want the halt's edit naming him and its thread reply", caused)
		}
		caused = h.answer(t, halt, carol, oncall.ClaimReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "@bob:x has had this since Nov 30 09:05 UTC.") || caused[0].Kind != core.NoticeMessage {
			t.Fatalf("carol's 👀: %+v, want to be told bob has it", caused)
		}
		caused = h.answer(t, halt, bob, breaker.ReactResume)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "is for admins") {
			t.Fatalf("bob's ▶️: %+v, want a refusal", caused)
		}
		if st, _ := b.Status(context.Background(), "eve"); st.State != breaker.Open {
			t.Fatalf("after bob's ▶️ the breaker is %s, want still open", st.State)
		}
		h.clock.Advance(7 * time.Minute)
		caused = h.answer(t, halt, admin, breaker.ReactResume)
		var edits, replies []core.OutboxEntry
		for _, n := range caused {
			switch {
			case n.Kind == core.NoticeEdit && n.Target == halt:
				edits = append(edits, n)
			case n.Kind == core.NoticeMessage && n.Thread && n.Target == halt:
				replies = append(replies, n)
			default:
				t.Errorf("the resume also sent %+v", n)
			}
		}
		if len(edits) != 1 || !strings.Contains(edits[0].Body, "🟡 half-open since") ||
			!strings.Contains(edits[0].Body, "- **On call:** ✅ resolved: the alert was open 12m, handled by @bob:x") {
			t.Errorf("the resume's edits: %+v, want one, half-open and resolved", edits)
		}
		if len(replies) != 1 || !strings.HasSuffix(replies[0].Body, "All clear: the alert was open 12m, handled by @bob:x.") {
			t.Errorf("the resume's replies: %+v, want one saying all clear", replies)
		}
	})

	t.Run("💤 snoozes a halt, and the breaker's edits keep saying so", func(t *testing.T) {
		h, _, svc, halt := setup(t)
		if n, err := h.store.Outbox().Get(context.Background(), halt+":react:snooze"); err != nil || n.Kind != core.NoticeReaction || n.Body != oncall.SnoozeReaction {
			t.Fatalf("the halt's 💤: %+v, %v", n, err)
		}
		caused := h.answer(t, halt, cardAdmin, oncall.SnoozeReaction)
		if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || caused[0].Target != halt || !strings.HasPrefix(caused[0].Body, "🛑 **HALTED**") ||
			!strings.HasSuffix(caused[0].Body, "\n\n💤 Snoozed by @admin:x until 10:00 UTC.") {
			t.Fatalf("the admin's 💤: %+v, want the halt notice edited to say they snoozed it", caused)
		}
		h.clock.Advance(15 * time.Minute)
		if n, err := svc.Escalate(context.Background()); err != nil || n != 0 {
			t.Errorf("Escalate() while the halt is snoozed = %d, %v; want none", n, err)
		}
		caused = h.answer(t, halt, bob, oncall.ClaimReaction)
		if len(caused) != 2 || caused[0].Kind != core.NoticeEdit || !strings.Contains(caused[0].Body, "👀 reviewing by @bob:x since") ||
			!strings.HasSuffix(caused[0].Body, "\n\n👀 Handled by @bob:x since Nov 30 09:15 UTC.\n\n💤 Snoozed by @admin:x until 10:00 UTC.") {
			t.Fatalf("bob's 👀: %+v, want the breaker's edit naming him, still snoozed", caused)
		}
		caused = h.answer(t, halt, bob, breaker.ReactKeep)
		if len(caused) != 2 || caused[0].Kind != core.NoticeEdit || !strings.Contains(caused[0].Body, "⏹️ kept halted by @bob:x") ||
			!strings.HasSuffix(caused[0].Body, "💤 Snoozed by @admin:x until 10:00 UTC.") {
			t.Errorf("bob's ⏹️: %+v, want the breaker's edit, still snoozed", caused)
		}
	})

	t.Run("a halt nobody reviews is escalated, and `mine` to the call claims it", func(t *testing.T) {
		h, _, svc, halt := setup(t)
		h.clock.Advance(15 * time.Minute)
		if n, err := svc.Escalate(context.Background()); err != nil || n != 1 {
			t.Fatalf("Escalate() = %d, %v; want the halt called", n, err)
		}
		caused := h.answer(t, oncall.EscalationKey(halt, 0), carol, "mine")
		if len(caused) != 2 || caused[0].Target != halt || !strings.Contains(caused[0].Body, "👀 reviewing by @carol:x since") {
			t.Fatalf("carol's `mine` to the call: %+v, want the halt's edit naming her", caused)
		}
		if inc, err := svc.Incident(context.Background(), halt); err != nil || inc.Owner != carol {
			t.Errorf("the incident after carol's `mine`: %+v, %v", inc, err)
		}
	})
}
