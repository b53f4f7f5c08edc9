package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// newMeterFixture is the fleet with EVE on a budget of 10 USD a day and a
// crash loop at 3 restarts within 10 minutes.
func newMeterFixture(t *testing.T) *fleetFixture {
	t.Helper()
	fx := newFleetFixture(t)
	fx.cfg = fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Hour, Budget: fleet.Budget{Daily: 10, Currency: "USD"}},
		{Name: "ZEUS", Cadence: time.Hour}}, CrashLoop: fleet.CrashLoop{Restarts: 3, Window: 10 * time.Minute}}
	fx.fleet = fx.newFleet(t)
	return fx
}

// meteredBeat sends a heartbeat a second after the one before: two
// heartbeats alike in the same instant are one sent twice.
func (fx *fleetFixture) meteredBeat(t *testing.T, agent, boot string, cost float64) {
	t.Helper()
	fx.clock.Advance(time.Second)
	hb := fleet.Heartbeat{Agent: agent, Cycle: "C-1", Timestamp: fx.clock.Now(), MII: 0.9, Mode: "green", BootID: boot}
	if cost > 0 {
		hb.Spend = &fleet.Spend{TokensIn: 1000, TokensOut: 200, Cost: cost, Currency: "USD"}
	}
	if _, err := fx.fleet.RecordHeartbeat(context.Background(), hb); err != nil {
		t.Fatalf("heartbeat of %s: %v", agent, err)
	}
}

func TestSpendBudget(t *testing.T) {
	fx := newMeterFixture(t)
	spendNotices := func() []string {
		var out []string
		for k, body := range fx.notices(t) {
			if strings.HasPrefix(k, "spend:") {
				out = append(out, k+" "+body)
			}
		}
		return out
	}
	fx.meteredBeat(t, "EVE", "", 7.5)
	if got := spendNotices(); len(got) != 0 {
		t.Fatalf("at 75 %%: %q, want nothing", got)
	}
	fx.meteredBeat(t, "EVE", "", 0.6)
	fx.meteredBeat(t, "EVE", "", 0.5)
	got := spendNotices()
	if len(got) != 1 || !strings.Contains(got[0], "spend:warn:EVE:2026-04-17 ⚠️ **EVE** has spent 8.10 USD today, 81 % of its daily budget of 10.00 USD.") {
		t.Fatalf("past 80 %% twice: %q, want one warning", got)
	}
	fx.meteredBeat(t, "EVE", "", 2)
	fx.meteredBeat(t, "EVE", "", 2)
	got = spendNotices()
	if len(got) != 2 || !strings.Contains(strings.Join(got, "\n"), "🚨 **EVE** has spent 10.60 USD today, 106 % of its daily budget") {
		t.Fatalf("past 100 %% twice: %q, want the warning and one alert", got)
	}
	rows, err := fx.fleet.FleetStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if text := fleet.Render(rows); !strings.Contains(text, "spent 12.60 USD today (126 % of 10.00 USD), 5000 tokens in, 1000 out") {
		t.Errorf("!fleet reads:\n%s", text)
	}
	// A new day starts from nothing.
	fx.clock.Advance(24 * time.Hour)
	if s := fx.report(t, "EVE").SpendToday; s.Cost != 0 {
		t.Errorf("the next day starts at %v spent", s.Cost)
	}

	t.Run("spend in another currency than the budget's is refused", func(t *testing.T) {
		_, err := fx.fleet.RecordHeartbeat(context.Background(), fleet.Heartbeat{Agent: "EVE", Cycle: "C-1", Timestamp: fx.clock.Now(),
			MII: 0.9, Mode: "green", Spend: &fleet.Spend{Cost: 1, Currency: "EUR"}})
		if fieldOf(err) != "spend.currency" {
			t.Errorf("EUR spend = %v, want an invalid spend.currency", err)
		}
		_, err = fx.fleet.RecordHeartbeat(context.Background(), fleet.Heartbeat{Agent: "EVE", Cycle: "C-1", Timestamp: fx.clock.Now(),
			MII: 0.9, Mode: "green", Spend: &fleet.Spend{Cost: -3, Currency: "USD"}})
		if fieldOf(err) != "spend.cost" {
			t.Errorf("a negative cost = %v, want an invalid spend.cost", err)
		}
	})
}

func TestCrashLoop(t *testing.T) {
	fx := newMeterFixture(t)
	loops := func() []string {
		var out []string
		for k, body := range fx.notices(t) {
			if strings.HasPrefix(k, "crash-loop:") {
				out = append(out, body)
			}
		}
		return out
	}
	// Restarts spread out are routine.
	for i, boot := range []string{"b1", "b2", "b3", "b4"} {
		if i > 0 {
			fx.clock.Advance(6 * time.Minute)
		}
		fx.meteredBeat(t, "EVE", boot, 0)
		fx.meteredBeat(t, "EVE", boot, 0) // the same boot again is no restart
	}
	if got := loops(); len(got) != 0 {
		t.Fatalf("restarts 6 minutes apart: %q, want no crash loop", got)
	}
	// Three in quick succession are a crash loop, announced once.
	fx.clock.Advance(11 * time.Minute)
	for _, boot := range []string{"c1", "c2", "c3", "c4", "c5"} {
		fx.clock.Advance(time.Minute)
		fx.meteredBeat(t, "EVE", boot, 0)
	}
	got := loops()
	if len(got) != 1 || !strings.Contains(got[0], "🚨 **Crash loop: EVE** has restarted 3 times in 10m (a new boot id each time; the last, `c3`") ||
		!strings.Contains(got[0], "This is not a routine restart") {
		t.Fatalf("five restarts a minute apart: %q, want one escalated notice", got)
	}
	if n := fx.report(t, "EVE").Restarts; n != 5 {
		t.Errorf("agent.crash_loop reads %d restarts, want 5", n)
	}
}
