package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestGauges: what /metrics counts of the workspace: breakers by state,
// tripwires by status without the deleted, and open alerts, each folded
// group once.
func TestGauges(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			st := testdb.OpenStore(t, engine)
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			for i, state := range []breaker.State{breaker.Open, breaker.Open, breaker.HalfOpen, breaker.Closed} {
				agent := fmt.Sprintf("agent%d", i)
				if err := st.Breakers().AddEvent(ctx, breaker.Event{ID: "brk_" + agent, Agent: agent, At: at,
					Severity: breaker.SeveritySafety, Reason: "r", OpenedBy: "aster"}); err != nil {
					t.Fatal(err)
				}
				if err := st.Breakers().Move(ctx, breaker.Record{Agent: agent, State: state, EventID: "brk_" + agent, Since: at}, 0); err != nil {
					t.Fatal(err)
				}
			}
			tw := services.NewTripwireFixture(t, st, testconfig.Tripwires())
			armed := tw.Arm("@alice:x", services.GIBelow("low GI", 0.7, true, 60))
			tw.Arm("@alice:x", services.GIBelow("lower GI", 0.5, true, 60))
			gone := tw.Arm("@alice:x", services.GIBelow("gone", 0.3, true, 60))
			if _, err := tw.Service.Disable(ctx, "@alice:x", armed.ID); err != nil {
				t.Fatal(err)
			}
			if err := tw.Service.Delete(ctx, "@alice:x", gone.ID); err != nil {
				t.Fatal(err)
			}
			for _, inc := range []oncall.Incident{
				{ID: "a", Kind: "alert", Subject: "EVE", OpenedAt: at},
				{ID: "b", Kind: "alert", Subject: "HAL", OpenedAt: at, ResolvedAt: at.Add(time.Minute)},
				{ID: "c", Kind: "alert", Subject: "ZEUS", OpenedAt: at, Parent: "a"},
			} {
				inc.NoticeKey, inc.RoomID, inc.Body = "k:"+inc.ID, "!room:x", "⚠️"
				if err := st.Incidents().PutIncident(ctx, inc); err != nil {
					t.Fatal(err)
				}
			}
			g, err := st.Gauges(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmt.Sprint(g.Breakers, g.Tripwires, g.OpenIncidents), "map[closed:1 half-open:1 open:2] map[armed:1 disabled:1] 1"; got != want {
				t.Errorf("gauges %s, want %s", got, want)
			}
		})
	}
}
