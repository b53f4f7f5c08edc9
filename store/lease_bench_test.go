package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// BenchmarkFencedWrite measures what the lease's fence adds to a write
// transaction: each round commits one small write without the fence and
// one with it, taking turns so that the machine's load weighs on both
// alike, and reports their mean times and the ratio.
func BenchmarkFencedWrite(b *testing.B) {
	ctx := context.Background()
	st := testdb.OpenStore(b, testEngine)
	l := newTestLease(st, "jarvis-a", coretest.NewClock(leaseStart))
	if _, err := l.Acquire(ctx); err != nil {
		b.Fatal(err)
	}
	write := func(ctx context.Context) error {
		_, err := st.DB.Exec(ctx, `INSERT INTO bot_state (key, value) VALUES ('bench', 'x')
			ON CONFLICT (key) DO UPDATE SET value = excluded.value`)
		return err
	}
	var took [2]time.Duration // unfenced, fenced
	for b.Loop() {
		for i, fence := range []func(context.Context) error{nil, l.FenceHeld} {
			st.SetFence(fence)
			start := time.Now()
			if err := st.InTx(ctx, write); err != nil {
				b.Fatal(err)
			}
			took[i] += time.Since(start)
		}
	}
	b.ReportMetric(float64(took[0].Microseconds())/float64(b.N), "plain-µs/tx")
	b.ReportMetric(float64(took[1].Microseconds())/float64(b.N), "fenced-µs/tx")
	b.ReportMetric(float64(took[1])/float64(took[0]), "fenced/plain")
}
