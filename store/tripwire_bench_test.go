package store_test

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// BenchmarkTripwireTick measures one evaluator pass over 100,000 armed
// tripwires in 10,000 scopes on a real SQLite file. Every pass, 1% of them
// fire (half of those push) and another 1% reset, so each pass writes about
// 1,000 trips, 2,000 state changes and 1,000 notices. Sources are read once
// per (kind, param): 101 reads per pass.
func BenchmarkTripwireTick(b *testing.B) {
	tick, reads, tx := newTickBench(b, true, false, false)
	// Warm up: the first pass loads and compiles every tripwire and records
	// the first observation of each changed condition.
	start := time.Now()
	tick()
	b.Logf("first pass, loading and compiling %d tripwires: %v", benchTripwires, time.Since(start))
	tick()
	reads.Store(0)
	tx.held = 0
	passes := 0
	var last tripwire.TickReport
	cpu0 := cpuTime()
	for b.Loop() {
		last = tick()
		passes++
	}
	// The machine is shared; CPU time per pass is the steadier figure.
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(passes), "cpu-ns/op")
	// On SQLite, what a person's command may wait for.
	b.ReportMetric(float64(tx.held.Microseconds())/1000/float64(passes), "tx-ms/op")
	if last.Fired != benchFlipping || last.Reset != benchFlipping || last.Evaluated != benchTripwires {
		b.Fatalf("last pass: %+v, want %d fired, %d reset of %d", last, benchFlipping, benchFlipping, benchTripwires)
	}
	if got := reads.Load(); got != int64(passes*(benchParams+1)) {
		b.Fatalf("%d source reads in %d passes, want %d per pass", got, passes, benchParams+1)
	}
}

// BenchmarkTripwireTickHistory measures what keeping the sources' history
// costs the pass of BenchmarkTripwireTick: two such workspaces, one that
// keeps the 101 readings of each pass and one whose store drops them, pass
// by pass in turn, so that a load that changes during the run weighs on
// both. It reports the ratio of their times.
func BenchmarkTripwireTickHistory(b *testing.B) {
	with, _, _ := newTickBench(b, true, false, false)
	without, _, _ := newTickBench(b, false, false, false)
	sideBySide(b, with, without)
}

// BenchmarkTripwireTickQuiet measures what quiet hours and daily digests
// cost the pass of BenchmarkTripwireTick: one workspace where every fired
// trip asks its owner's settings (half the scopes hold their pushes all
// day and keep a daily digest, so their trips are written to held_push
// instead of the outbox) against one without quiet hours, pass by pass in
// turn. It reports the ratio of their times.
func BenchmarkTripwireTickQuiet(b *testing.B) {
	with, _, _ := newTickBench(b, true, true, false)
	without, _, _ := newTickBench(b, true, false, false)
	sideBySide(b, with, without)
}

// BenchmarkTripwireTickSilences compares a pass with a silence holding
// (on a target no tripwire reads, so that every push and every reset
// reads the silences and nothing is held) with one without silences.
func BenchmarkTripwireTickSilences(b *testing.B) {
	with, _, _ := newTickBench(b, true, false, true)
	without, _, _ := newTickBench(b, true, false, false)
	sideBySide(b, with, without)
}

// sideBySide runs the passes of two workspaces in turn, so that a load
// that changes during the run weighs on both, and reports their times and
// the ratio. Which of the two goes first changes every pair: a pass right
// after the other workspace's finds the caches and the WAL as that one
// left them, which alone moved the ratio by a fifth either way.
func sideBySide(b *testing.B, with, without func() tripwire.TickReport) {
	for range 2 {
		with()
		without()
	}
	timed := func(pass func() tripwire.TickReport) time.Duration {
		start := time.Now()
		pass()
		return time.Since(start)
	}
	var tWith, tWithout time.Duration
	withFirst := true
	for b.Loop() {
		if withFirst {
			tWith += timed(with)
			tWithout += timed(without)
		} else {
			tWithout += timed(without)
			tWith += timed(with)
		}
		withFirst = !withFirst
	}
	b.ReportMetric(float64(tWith.Nanoseconds())/float64(b.N), "with-ns/pass")
	b.ReportMetric(float64(tWithout.Nanoseconds())/float64(b.N), "without-ns/pass")
	b.ReportMetric(float64(tWith)/float64(tWithout), "ratio")
}

// withoutHistory is the tripwire store with the pass's readings dropped.
type withoutHistory struct{ *store.TripwireQuery }

func (q withoutHistory) ApplyTick(ctx context.Context, w tripwire.TickWrites) error {
	w.Readings = nil
	return q.TripwireQuery.ApplyTick(ctx, w)
}

// The workspace of the tick benchmarks.
const (
	benchTripwires = 100_000
	benchScopes    = 10_000
	benchParams    = 100
	benchFlipping  = 1_000 // per group; group A fires when group B resets
)

