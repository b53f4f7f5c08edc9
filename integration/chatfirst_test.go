package integration

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestChatAnsweredUnderIntake: a person's commands are answered while 64
// agents heartbeat as fast as Jarvis answers them, on SQLite and on
// PostgreSQL; the agents' heartbeats go on being taken meanwhile (intake
// yields to chat for a moment, it does not stop), and none is refused.
// How fast the answers come is BenchmarkRoundTripUnderLoad's.
func TestChatAnsweredUnderIntake(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{store.SQLite, store.Postgres} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			l := newLoaded(t, loadSetup{Agents: 64, Store: testdb.NewConfig(t, engine)})
			cfg := l.config(31)
			cfg.Heartbeats = workload.Max
			w, err := workload.Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			// The flood is on once every agent has been answered once.
			for deadline := time.Now().Add(time.Minute); w.Snapshot().HeartbeatCount() < len(l.agents); {
				if time.Now().After(deadline) {
					t.Fatalf("the agents' first heartbeats were not all answered within a minute: %d", w.Snapshot().HeartbeatCount())
				}
				time.Sleep(10 * time.Millisecond)
			}
			before := w.Snapshot().HeartbeatCount()
			for range 3 {
				sent, err := l.admin.Say(ctx, l.room, "!ping")
				if err != nil {
					t.Fatal(err)
				}
				if _, err := l.admin.WaitFor(ctx, 30*time.Second, l.j.replyTo(sent)); err != nil {
					t.Fatalf("no answer to !ping while the agents heartbeat: %v", err)
				}
			}
			rec := w.Stop()
			if after := rec.HeartbeatCount(); after <= before {
				t.Errorf("no heartbeat was taken while the person chatted: %d before, %d after", before, after)
			}
			if len(rec.Refused) > 0 || len(rec.Failed) > 0 {
				t.Errorf("heartbeats refused %v, failed %v", rec.Refused, rec.Failed)
			}
		})
	}
}
