package commands

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/chart"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// TestFleetChart: the fleet keeps each heartbeat's MII and each agent's
// silences in the history with no tripwire reading them, and `!fleet
// chart [agent]` answers with an image notice whose chart shows each
// agent's MII with its offline span; an unknown agent gets words.
func TestFleetChart(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	w := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x"}
	incidents := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	f := w.Fleet(t, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: time.Minute}, {Name: "HAL", Cadence: time.Minute}}},
		func(d *fleet.Deps) { d.Incidents = incidents })
	h.proc.AddFeatures(Features{Fleet: f})
	for i, mii := range []float64{0.91, 0.88} {
		if _, err := f.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: "EVE", Cycle: strconv.Itoa(i), Timestamp: h.clock.Now(), MII: mii, Mode: "green"}); err != nil {
			t.Fatal(err)
		}
		h.clock.Advance(time.Minute)
	}
	// Three missed heartbeats: EVE goes offline.
	h.clock.Advance(5 * time.Minute)
	if err := f.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	h.clock.Advance(time.Hour)

	replies := h.say(t, alice, "!fleet chart")
	var req history.Chart
	if len(replies) != 1 || json.Unmarshal([]byte(replies[0]), &req) != nil {
		t.Fatalf("!fleet chart = %q, want one chart request", replies)
	}
	if len(req.Series) != 2 || req.Series[0].Name != "EVE" || req.Series[1].Name != "HAL" || req.To.Sub(req.From) != history.ChartSpan {
		t.Fatalf("chart request = %+v, want EVE and HAL over a day", req)
	}
	_, words, err := chart.Draw(ctx, h.store, replies[0], time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"EVE: 2 readings, lowest 0.88, highest 0.91, last 0.88; offline 1 time (shaded).", "HAL: no readings."} {
		if !strings.Contains(words, want) {
			t.Errorf("the chart says %q, want %q in it", words, want)
		}
	}
	waiting, err := h.store.Outbox().Waiting(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if last := waiting[len(waiting)-1]; last.Kind != core.NoticeImage || last.RoomID != "!room:x" {
		t.Errorf("the chart went as %s to %q, want an image in the room", last.Kind, last.RoomID)
	}

	one := h.say(t, alice, "!fleet chart eve")
	if len(one) != 1 || json.Unmarshal([]byte(one[0]), &req) != nil || len(req.Series) != 1 || req.Series[0].Name != "EVE" {
		t.Errorf("!fleet chart eve = %q, want EVE's chart alone", one)
	}
	if got := h.say(t, alice, "!fleet chart ZORG"); len(got) != 1 || !strings.Contains(got[0], `I know no agent called "ZORG"`) {
		t.Errorf("!fleet chart ZORG = %q", got)
	}
}
