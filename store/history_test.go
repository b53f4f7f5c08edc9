package store_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestSourceHistory checks that every pass keeps what it read, numbers and
// text alike, that readings older than two days become 5-minute buckets
// of their minimum, maximum and last value, and that the history goes
// once past its retention.
func TestSourceHistory(t *testing.T) {
	f := newTWFixture(t, testconfig.Tripwires())
	ctx := f.Ctx
	f.Arm(twAlice, services.GIBelow("GI low", 0.7, false, 60))
	f.Arm(twAlice, tripwire.Draft{Label: "mood", Rationale: "watch the lane", Source: core.SourceRef{Kind: "lane.sentiment"},
		Condition: tripwire.Condition{Op: tripwire.OpChanged}})
	start := f.Clock.Now().Truncate(history.BucketWidth)
	f.Clock.Set(start)
	gi := []float64{0.9, 0.6, 0.8, 0.75, 0.5, 0.95}
	moods := []string{"calm", "calm", "tense", "calm", "tense", "tense"}
	for i := range gi {
		f.Set("integrity.gi", gi[i])
		f.Set("lane.sentiment", moods[i])
		f.Tick()
		f.Clock.Advance(time.Minute)
	}
	points, err := f.Store.Points(ctx, core.SourceRef{Kind: "integrity.gi"}, start, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != len(gi) {
		t.Fatalf("%d points of integrity.gi, want %d: %+v", len(points), len(gi), points)
	}
	for i, p := range points {
		if p.Value != gi[i] || !p.At.Equal(start.Add(time.Duration(i)*time.Minute)) || p.Bucket {
			t.Errorf("point %d = %+v, want %v at %s", i, p, gi[i], start.Add(time.Duration(i)*time.Minute))
		}
	}
	moodPoints, err := f.Store.Points(ctx, core.SourceRef{Kind: "lane.sentiment"}, start, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(moodPoints) != len(moods) || moodPoints[2].Value != "tense" {
		t.Fatalf("lane.sentiment points = %+v, want %v", moodPoints, moods)
	}

	// Two days later the first 5 minutes are one bucket each; the sixth
	// reading, in the next bucket, becomes a bucket of its own.
	n, err := f.Store.DownsampleHistory(ctx, start.Add(10*time.Minute), 500)
	if err != nil || n != 2*len(gi) {
		t.Fatalf("DownsampleHistory() = %d, %v; want %d readings", n, err, 2*len(gi))
	}
	points, err = f.Store.Points(ctx, core.SourceRef{Kind: "integrity.gi"}, start, f.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	want := []history.Point{
		{At: start, Value: 0.5, Bucket: true, Min: 0.5, Max: 0.9},
		{At: start.Add(5 * time.Minute), Value: 0.95, Bucket: true, Min: 0.95, Max: 0.95},
	}
	if !slices.Equal(points, want) {
		t.Errorf("buckets = %+v, want %+v", points, want)
	}
	moodPoints, _ = f.Store.Points(ctx, core.SourceRef{Kind: "lane.sentiment"}, start, f.Clock.Now())
	if len(moodPoints) != 2 || moodPoints[0].Value != "tense" || !moodPoints[0].Bucket {
		t.Errorf("lane.sentiment buckets = %+v, want its last value, tense", moodPoints)
	}
	if got := history.Values(points); len(got) != 6 || got[0].Value != 0.5 || got[1].Value != 0.9 || got[2].Value != 0.5 {
		t.Errorf("Values(buckets) = %+v, want each bucket as min, max, last", got)
	}

	// Readings that come after their bucket was written, taken one at a
	// time, are merged into it.
	for _, v := range []float64{0.4, 0.3, 0.7} {
		f.Set("integrity.gi", v)
		f.Tick()
		f.Clock.Advance(time.Minute)
	}
	for {
		n, err := f.Store.DownsampleHistory(ctx, f.Clock.Now().Add(time.Hour), 1)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
	}
	points, _ = f.Store.Points(ctx, core.SourceRef{Kind: "integrity.gi"}, start, f.Clock.Now())
	if wantB := (history.Point{At: start.Add(5 * time.Minute), Value: 0.7, Bucket: true, Min: 0.3, Max: 0.95}); len(points) != 2 || points[1] != wantB {
		t.Errorf("buckets after merging = %+v, want the second %+v", points, wantB)
	}

	n, err = f.Store.PruneHistory(ctx, start.Add(5*time.Minute), 500)
	if err != nil || n != 2 {
		t.Fatalf("PruneHistory() = %d, %v; want the first bucket of both sources", n, err)
	}
	points, _ = f.Store.Points(ctx, core.SourceRef{Kind: "integrity.gi"}, start, f.Clock.Now())
	if len(points) != 1 || !points[0].At.Equal(start.Add(5*time.Minute)) {
		t.Errorf("after pruning: %+v, want the bucket at %s alone", points, start.Add(5*time.Minute))
	}
	if none, err := f.Store.Points(ctx, core.SourceRef{Kind: "vault.balance"}, start, f.Clock.Now()); err != nil || len(none) != 0 {
		t.Errorf("Points(never read) = %v, %v; want none", none, err)
	}
}

// TestBacktestMatchesLiveEvaluator arms tripwires with every operator and
// compound conditions, runs live evaluator passes over a random series of
// readings at random intervals (values of the wrong type among them),
// then replays the history those passes kept through the backtest: every
// tripwire's trips, and when it was quarantined, must be the same.
func TestBacktestMatchesLiveEvaluator(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			backtestMatchesLive(t, seed)
		})
	}
}

