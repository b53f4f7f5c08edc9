package oncall_test

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testdb"
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
	svc := oncall.NewService(oncall.Config{EscalateAfter: 15 * time.Minute},
		oncall.Deps{Store: st.Incidents(), Tx: st, Outbox: st.Outbox(), Clock: clock, Admins: admins})
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
