package store_test

import (
	"context"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// writeDays keeps readings of n sources every step for days, as evaluator
// passes do, ending at end; source i is bench.metric[p<i>].
func writeDays(tb testing.TB, st *store.Store, n int, days float64, step time.Duration, end time.Time) {
	tb.Helper()
	q := st.Tripwires()
	count := int(days * float64(24*time.Hour) / float64(step))
	for k := range count {
		at := end.Add(-time.Duration(count-k) * step)
		readings := make([]history.Reading, n)
		for i := range readings {
			v := 0.7 + 0.2*math.Sin(float64(k)/30+float64(i))
			readings[i] = history.Reading{Source: core.SourceRef{Kind: "bench.metric", Param: "p" + strconv.Itoa(i)}, At: at, Value: v}
		}
		if err := q.ApplyTick(context.Background(), tripwire.TickWrites{Readings: readings}); err != nil {
			tb.Fatal(err)
		}
	}
}

// TestHistoryBytesPerSourceDay measures what a source's history costs on
// SQLite: a day of readings at the default tick (5 minutes) and at one a
// minute, kept as read and once downsampled into buckets.
func TestHistoryBytesPerSourceDay(t *testing.T) {
	const sources = 50
	for _, step := range []time.Duration{5 * time.Minute, time.Minute} {
		st := testdb.OpenStore(t, store.SQLite)
		ctx := context.Background()
		size := func() int64 {
			if _, err := st.DB.Exec(ctx, "VACUUM"); err != nil {
				t.Fatal(err)
			}
			_, n, err := st.Size(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		empty := size()
		end := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
		writeDays(t, st, sources, 1, step, end)
		full := float64(size()-empty) / sources
		for {
			n, err := st.DownsampleHistory(ctx, end, 5000)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				break
			}
		}
		bucketed := float64(size()-empty) / sources
		t.Logf("a reading every %s: %.0f bytes per source per day as read, %.0f in buckets", step, full, bucketed)
		// A reading row is a few dozen bytes: a day at one a minute stays
		// well under 100 kB a source.
		if perReading := full / (24 * float64(time.Hour) / float64(step)); perReading > 60 {
			t.Errorf("%.0f bytes per reading, want at most 60", perReading)
		}
		if bucketed > full*1.1 {
			t.Errorf("buckets take %.0f bytes per source per day, more than the %.0f of the readings", bucketed, full)
		}
	}
}

// BenchmarkBacktest replays 7 days of 5-minute readings (2,016 passes)
// through a tripwire, without and with its cooldown, reading them from
// SQLite: what a proposal or `!tw arm` costs before it answers.
func BenchmarkBacktest(b *testing.B) {
	st := testdb.OpenStore(b, store.SQLite)
	end := time.Date(2026, 3, 8, 0, 0, 0, 0, time.UTC)
	clock := coretest.NewClock(end)
	writeDays(b, st, 1, 7, 5*time.Minute, end)
	svc := tripwire.NewService(testconfig.Tripwires(), tripwire.Deps{Store: st.Tripwires(), Tx: st, Clock: clock, History: st,
		Sources: core.NewSourceRegistry(core.SourceKind{Kind: "bench.metric", Param: "metric",
			Resolve: func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }})})
	def := tripwire.Definition{Source: core.SourceRef{Kind: "bench.metric", Param: "p0"}, CooldownSeconds: 3600,
		Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: 0.6}}
	var bt tripwire.Backtest
	cpu0 := cpuTime()
	for b.Loop() {
		var err error
		if bt, err = svc.Backtest(context.Background(), "@alice:example.org", def, tripwire.BacktestSpan); err != nil {
			b.Fatal(err)
		}
	}
	if bt.Plain.Passes != 2016 || len(bt.Plain.Trips) == 0 {
		b.Fatalf("backtest replayed %d passes with %d trips, want 2016 passes and some trips", bt.Plain.Passes, len(bt.Plain.Trips))
	}
	// The machine is shared; CPU time per backtest is the steadier figure.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
	b.ReportMetric(float64(len(bt.Plain.Trips)), "trips")
}
