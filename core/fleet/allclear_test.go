package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestCrashLoopAllClear: a crash loop's alert resolves once the agent has
// run the crash-loop window without a new boot: edited to resolved, with
// one reply in its thread.
func TestCrashLoopAllClear(t *testing.T) {
	fx := newMeterFixture(t)
	ctx := context.Background()
	for _, boot := range []string{"c1", "c2", "c3", "c4"} {
		fx.clock.Advance(time.Minute)
		fx.meteredBeat(t, "EVE", boot, 0)
	}
	const alert = "crash-loop:EVE:c4"
	sweep := func(after time.Duration) room {
		t.Helper()
		fx.clock.Set(fleetT0.Add(4*time.Minute + 3*time.Second + after)) // c4 booted at 4m4s
		fx.meteredBeat(t, "EVE", "c4", 0)                                // still running, no restart, a second later
		if err := fx.fleet.Sweep(ctx); err != nil {
			t.Fatalf("Sweep() = %v", err)
		}
		return fx.room(t)
	}
	if r := sweep(9 * time.Minute); len(r.threads[alert]) != 0 {
		t.Fatalf("9m without a restart: thread %q, want the alert open", r.threads[alert])
	}
	r := sweep(10 * time.Minute)
	if got := r.edited[alert]; !strings.HasPrefix(got, "✅ **Resolved** after 10m, nobody claimed it. It was: 🚨 **Crash loop: EVE**") {
		t.Errorf("10m without a restart: the alert reads %q, want resolved", got)
	}
	want := "✅ **EVE** has run without a restart for 10m, since boot `c4` at 00:04 UTC: the crash loop is over. All clear: the alert was open 10m, nobody claimed it."
	if got := r.threads[alert]; len(got) != 1 || got[0] != want {
		t.Errorf("10m without a restart: thread %q, want %q", got, want)
	}
	if r := sweep(20 * time.Minute); len(r.threads[alert]) != 1 {
		t.Errorf("later sweeps: thread %q, want the one reply", r.threads[alert])
	}
}

// TestBudgetAllClear: a budget alert resolves when its UTC day is over,
// or when the day's spend is back under what raised it because the
// budget was raised.
func TestBudgetAllClear(t *testing.T) {
	ctx := context.Background()
	sweep := func(t *testing.T, fx *fleetFixture) room {
		t.Helper()
		if err := fx.fleet.Sweep(ctx); err != nil {
			t.Fatalf("Sweep() = %v", err)
		}
		return fx.room(t)
	}
	t.Run("a new day", func(t *testing.T) {
		fx := newMeterFixture(t)
		fx.clock.Set(fleetT0.Add(22*time.Hour - time.Second))
		fx.meteredBeat(t, "EVE", "", 11) // a second later
		const alert = "spend:alert:EVE:2026-04-17"
		fx.clock.Set(fleetT0.Add(24*time.Hour - time.Second))
		if r := sweep(t, fx); len(r.threads[alert]) != 0 {
			t.Fatalf("before midnight: thread %q, want the alert open", r.threads[alert])
		}
		fx.clock.Set(fleetT0.Add(24 * time.Hour))
		r := sweep(t, fx)
		if got := r.edited[alert]; !strings.HasPrefix(got, "✅ **Resolved** after 2h, nobody claimed it. It was: 🚨 **EVE** has spent 11.00 USD today") {
			t.Errorf("at midnight: the alert reads %q, want resolved", got)
		}
		want := "✅ **EVE**'s budget day 2026-04-17 is over, with 11.00 USD spent: today's spend counts from zero. All clear: the alert was open 2h, nobody claimed it."
		if got := r.threads[alert]; len(got) != 1 || got[0] != want {
			t.Errorf("at midnight: thread %q, want %q", got, want)
		}
	})
	t.Run("a raised budget", func(t *testing.T) {
		fx := newMeterFixture(t)
		fx.meteredBeat(t, "EVE", "", 8.5)
		fx.meteredBeat(t, "EVE", "", 2.5)
		if r := fx.room(t); len(r.top) != 2 {
			t.Fatalf("8.50 then 11.00 of 10: top-level %v, want the warning and the alert", r.top)
		}
		fx.clock.Advance(time.Hour)
		fx.cfg.Agents[0].Budget.Daily = 12
		if err := fx.fleet.SetConfig(fx.cfg); err != nil {
			t.Fatal(err)
		}
		r := sweep(t, fx)
		want := "✅ **EVE** is back under its budget: 11.00 USD spent today, 92 % of 12.00 USD. All clear: the alert was open 1h, nobody claimed it."
		if got := r.threads["spend:alert:EVE:2026-04-17"]; len(got) != 1 || got[0] != want {
			t.Errorf("budget raised to 12: alert thread %q, want %q", got, want)
		}
		if got := r.threads["spend:warn:EVE:2026-04-17"]; len(got) != 0 {
			t.Errorf("budget raised to 12: the 80 %% warning resolved too (%q); 92 %% is still past it", got)
		}
	})
}
