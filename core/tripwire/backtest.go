package tripwire

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// BacktestSpan is how far back a proposal and an armed tripwire are
// replayed.
const BacktestSpan = 7 * 24 * time.Hour

// Replay is what a tripwire would have done over a stretch of its sources'
// history.
type Replay struct {
	// From and To are the first and last times replayed; Passes how many
	// evaluator passes the history held.
	From, To time.Time
	Passes   int
	// Trips are the times it would have tripped.
	Trips []time.Time
	// QuarantinedAt is when it would have been quarantined (flapping, or
	// values its condition cannot compare), after which it would have
	// stayed quiet; zero when never.
	QuarantinedAt time.Time
}

// Backtest is what a tripwire would have done over BacktestSpan: without
// a cooldown, and with its own.
type Backtest struct {
	Span     time.Duration
	Cooldown time.Duration
	// Plain ignores the cooldown; Cooled applies it: its trips are the
	// messages a person with push on would have had.
	Plain, Cooled Replay
}

// Backtest replays the history of the sources a definition of scope
// watches over the last span through the evaluator, reading at most the
// configured MaxReadings of each. More than the configured number running
// at once, in all or for scope, is ErrRateLimited.
func (s *Service) Backtest(ctx context.Context, scope string, def Definition, span time.Duration) (Backtest, error) {
	cc, err := compileCondition(def.Source, def.Condition)
	if err != nil {
		return Backtest{}, fmt.Errorf("backtest: %w", err)
	}
	release, err := s.backtests.acquire(scope)
	if err != nil {
		return Backtest{}, err
	}
	defer release()
	to := s.deps.Clock.Now()
	series := map[core.SourceRef][]history.Reading{}
	for _, l := range cc.leaves {
		if _, ok := series[l.source]; ok {
			continue
		}
		var points []history.Point
		if s.deps.History != nil {
			if points, err = s.deps.History.Latest(ctx, l.source, to.Add(-span), to.Add(time.Millisecond), s.cfg.Backtest.MaxReadings); err != nil {
				return Backtest{}, fmt.Errorf("backtest: %w", err)
			}
		}
		series[l.source] = history.Values(points)
	}
	cooldown := time.Duration(def.CooldownSeconds) * time.Second
	return Backtest{
		Span:     span,
		Cooldown: cooldown,
		Plain:    replay(cc, 0, s.cfg.Quarantine, series),
		Cooled:   replay(cc, cooldown, s.cfg.Quarantine, series),
	}, nil
}

// Chart asks for a chart of one of scope's tripwires: its first source
// over the last span, its thresholds or watched states, its last trip
// marked when it falls within the span.
func (s *Service) Chart(ctx context.Context, scope, id string, span time.Duration) (string, error) {
	def, err := s.Get(ctx, scope, id)
	if err != nil {
		return "", err
	}
	cc, err := compileCondition(def.Source, def.Condition)
	if err != nil {
		return "", fmt.Errorf("chart of %q: %w", id, err)
	}
	now := msTime(s.deps.Clock.Now())
	var tripAt time.Time
	if t := def.LastTrippedAt; t != nil && !t.Before(now.Add(-span)) {
		tripAt = *t
	}
	return s.chart(def.Label, cc, now.Add(-span), now, tripAt), nil
}

// ReplaySeries replays series of readings, by source, through a tripwire
// newly armed with the given condition and cooldown.
func ReplaySeries(src core.SourceRef, c Condition, cooldown time.Duration, q QuarantineConfig, series map[core.SourceRef][]history.Reading) (Replay, error) {
	cc, err := compileCondition(src, c)
	if err != nil {
		return Replay{}, err
	}
	return replay(cc, cooldown, q, series), nil
}

// replay runs one evaluator pass per time at which a source was read,
// each source showing its latest reading, with the same evaluate the live
// passes use and the same state changes they write: a fire trips, a miss
// resets, flapping and repeated unreadable values quarantine.
func replay(cc *compiledCondition, cooldown time.Duration, q QuarantineConfig, series map[core.SourceRef][]history.Reading) Replay {
	var refs []core.SourceRef
	var times []time.Time
	for i := range cc.leaves {
		slot := slices.Index(refs, cc.leaves[i].source)
		if slot < 0 {
			slot = len(refs)
			refs = append(refs, cc.leaves[i].source)
			for _, r := range series[refs[slot]] {
				times = append(times, r.At)
			}
		}
		cc.leaves[i].slot, cc.leaves[i].gen = slot, 0
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, time.Time.Equal)

	var r Replay
	e := evalEntry{cc: cc, state: State{Status: Armed, CooldownSeconds: int(cooldown / time.Second)}}
	results := make(passResults, len(refs))
	next := make([]int, len(refs))
	for _, now := range times {
		ready := true
		for slot, ref := range refs {
			readings := series[ref]
			for next[slot] < len(readings) && !readings[next[slot]].At.After(now) {
				results[slot] = sourceResult{read: true, obs: core.Observation{Value: readings[next[slot]].Value}}
				next[slot]++
			}
			ready = ready && results[slot].read
		}
		if !ready {
			continue
		}
		if r.Passes == 0 {
			r.From = now
		}
		r.To = now
		r.Passes++
		st := &e.state
		ev := evaluate(&e, results, now)
		switch {
		case ev.verdict == verdictFire:
			r.Trips = append(r.Trips, now)
			st.Status, st.LastTrippedAt, st.ErrorStreak = Tripped, now, 0
		case ev.verdict == verdictReset:
			st.Status, st.ErrorStreak = Armed, 0
			cycles := 0
			for _, at := range r.Trips {
				if at.After(now.Add(-q.FlapWindow)) {
					cycles++
				}
			}
			if cycles > q.FlapCycles {
				r.QuarantinedAt = now
			}
		case ev.skip == SkipSourceError:
			// The last observation stays, as a live pass keeps it.
			if st.ErrorStreak++; st.ErrorStreak >= q.SourceErrors {
				r.QuarantinedAt = now
			}
		default:
			st.ErrorStreak = 0
		}
		if cc.watchesChange && ev.skip != SkipSourceError {
			st.LastObserved = ev.observed
		}
		if !r.QuarantinedAt.IsZero() {
			break
		}
	}
	return r
}

// backtestSlots counts the backtests running, in all and by scope.
type backtestSlots struct {
	cfg     BacktestConfig
	mu      sync.Mutex
	running int
	byScope map[string]int
}

// acquire takes a slot for a backtest of scope, and returns what gives it
// back; none free is ErrRateLimited, naming the key that is full.
func (b *backtestSlots) acquire(scope string) (func(), error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.byScope[scope] >= b.cfg.ConcurrentPerPerson:
		return nil, core.Refuse(core.ErrRateLimited, "your backtests already running reach tripwires.backtest.concurrent_per_person (%d); try again when one is done", b.cfg.ConcurrentPerPerson)
	case b.running >= b.cfg.Concurrent:
		return nil, core.Refuse(core.ErrRateLimited, "the backtests already running reach tripwires.backtest.concurrent (%d); try again in a moment", b.cfg.Concurrent)
	}
	b.running++
	b.byScope[scope]++
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.running--
		if b.byScope[scope]--; b.byScope[scope] == 0 {
			delete(b.byScope, scope)
		}
	}, nil
}
