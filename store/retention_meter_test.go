package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// TestRetentionApprovalsBootsSpend: decided approval requests go after
// retention.approvals, pending ones stay; boots and days of spend go after
// retention.journal, but each agent's latest boot stays.
func TestRetentionApprovalsBootsSpend(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 1, 9, 0, 0, 0, time.UTC)
	clock := coretest.NewClock(t0)
	svc, s := newTestApprovals(t, clock)
	decided, _, _ := svc.Request(ctx, deployRequest("decided"))
	waiting, _, _ := svc.Request(ctx, deployRequest("waiting"))
	if _, err := svc.Decide(ctx, decided.ID, approval.Verdict{Approve: true}, approval.Decider{Who: alice, Network: "matrix", Trust: core.TrustNative}); err != nil {
		t.Fatal(err)
	}
	m := s.Meter()
	for i, id := range []string{"old-1", "old-2"} {
		if err := m.AddBoot(ctx, "EVE", fleet.Boot{ID: id, SeenAt: t0.Add(time.Duration(i) * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.AddBoot(ctx, "ZEUS", fleet.Boot{ID: "only", SeenAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.AddSpend(ctx, "EVE", "2026-07-01", fleet.Spend{Cost: 1, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}

	clock.Advance(30 * 24 * time.Hour)
	if _, err := m.AddSpend(ctx, "EVE", "2026-07-31", fleet.Spend{Cost: 2, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	w := services.Wiring{Store: s, Clock: clock}
	r := w.Retention(retention.Config{Outbox: time.Hour, Events: 24 * time.Hour, Pending: time.Hour, Journal: 7 * 24 * time.Hour,
		Deleted: time.Hour, Approvals: 7 * 24 * time.Hour}).Pass(ctx)
	if r.Err != nil || r.Approvals != 1 || r.Meter != 2 {
		t.Fatalf("Pass() = %+v, want 1 approval, 1 boot and 1 day of spend removed", r)
	}
	if _, err := svc.Get(ctx, decided.ID); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("the decided request is still there: %v", err)
	}
	if a, err := svc.Get(ctx, waiting.ID); err != nil || a.Status != approval.Pending {
		t.Errorf("the waiting request = %+v, %v; want it kept", a, err)
	}
	for agent, want := range map[string]string{"EVE": "old-2", "ZEUS": "only"} {
		if b, err := m.LatestBoot(ctx, agent); err != nil || b.ID != want {
			t.Errorf("%s's latest boot = %+v, %v; want %s kept", agent, b, err, want)
		}
	}
	if d, _ := m.SpendOn(ctx, "EVE", "2026-07-01"); d.Cost != 0 {
		t.Errorf("the old day's spend is still there: %+v", d)
	}
	if d, _ := m.SpendOn(ctx, "EVE", "2026-07-31"); d.Cost != 2 {
		t.Errorf("today's spend = %+v, want it kept", d)
	}
}