func backtestMatchesLive(t *testing.T, seed uint64) {
	rnd := rand.New(rand.NewPCG(seed, 19))
	f := newTWFixture(t, testconfig.Tripwires())
	gi := core.SourceRef{Kind: "integrity.gi"}
	vault := core.SourceRef{Kind: "vault.balance"}
	lane := core.SourceRef{Kind: "lane.sentiment"}
	leaf := func(op tripwire.Op, threshold any, src *core.SourceRef) tripwire.Condition {
		return tripwire.Condition{Op: op, Threshold: threshold, Source: src}
	}
	cases := []struct {
		src  core.SourceRef
		cond tripwire.Condition
	}{
		{gi, leaf(tripwire.OpLT, 0.5, nil)},
		{gi, leaf(tripwire.OpLTE, 0.5, nil)},
		{gi, leaf(tripwire.OpGT, 0.6, nil)},
		{gi, leaf(tripwire.OpGTE, 0.6, nil)},
		{vault, leaf(tripwire.OpEQ, 3.0, nil)},
		{lane, leaf(tripwire.OpNEQ, "calm", nil)},
		{lane, leaf(tripwire.OpIn, []any{"tense", "angry"}, nil)},
		{lane, leaf(tripwire.OpChanged, nil, nil)},
		{vault, leaf(tripwire.OpChanged, nil, nil)},
		{gi, tripwire.Condition{Op: tripwire.OpAll, Conditions: []tripwire.Condition{
			leaf(tripwire.OpLT, 0.7, nil), leaf(tripwire.OpEQ, "tense", &lane)}}},
		{gi, tripwire.Condition{Op: tripwire.OpAny, Conditions: []tripwire.Condition{
			leaf(tripwire.OpLT, 0.3, nil), leaf(tripwire.OpGT, 4.0, &vault)}}},
		{lane, tripwire.Condition{Op: tripwire.OpAll, Conditions: []tripwire.Condition{
			leaf(tripwire.OpChanged, nil, nil), leaf(tripwire.OpGTE, 2.0, &vault)}}},
	}
	cooldowns := []int{0, 60, 600, 3600}
	type armed struct {
		scope string
		def   tripwire.Definition
	}
	var tws []armed
	for i, c := range cases {
		for j, cd := range cooldowns {
			scope := fmt.Sprintf("@p%d:example.org", i*len(cooldowns)+j)
			def := f.Arm(scope, tripwire.Draft{Label: fmt.Sprintf("case %d cooldown %d", i, cd), Rationale: "property",
				Source: c.src, Condition: c.cond, CooldownSeconds: &cd})
			tws = append(tws, armed{scope, def})
		}
	}
	moods := []string{"calm", "tense", "angry"}
	for range 90 {
		giValue := any(float64(rnd.IntN(11)) / 10)
		if rnd.IntN(25) == 0 {
			giValue = "n/a" // not a number: a source error for the numeric leaves
		}
		f.Set("integrity.gi", giValue)
		f.Set("vault.balance", float64(rnd.IntN(6)))
		f.Set("lane.sentiment", moods[rnd.IntN(len(moods))])
		f.Tick()
		f.Clock.Advance(time.Duration(1+rnd.IntN(40)) * time.Minute)
	}
	for _, tw := range tws {
		var live []time.Time
		for _, ev := range f.History(tw.scope, tw.def.ID) {
			live = append(live, ev.Timestamp)
		}
		bt, err := f.Service.Backtest(f.Ctx, "@alice:example.org", tw.def, 1000*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		def := f.Get(tw.scope, tw.def.ID)
		quarantined := def.Status == tripwire.Quarantined
		if !slices.EqualFunc(live, bt.Cooled.Trips, time.Time.Equal) || quarantined != !bt.Cooled.QuarantinedAt.IsZero() {
			t.Errorf("%s (%s, cooldown %ds):\nlive trips     %v (quarantined %v)\nbacktest trips %v (quarantined at %v)",
				tw.def.Label, tripwire.Condition.String(tw.def.Condition), tw.def.CooldownSeconds, live, quarantined, bt.Cooled.Trips, bt.Cooled.QuarantinedAt)
		}
		if bt.Cooled.Passes != 90 && bt.Cooled.QuarantinedAt.IsZero() {
			t.Errorf("%s: backtest replayed %d passes, want 90", tw.def.Label, bt.Cooled.Passes)
		}
	}
}

// TestNewSourceInTwoTransactions: two transactions that both add the
// first readings of a source the history does not know, at once, keep
// both readings under one source (on PostgreSQL the one that finds the
// source added by the other meanwhile is run again).
func TestNewSourceInTwoTransactions(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	src := core.SourceRef{Kind: "agent.mii", Param: "EVE"}
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	// On PostgreSQL both take their snapshot before either writes; SQLite
	// runs one writer at a time, so there they cannot overlap.
	var ready sync.WaitGroup
	if testEngine == store.Postgres {
		ready.Add(2)
	}
	reruns := metrics.Sum("jarvis_store_transaction_reruns_total")
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			errs[i] = s.InTx(ctx, func(ctx context.Context) error {
				if first && testEngine == store.Postgres {
					first = false
					if _, err := s.Points(ctx, src, t0.Add(-time.Hour), t0.Add(time.Hour)); err != nil {
						return err
					}
					ready.Done()
					ready.Wait()
				}
				return s.AddReadings(ctx, []history.Reading{{Source: src, At: t0.Add(time.Duration(i) * time.Second), Value: float64(i)}})
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("transaction %d: %v", i, err)
		}
	}
	points, err := s.Points(ctx, src, t0.Add(-time.Hour), t0.Add(time.Hour))
	if err != nil || len(points) != 2 {
		t.Errorf("Points = %+v, %v; want both readings", points, err)
	}
	var sources int
	if err := s.DB.QueryRow(ctx, "SELECT COUNT(*) FROM history_source").Scan(&sources); err != nil || sources != 1 {
		t.Errorf("%d sources (%v), want 1", sources, err)
	}
	if reran := metrics.Sum("jarvis_store_transaction_reruns_total") - reruns; testEngine == store.Postgres && reran < 1 {
		t.Errorf("%v transactions run again, want the one that met the other's source", reran)
	}
}
