package tripwire_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestTripwireSkipLog: each evaluation the evaluator skips for cooldown,
// a source error or the quarantine it ends in is logged with its reason
// and a null observation; the log counts them since a time, and a
// tripwire already tripped is not skipped in that sense.
func TestTripwireSkipLog(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := testconfig.Tripwires()
			cfg.Quarantine.SourceErrors = 3
			f := newTWFixture(t, engine, cfg)
			def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 3600))
			start := f.Clock.Now()
			f.Set("integrity.gi", 0.6)
			f.Tick() // fires
			for range 12 {
				f.Clock.Advance(time.Minute)
				f.Tick() // matches within the hour's cooldown
			}
			f.Clock.Advance(2 * time.Hour)
			f.Tick() // still tripped past the cooldown: not a skip
			for range 3 {
				f.Clock.Advance(time.Minute)
				f.Fail("integrity.gi", errors.New("snapshot unreachable"))
				f.Tick() // two source errors, then the quarantine
			}
			sum, err := f.Service.Skips(f.Ctx, twAlice, def.ID, start, 5)
			if err != nil {
				t.Fatal(err)
			}
			want := map[tripwire.SkipReason]int{tripwire.SkipCooldown: 12, tripwire.SkipSourceError: 2, tripwire.SkipQuarantine: 1}
			if len(sum.Counts) != len(want) || sum.Total != 15 || sum.Truncated {
				t.Errorf("skip log counts %v (total %d, truncated %v), want %v", sum.Counts, sum.Total, sum.Truncated, want)
			}
			for r, n := range want {
				if sum.Counts[r] != n {
					t.Errorf("%s skips = %d, want %d", r, sum.Counts[r], n)
				}
			}
			if len(sum.Latest) != 5 {
				t.Fatalf("latest skips = %+v, want the newest 5", sum.Latest)
			}
			last := sum.Latest[4]
			if last.Reason != tripwire.SkipQuarantine || last.ObservedValue != nil || last.Detail == "" || !last.Timestamp.Equal(f.Clock.Now()) {
				t.Errorf("newest skip = %+v, want the quarantine now, with its error and no observation", last)
			}
			if first := sum.Latest[0]; first.Reason != tripwire.SkipCooldown || first.Detail != "" {
				t.Errorf("oldest of the five = %+v, want the last cooldown skip, no detail", first)
			}

			later, err := f.Service.Skips(f.Ctx, twAlice, def.ID, f.Clock.Now().Add(-90*time.Second), 0)
			if err != nil || later.Total != 2 {
				t.Errorf("skips in the last 90 s: %+v, %v; want the last source error and the quarantine", later, err)
			}
			if _, err := f.Service.Skips(f.Ctx, twBob, def.ID, start, 0); err == nil {
				t.Error("bob read alice's skip log")
			}
		})
	}
}

// TestTripwireSkipLogIsBounded: a tripwire keeps its newest
// tripwires.skip_log.per_tripwire skips, and at most a tenth more between
// two trims; a log cut short says its counts are at least what they say.
func TestTripwireSkipLogIsBounded(t *testing.T) {
	cfg := testconfig.Tripwires()
	cfg.SkipLog.PerTripwire = 20
	f := newTWFixture(t, store.SQLite, cfg)
	def := f.Arm(twAlice, services.GIBelow("GI dips", 0.7, false, 30*24*3600))
	other := f.Arm(twBob, services.GIBelow("GI dips too", 0.7, false, 30*24*3600))
	start := f.Clock.Now()
	f.Set("integrity.gi", 0.6)
	for range 60 {
		f.Tick()
		f.Clock.Advance(time.Minute)
	}
	for _, tw := range []struct{ scope, id string }{{twAlice, def.ID}, {twBob, other.ID}} {
		var kept int
		if err := f.Store.DB.QueryRow(f.Ctx, `SELECT COUNT(*) FROM tripwire_skip WHERE tripwire_id = $1`, tw.id).Scan(&kept); err != nil {
			t.Fatal(err)
		}
		if kept < 20 || kept > 22 {
			t.Errorf("%s keeps %d skips, want 20 to 22 (tripwires.skip_log.per_tripwire and a tenth)", tw.id, kept)
		}
		sum, err := f.Service.Skips(f.Ctx, tw.scope, tw.id, start, 0)
		if err != nil || !sum.Truncated || sum.Total != kept || len(sum.Latest) != 20 {
			t.Errorf("skip log = total %d, %d latest, truncated %v, %v; want the %d kept, the newest 20, truncated",
				sum.Total, len(sum.Latest), sum.Truncated, err, kept)
		}
	}
}
