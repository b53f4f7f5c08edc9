package console

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// BenchmarkRelayRound measures what the console relay costs a running
// Jarvis while nobody types in a console: one round every PollInterval
// (five a second) that finds no input, over a queue whose last hour of
// 1,000 handled lines waits to be pruned.
func BenchmarkRelayRound(b *testing.B) {
	for _, engine := range testdb.Engines() {
		b.Run(engine, func(b *testing.B) {
			ctx := context.Background()
			st := testdb.OpenStore(b, engine)
			clock := coretest.NewClock(time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC))
			for i := range 1000 {
				seq, err := st.AddInput(ctx, core.Input{User: "alice", Body: "!ping", At: clock.Now()})
				if err != nil {
					b.Fatal(err)
				}
				if err := st.MarkInputHandled(ctx, seq, string(commands.Answered), clock.Now().Add(time.Duration(i)*time.Millisecond)); err != nil {
					b.Fatal(err)
				}
			}
			proc := commands.NewProcessor(commands.Config{Prefix: "!"}, commands.Deps{Tx: st, Outbox: st.Outbox(),
				Handled: st, Notices: st.Outbox(), Pending: st, Excerpts: st, Clock: clock})
			relay := NewRelay(RelayDeps{Inputs: st, Outbox: st.Outbox(), Processor: proc, Clock: clock})
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := relay.Round(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
