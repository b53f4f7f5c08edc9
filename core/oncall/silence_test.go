package oncall_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// TestHeldAlertsPostedAtTheEnd: a silence on EVE (1h) and one on the
// fleet (2h) hold EVE's and HAL's alerts. HAL reports again during them:
// its alert is never posted. When EVE's silence ends, the fleet's still
// holds EVE's alert; when that one ends, the alert is posted once, as it
// was raised (its key, its text, its mentions), with 👀 and 💤 under it,
// and nobody is called to it before escalate_after from then.
func TestHeldAlertsPostedAtTheEnd(t *testing.T) {
	ctx := context.Background()
	f := newSweepFixture(t, oncall.Config{EscalateAfter: 15 * time.Minute}, []string{"@alice:x"})
	st, clock, svc := f.st, f.clock, f.svc
	for _, s := range []oncall.Silence{
		{Target: "EVE", By: "@alice:x", RoomID: "!room:x", EndsAt: clock.Now().Add(time.Hour)},
		{Target: oncall.FleetTarget, By: "@alice:x", RoomID: "!room:x", EndsAt: clock.Now().Add(2 * time.Hour)},
	} {
		if _, err := svc.Silence(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	inTx := func(fn func(ctx context.Context) error) {
		t.Helper()
		if err := st.InTx(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	for _, agent := range []string{"EVE", "HAL"} {
		inTx(func(ctx context.Context) error {
			return svc.Raise(ctx, "silence:"+agent+":1", "offline", agent, core.Notice{Key: "fleet:offline:" + agent + ":1", RoomID: "!room:x",
				Kind: core.NoticeMessage, Body: "🔴 **" + agent + "** is offline.", Mentions: []string{"@alice:x"}})
		})
	}
	clock.Advance(10 * time.Minute)
	inTx(func(ctx context.Context) error { return svc.Resolve(ctx, "silence:HAL:1", "✅ HAL is back.") })
	waiting := func() []core.OutboxEntry {
		t.Helper()
		w, err := st.Outbox().Waiting(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	alerts := func() []core.OutboxEntry {
		t.Helper()
		return slices.DeleteFunc(waiting(), func(e core.OutboxEntry) bool { return !strings.HasPrefix(e.Key, "fleet:") })
	}
	end := func() int {
		t.Helper()
		n, err := svc.EndSilences(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := alerts(); len(got) != 0 {
		t.Fatalf("during the silences: %+v", got)
	}
	clock.Advance(50 * time.Minute)
	if n := end(); n != 1 {
		t.Fatalf("ended %d silences at 10:00, want EVE's", n)
	}
	if got := alerts(); len(got) != 0 {
		t.Errorf("posted while the fleet's silence holds: %+v", got)
	}
	clock.Advance(time.Hour)
	if n := end(); n != 1 {
		t.Fatalf("ended %d silences at 11:00, want the fleet's", n)
	}
	got := alerts()
	if len(got) != 3 {
		t.Fatalf("posted at the end: %+v; want EVE's alert with 👀 and 💤", got)
	}
	if a := got[0]; a.Kind != core.NoticeMessage || a.Key != "fleet:offline:EVE:1" || a.Body != "🔴 **EVE** is offline." ||
		!slices.Equal(a.Mentions, []string{"@alice:x"}) || a.Target != "" {
		t.Errorf("the alert posted: %+v", a)
	}
	for i, want := range []string{oncall.ClaimReaction, oncall.SnoozeReaction} {
		if r := got[i+1]; r.Kind != core.NoticeReaction || r.Body != want || r.Target != "fleet:offline:EVE:1" {
			t.Errorf("reaction %d: %+v, want %s under the alert", i+1, r, want)
		}
	}
	if w := waiting(); !strings.Contains(w[len(w)-4].Body, "1 alert is still open, posted below.") {
		t.Errorf("the fleet silence's end says %q", w[len(w)-4].Body)
	}
	if n := end(); n != 0 || len(alerts()) != 3 {
		t.Errorf("a second pass ended %d and posted %d notices", n, len(alerts())-3)
	}
	if n, err := svc.Escalate(ctx); err != nil || n != 0 {
		t.Errorf("Escalate() as the alert is posted = %d, %v; want none", n, err)
	}
	clock.Advance(15 * time.Minute)
	if n, err := svc.Escalate(ctx); err != nil || n != 1 {
		t.Errorf("Escalate() 15m later = %d, %v; want EVE's alert", n, err)
	}
	if inc, err := svc.Incident(ctx, "silence:EVE:1"); err != nil || inc.NoticeKey != "fleet:offline:EVE:1" || inc.HeldKey != "" {
		t.Errorf("EVE's incident after the post: %+v, %v", inc, err)
	}
}
