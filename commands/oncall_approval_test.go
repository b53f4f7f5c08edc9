package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// TestOnCallApproval: a request waiting is an incident. Its relay carries
// 👀; bob, who is neither the approver nor an admin, taps it and owns it
// (the relay is edited to name him) but his ✅ still approves nothing;
// alice's 👀 is told bob has it, and her ✅ approves: the one outcome
// edit says the alert resolved, how long it waited and who handled it,
// with one all-clear reply in its thread. A request nobody answers
// resolves at its deadline the same way. A relay carries 💤 too: a tap
// snoozes it, decides nothing, and the claim's edit keeps the snooze.
func TestOnCallApproval(t *testing.T) {
	const alice, bob = ratifier, stranger
	setup := func(t *testing.T) (*harness, *approval.Service) {
		h := newHarness(t)
		w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{cardAdmin}}
		oc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute, SnoozeDefault: time.Hour})
		svc := w.Approvals(approval.Config{RemindAfter: 15 * time.Minute, Approvers: []string{alice}}, func(d *approval.Deps) { d.Incidents = oc })
		h.proc.AddFeatures(Features{Approvals: svc, OnCall: oc})
		return h, svc
	}
	request := func(t *testing.T, h *harness, svc *approval.Service, deadline time.Time) approval.Approval {
		a, _, err := svc.Request(context.Background(), approval.Input{Key: "k", Agent: "EVE", Action: "deploy", Reason: "hotfix",
			Approver: alice, Deadline: deadline})
		if err != nil {
			t.Fatal(err)
		}
		if n, err := h.store.Outbox().Get(context.Background(), a.NoticeKey()+":claim"); err != nil || n.Kind != core.NoticeReaction || n.Body != oncall.ClaimReaction {
			t.Fatalf("the relay's 👀: %+v, %v", n, err)
		}
		return a
	}
	status := func(t *testing.T, svc *approval.Service, id string) approval.Status {
		a, err := svc.Get(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return a.Status
	}

	t.Run("a claim decides nothing; the decision resolves it", func(t *testing.T) {
		h, svc := setup(t)
		a := request(t, h, svc, time.Time{})
		relay := a.NoticeKey()
		h.clock.Advance(4 * time.Minute)
		caused := h.answer(t, relay, bob, oncall.ClaimReaction)
		if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || !strings.HasSuffix(caused[0].Body, "👀 Handled by @bob:x since Nov 30 09:04 UTC.") {
			t.Fatalf("bob's 👀: %+v, want the relay edited to name him", caused)
		}
		caused = h.answer(t, relay, bob, approval.ApproveEmoji)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Only the approver the request names (or an admin) can answer it.") {
			t.Errorf("bob's ✅: %+v, want a refusal", caused)
		}
		if st := status(t, svc, a.ID); st != approval.Pending {
			t.Fatalf("after bob's claim and ✅ the request is %s, want pending", st)
		}
		caused = h.answer(t, relay, alice, "mine")
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "@bob:x has had this since Nov 30 09:04 UTC.") {
			t.Errorf("alice's `mine`: %+v, want to be told bob has it", caused)
		}
		h.clock.Advance(6 * time.Minute)
		caused = h.answer(t, relay, alice, approval.ApproveEmoji)
		if st := status(t, svc, a.ID); st != approval.Approved {
			t.Fatalf("after alice's ✅ the request is %s", st)
		}
		if len(caused) != 2 {
			t.Fatalf("alice's ✅ sent %+v, want the outcome edit and one reply", caused)
		}
		if e := caused[0]; e.Kind != core.NoticeEdit || e.Target != relay ||
			!strings.HasSuffix(e.Body, "✅ Approved by @alice:x via matrix after 10m.\n\n✅ Resolved: the alert was open 10m, handled by @bob:x.") {
			t.Errorf("the outcome edit reads %q", e.Body)
		}
		if r := caused[1]; r.Kind != core.NoticeMessage || !r.Thread || r.Target != relay ||
			r.Body != "✅ Approved by @alice:x via matrix after 10m. All clear: the alert was open 10m, handled by @bob:x." {
			t.Errorf("the reply = %+v", r)
		}
	})

	t.Run("💤 snoozes a request and decides nothing", func(t *testing.T) {
		h, svc := setup(t)
		a := request(t, h, svc, time.Time{})
		relay := a.NoticeKey()
		if n, err := h.store.Outbox().Get(context.Background(), relay+":snooze"); err != nil || n.Kind != core.NoticeReaction || n.Body != oncall.SnoozeReaction {
			t.Fatalf("the relay's 💤: %+v, %v", n, err)
		}
		caused := h.answer(t, relay, cardAdmin, oncall.SnoozeReaction)
		if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || !strings.Contains(caused[0].Body, "asks for approval to: deploy") ||
			!strings.HasSuffix(caused[0].Body, "\n\n💤 Snoozed by @admin:x until 10:00 UTC.") {
			t.Fatalf("bob's 💤: %+v, want the relay edited to say he snoozed it", caused)
		}
		if st := status(t, svc, a.ID); st != approval.Pending {
			t.Errorf("after bob's 💤 the request is %s, want pending", st)
		}
		caused = h.answer(t, relay, bob, oncall.ClaimReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "asks for approval to: deploy") ||
			!strings.HasSuffix(caused[0].Body, "\n\n👀 Handled by @bob:x since Nov 30 09:00 UTC.\n\n💤 Snoozed by @admin:x until 10:00 UTC.") {
			t.Errorf("bob's 👀: %+v, want the relay naming him, still snoozed", caused)
		}
	})

	t.Run("the deadline resolves a request nobody answered", func(t *testing.T) {
		h, svc := setup(t)
		a := request(t, h, svc, h.clock.Now().Add(time.Hour))
		h.clock.Advance(time.Hour)
		before, _ := h.store.Outbox().Waiting(context.Background(), 1000)
		if n, err := svc.Sweep(context.Background()); err != nil || n != 1 {
			t.Fatalf("Sweep() = %d, %v", n, err)
		}
		after, _ := h.store.Outbox().Waiting(context.Background(), 1000)
		caused := after[len(before):]
		if len(caused) != 2 || !strings.HasSuffix(caused[0].Body, "✅ Resolved: the alert was open 1h, nobody claimed it.") ||
			!caused[1].Thread || caused[1].Target != a.NoticeKey() || !strings.HasSuffix(caused[1].Body, "All clear: the alert was open 1h, nobody claimed it.") {
			t.Errorf("the deadline sent %+v", caused)
		}
	})
}
