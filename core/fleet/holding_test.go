package fleet_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core/fleet"
)

func TestFleetViewFromEverySource(t *testing.T) {
	fx := newFleetFixture(t)
	for _, a := range []string{"EVE", "ZEUS", "HERMES", "AUREA"} {
		fx.heartbeat(t, a, "C-284")
	}
	fx.fleet.SetHoldings(func(context.Context, []string) (map[string]fleet.Holding, error) {
		return map[string]fleet.Holding{
			"EVE":    {Breaker: "closed", Cards: []fleet.HeldCard{{ID: "card_2", State: "needs_decision"}}},
			"ZEUS":   {Breaker: "open", Cards: []fleet.HeldCard{{ID: "card_1", State: "in_progress"}}},
			"HERMES": {Cards: []fleet.HeldCard{{ID: "card_3", State: "blocked"}}, CIFailed: []string{"card_3"}},
		}, nil
	})
	rows, err := fx.fleet.FleetStatus(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, r := range rows {
		order = append(order, r.Agent+": "+r.NeedsAttention())
	}
	want := []string{"ZEUS: halted: its breaker is open", "HERMES: 1 blocked card", "EVE: 1 question waiting for a person", "AUREA: "}
	if strings.Join(order, "; ") != strings.Join(want, "; ") {
		t.Errorf("rows = %q, want %q", order, want)
	}
	text := fleet.Render(rows)
	for _, line := range []string{"· breaker open · cards card_1 (in_progress)", "· cards card_3 (blocked) · CI failed on card_3",
		"Needs attention first: **ZEUS** (halted: its breaker is open), **HERMES** (1 blocked card), **EVE** (1 question waiting for a person)."} {
		if !strings.Contains(text, line) {
			t.Errorf("!fleet lacks %q:\n%s", line, text)
		}
	}
}