// newTickBench arms the tripwires of BenchmarkTripwireTick on a store of
// its own and returns a pass (moving the clock and flipping the flip
// source first) and the count of source reads; keepHistory false drops
// the readings each pass would keep; withQuiet gives every even scope
// quiet hours all day long and a daily digest; withSilence sets an
// admin's silence on a target no tripwire reads.
func newTickBench(b *testing.B, keepHistory, withQuiet, withSilence bool) (func() tripwire.TickReport, *atomic.Int64, *timedTx) {
	const (
		tripwires = benchTripwires
		scopes    = benchScopes
		params    = benchParams
		flipping  = benchFlipping
	)
	ctx := context.Background()
	st := testdb.OpenStore(b, testEngine)
	clock := coretest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var flip atomic.Int64
	var reads atomic.Int64
	reg := core.NewSourceRegistry(
		core.SourceKind{Kind: "bench.flip", Resolve: func(context.Context, string) (core.Observation, error) {
			reads.Add(1)
			return core.Observation{Value: float64(flip.Load())}, nil
		}},
		core.SourceKind{Kind: "bench.metric", Param: "metric", Resolve: func(_ context.Context, p string) (core.Observation, error) {
			reads.Add(1)
			n, _ := strconv.Atoi(p[1:])
			return core.Observation{Value: float64(n)}, nil
		}},
	)
	var q tripwire.Store = st.Tripwires()
	if !keepHistory {
		q = withoutHistory{st.Tripwires()}
	}
	now := clock.Now()
	err := st.InTx(ctx, func(ctx context.Context) error {
		recs := make([]tripwire.Record, 0, tripwires)
		for i := range tripwires {
			rec := tripwire.Record{Scope: fmt.Sprintf("@citizen%d:example.org", i%scopes), Definition: tripwire.Definition{
				ID: fmt.Sprintf("tw_bench_%06d", i), Label: "bench " + strconv.Itoa(i), Rationale: "measure the evaluator",
				Source: core.SourceRef{Kind: "bench.metric", Param: "p" + strconv.Itoa(i%params)},
				Action: tripwire.Action{Journal: true, Push: i%4 < 2}, CooldownSeconds: 60,
				Status: tripwire.Armed, CreatedAt: now, UpdatedAt: now,
			}}
			switch {
			case i < 2*flipping:
				// Group A (even i) fires on 1, group B on 0. Both are past
				// the history cap, so every trip also trims history.
				rec.Source = core.SourceRef{Kind: "bench.flip"}
				rec.Condition = tripwire.Condition{Op: tripwire.OpGT, Threshold: 0.5}
				if i%2 == 1 {
					rec.Condition.Op = tripwire.OpLT
				}
				rec.TripSeq = tripwire.TripHistoryCap
			case i%10 == 0:
				rec.Condition = tripwire.Condition{Op: tripwire.OpChanged}
			case i%20 == 1:
				rec.Condition = tripwire.Condition{Op: tripwire.OpAll, Conditions: []tripwire.Condition{
					{Op: tripwire.OpLT, Threshold: -1.0},
					{Op: tripwire.OpEQ, Threshold: 1.0, Source: &core.SourceRef{Kind: "bench.flip"}},
				}}
			default:
				rec.Condition = tripwire.Condition{Op: tripwire.OpGT, Threshold: float64(params + i%7)}
			}
			recs = append(recs, rec)
		}
		if err := st.Tripwires().InsertTripwires(ctx, recs); err != nil {
			return err
		}
		for i := 0; withQuiet && i < scopes; i += 2 {
			scope := fmt.Sprintf("@citizen%d:example.org", i)
			if err := st.Quiet().SetQuietHours(ctx, scope, quiet.Hours{Set: true, From: 0, To: 24*60 - 1}); err != nil {
				return err
			}
			if err := st.Quiet().SetDigest(ctx, scope, 9*60); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	tx := &timedTx{Transactor: st}
	deps := tripwire.Deps{Store: q, Tokens: st.TripwireTokens(), Tx: tx, Outbox: st.Outbox(), Sources: reg, Clock: clock}
	if withQuiet {
		deps.Quiet = quiet.NewService(quiet.Deps{Store: st.Quiet(), Tx: st, Outbox: st.Outbox(), Clock: clock})
	}
	if withSilence {
		oc := oncall.NewService(oncall.Config{}, oncall.Deps{Store: st.Incidents(), Tx: st, Outbox: st.Outbox(), Clock: clock})
		if _, err := oc.Silence(ctx, oncall.Silence{Target: "ZEUS", By: "@admin:example.org", EndsAt: now.Add(oncall.MaxSilence)}); err != nil {
			b.Fatal(err)
		}
		deps.Silences = oc
	}
	svc := tripwire.NewService(testconfig.Tripwires(), deps)
	// Each pass flips the flip source and moves the clock past the
	// cooldown, but not so fast that flipping tripwires get quarantined.
	tick := func() tripwire.TickReport {
		flip.Store(1 - flip.Load())
		clock.Advance(31 * time.Minute)
		r, err := svc.Tick(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return r
	}
	return tick, &reads, tx
}

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timedTx adds up the time spent inside its transactions.
type timedTx struct {
	core.Transactor
	held time.Duration
}

func (t *timedTx) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	start := time.Now()
	defer func() { t.held += time.Since(start) }()
	return t.Transactor.InTx(ctx, fn)
}
