package oncall_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestEscalation: an alert nobody claimed within escalate_after is
// raised once in its thread, mentioning the admins; one claimed or
// resolved in time is not, nor one raised already.
func TestEscalation(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	admins := []string{"@alice:x", "@carol:x"}
	svc := services.Wiring{Store: st, Clock: clock, Admins: admins}.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	raise := func(id string) {
		t.Helper()
		err := st.InTx(ctx, func(ctx context.Context) error {
			return svc.Raise(ctx, id, "offline", "EVE", core.Notice{Key: "alert:" + id, RoomID: "!room:x", Kind: core.NoticeMessage, Body: "🔴 " + id + " is offline"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	escalate := func() (int, []core.OutboxEntry) {
		t.Helper()
		before, _ := st.Outbox().Waiting(ctx, 1000)
		n, err := svc.Escalate(ctx)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := st.Outbox().Waiting(ctx, 1000)
		return n, after[len(before):]
	}
	for _, id := range []string{"unclaimed", "claimed", "resolved"} {
		raise(id)
	}
	clock.Advance(14 * time.Minute)
	if _, _, err := svc.Claim(ctx, "claimed", "@bob:x"); err != nil {
		t.Fatal(err)
	}
	if err := svc.Resolve(ctx, "resolved", "✅ back."); err != nil {
		t.Fatal(err)
	}
	if n, caused := escalate(); n != 0 || len(caused) != 0 {
		t.Fatalf("before escalate_after: %d raised, %+v", n, caused)
	}
	clock.Advance(time.Minute)
	n, caused := escalate()
	if n != 1 || len(caused) != 1 {
		t.Fatalf("at escalate_after: %d raised, %+v; want the unclaimed alert", n, caused)
	}
	want := "@alice:x, @carol:x: Nobody has claimed this alert in 15m. Tap 👀 on it or reply `mine` to take it."
	if e := caused[0]; e.Body != want || !e.Thread || e.Target != "alert:unclaimed" || len(e.Mentions) != 2 {
		t.Errorf("escalation = %+v, want %q in the thread of alert:unclaimed mentioning both admins", e, want)
	}
	clock.Advance(time.Hour)
	if n, caused := escalate(); n != 0 || len(caused) != 0 {
		t.Errorf("the next sweep raised %d again: %+v", n, caused)
	}
}

// newGroup is an on-call service with A's alert grouped with B's silence.
func newGroup(t *testing.T) (*oncall.Service, *store.Store, *coretest.Clock) {
	t.Helper()
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	svc := services.Wiring{Store: st, Clock: clock, Admins: []string{"@alice:x"}}.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	err := st.InTx(ctx, func(ctx context.Context) error {
		if err := svc.Raise(ctx, "silence:A:1", "alert", "A", core.Notice{Key: "alert:A", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "A is late"}); err != nil {
			return err
		}
		g, err := svc.Group(ctx, "silence:A:1")
		if err != nil {
			return err
		}
		if err := svc.Join(ctx, "silence:B:1", "alert", "B", g.ID, "B is late"); err != nil {
			return err
		}
		return svc.Edit(ctx, g.ID, "A and B are late")
	})
	if err != nil {
		t.Fatal(err)
	}
	return svc, st, clock
}

// TestGroupClaimAndResolve: a claim of any member of a group claims the
// group, whose alert is the leader's; the group's all-clear closes its
// members.
func TestGroupClaimAndResolve(t *testing.T) {
	ctx := context.Background()
	svc, _, clock := newGroup(t)
	inc, first, err := svc.Claim(ctx, "silence:B:1", "@bob:x")
	if err != nil || !first || inc.ID != "group:silence:A:1" || inc.NoticeKey != "alert:A" {
		t.Fatalf("claim of B = %+v, %v, %v; want the group, its alert A's", inc, first, err)
	}
	if edit := oncall.ClaimEdit(inc); edit.Target != "alert:A" || !strings.HasPrefix(edit.Body, "A and B are late\n\n👀 Handled by @bob:x") {
		t.Errorf("claim edit = %+v", edit)
	}
	if _, first, _ := svc.Claim(ctx, "silence:A:1", "@carol:x"); first {
		t.Error("a claim of A after B's claimed the group again")
	}
	clock.Advance(time.Hour)
	if err := svc.Resolve(ctx, "group:silence:A:1", "✅ All back."); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"silence:A:1", "silence:B:1"} {
		if m, err := svc.Incident(ctx, id); err != nil || m.ResolvedAt.IsZero() {
			t.Errorf("member %s after the group resolved: %+v, %v", id, m, err)
		}
	}
}

// TestOnlyGroupsEscalate: the members of an open group are not escalated
// on their own; the group is, once, in its alert's thread.
func TestOnlyGroupsEscalate(t *testing.T) {
	ctx := context.Background()
	svc, st, clock := newGroup(t)
	clock.Advance(15 * time.Minute)
	before, _ := st.Outbox().Waiting(ctx, 1000)
	if n, err := svc.Escalate(ctx); err != nil || n != 1 {
		t.Fatalf("Escalate() = %d, %v; want the group once", n, err)
	}
	after, _ := st.Outbox().Waiting(ctx, 1000)
	if caused := after[len(before):]; len(caused) != 1 || caused[0].Key != "escalated:group:silence:A:1" || caused[0].Target != "alert:A" {
		t.Errorf("escalation = %+v, want one reply to alert:A", caused)
	}
}
