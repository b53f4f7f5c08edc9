package oncall_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// TestClaimLapses: a claim nobody renews within oncall.claim_hold lapses
// while its alert is open: the alert drops its owner, the admins are
// called in its thread, and escalation goes on to the next tier. A
// renewal (the owner claiming again) holds it as long again; a snoozed
// alert's claim waits for the snooze to end.
func TestClaimLapses(t *testing.T) {
	cfg := oncall.Config{EscalateAfter: 15 * time.Minute, ClaimHold: time.Hour, Escalation: [][]string{{"@dave:x"}}}
	ctx := context.Background()
	f := newSweepFixture(t, cfg, []string{"@alice:x"})
	f.raise("eve")
	if _, first, err := f.svc.Claim(ctx, "eve", "@mallory:x"); err != nil || !first {
		t.Fatalf("claim: %v, %v", first, err)
	}
	f.clock.Advance(59 * time.Minute)
	if n, caused := f.sweep(f.svc.Lapse); n != 0 || len(caused) != 0 {
		t.Fatalf("a minute early: %d lapsed, %+v", n, caused)
	}
	f.clock.Advance(time.Minute)
	n, caused := f.sweep(f.svc.Lapse)
	if n != 1 || len(caused) != 2 {
		t.Fatalf("at the hold's end: %d lapsed, %+v; want the alert edited and the admins called", n, caused)
	}
	if edit := caused[0]; edit.Target != "alert:eve" || strings.Contains(edit.Body, "Handled by") {
		t.Errorf("the edit = %+v, want the alert without its owner", edit)
	}
	called := caused[1]
	if !called.Thread || len(called.Mentions) != 1 || called.Mentions[0] != "@alice:x" ||
		!strings.HasPrefix(called.Body, "@alice:x: @mallory:x claimed this at Dec 1 09:00 UTC and did not renew the claim within 1h") {
		t.Errorf("the call = %+v, want the admins called in the thread, naming whose claim lapsed", called)
	}
	if inc, _ := f.svc.Incident(ctx, "eve"); inc.Owner != "" {
		t.Errorf("after the lapse the alert is owned by %q", inc.Owner)
	}
	f.clock.Advance(15 * time.Minute)
	if n, caused := f.sweep(f.svc.Escalate); n != 1 || len(caused) != 1 || !strings.HasPrefix(caused[0].Body, "@dave:x:") {
		t.Fatalf("escalate_after after the lapse: %d called, %+v; want the next tier", n, caused)
	}

	t.Run("a renewal holds the claim as long again", func(t *testing.T) {
		f := newSweepFixture(t, cfg, []string{"@alice:x"})
		f.raise("eve")
		if _, _, err := f.svc.Claim(ctx, "eve", "@bob:x"); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(50 * time.Minute)
		if _, ok, err := f.svc.Reclaim(ctx, "eve", "@bob:x", "@bob:x"); err != nil || !ok {
			t.Fatalf("renew: %v, %v", ok, err)
		}
		f.clock.Advance(50 * time.Minute)
		if n, caused := f.sweep(f.svc.Lapse); n != 0 || len(caused) != 0 {
			t.Fatalf("50m after the renewal: %d lapsed, %+v", n, caused)
		}
	})
	t.Run("a snoozed alert's claim waits for the snooze", func(t *testing.T) {
		f := newSweepFixture(t, cfg, []string{"@alice:x"})
		f.raise("eve")
		if _, _, err := f.svc.Claim(ctx, "eve", "@bob:x"); err != nil {
			t.Fatal(err)
		}
		if _, _, err := f.svc.Snooze(ctx, "eve", "@bob:x", f.clock.Now().Add(4*time.Hour)); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(2 * time.Hour)
		if n, _ := f.sweep(f.svc.Lapse); n != 0 {
			t.Fatalf("while snoozed %d claims lapsed", n)
		}
	})
	t.Run("an admin takes over a claim; the old owner no longer can", func(t *testing.T) {
		f := newSweepFixture(t, cfg, []string{"@alice:x"})
		f.raise("eve")
		if _, _, err := f.svc.Claim(ctx, "eve", "@mallory:x"); err != nil {
			t.Fatal(err)
		}
		inc, ok, err := f.svc.Reclaim(ctx, "eve", "@mallory:x", "@alice:x")
		if err != nil || !ok || inc.Owner != "@alice:x" {
			t.Fatalf("take over: %+v, %v, %v", inc, ok, err)
		}
		if edit := oncall.TakeOverEdit(inc); !strings.Contains(edit.Body, "👀 Handled by @alice:x") || edit.Target != "alert:eve" {
			t.Errorf("the takeover's edit = %+v", edit)
		}
		if _, ok, _ := f.svc.Reclaim(ctx, "eve", "@mallory:x", "@mallory:x"); ok {
			t.Error("the old owner renewed a claim that is no longer theirs")
		}
	})
}
