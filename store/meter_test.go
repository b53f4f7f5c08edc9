package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestMeterStore(t *testing.T) {
	ctx := context.Background()
	m := testdb.OpenStore(t, testEngine).Meter()
	t0 := time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)

	if d, err := m.SpendOn(ctx, "EVE", "2026-07-09"); err != nil || d != (fleet.DaySpend{}) {
		t.Errorf("spend before any = %+v, %v; want zero", d, err)
	}
	if _, err := m.AddSpend(ctx, "EVE", "2026-07-09", fleet.Spend{TokensIn: 10, TokensOut: 5, Cost: 0.25, Currency: "USD"}); err != nil {
		t.Fatal(err)
	}
	d, err := m.AddSpend(ctx, "EVE", "2026-07-09", fleet.Spend{TokensIn: 1, Cost: 0.5})
	if err != nil || d.TokensIn != 11 || d.TokensOut != 5 || d.Cost != 0.75 || d.Currency != "USD" {
		t.Errorf("the day's total = %+v, %v; want 11 in, 5 out, 0.75 USD", d, err)
	}
	if err := m.MarkSpend(ctx, "EVE", "2026-07-09", true, false); err != nil {
		t.Fatal(err)
	}
	if d, _ := m.SpendOn(ctx, "EVE", "2026-07-09"); !d.Warned || d.Alerted {
		t.Errorf("after marking the warning: %+v", d)
	}
	if d, _ := m.SpendOn(ctx, "EVE", "2026-07-10"); d.Cost != 0 {
		t.Errorf("the next day = %+v, want zero", d)
	}

	if _, err := m.LatestBoot(ctx, "EVE"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("LatestBoot before any = %v, want ErrNotFound", err)
	}
	for i, id := range []string{"a", "b", "a"} {
		if err := m.AddBoot(ctx, "EVE", fleet.Boot{ID: id, SeenAt: t0.Add(time.Duration(i) * time.Minute), Restart: i > 0}); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := m.LatestBoot(ctx, "EVE"); err != nil || b.ID != "b" || !b.Restart {
		t.Errorf("LatestBoot = %+v, %v; want b, a restart (a seen again is not added)", b, err)
	}
	if boots, err := m.BootsSince(ctx, "EVE", t0.Add(30*time.Second)); err != nil || len(boots) != 1 || boots[0].ID != "b" {
		t.Errorf("BootsSince = %+v, %v; want b alone", boots, err)
	}
}
