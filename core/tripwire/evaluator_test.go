package tripwire

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestEvaluate(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	gi := core.SourceRef{Kind: "integrity.gi"}
	lane := core.SourceRef{Kind: "lane.sentiment"}
	giLow := Condition{Op: OpLT, Threshold: 0.7}
	both := func(op Op) Condition {
		return Condition{Op: op, Conditions: []Condition{giLow, {Op: OpEQ, Threshold: "degraded", Source: &lane}}}
	}
	armed := State{Status: Armed, CooldownSeconds: 3600}
	tripped := State{Status: Tripped, CooldownSeconds: 3600, LastTrippedAt: now.Add(-2 * time.Hour)}
	for _, tt := range []struct {
		name     string
		state    State
		cond     Condition
		observed map[core.SourceRef]any   // values read this pass
		failed   map[core.SourceRef]error // sources that failed
		want     verdict
		wantSkip SkipReason
	}{
		{name: "armed and matching fires", state: armed, cond: giLow, observed: map[core.SourceRef]any{gi: 0.6}, want: verdictFire},
		{name: "armed and not matching is quiet", state: armed, cond: giLow, observed: map[core.SourceRef]any{gi: 0.8}, want: verdictQuiet},
		{name: "matching within cooldown is skipped", cond: giLow, observed: map[core.SourceRef]any{gi: 0.6},
			state: State{Status: Armed, CooldownSeconds: 3600, LastTrippedAt: now.Add(-30 * time.Minute)},
			want:  verdictSkip, wantSkip: SkipCooldown},
		{name: "cooldown over fires again", cond: giLow, observed: map[core.SourceRef]any{gi: 0.6},
			state: State{Status: Armed, CooldownSeconds: 3600, LastTrippedAt: now.Add(-time.Hour)},
			want:  verdictFire},
		{name: "tripped and still matching stays tripped", state: tripped, cond: giLow, observed: map[core.SourceRef]any{gi: 0.6},
			want: verdictSkip, wantSkip: SkipTripped},
		{name: "tripped and cleared resets", state: tripped, cond: giLow, observed: map[core.SourceRef]any{gi: 0.8}, want: verdictReset},
		{name: "tripped in cooldown and cleared resets", cond: giLow, observed: map[core.SourceRef]any{gi: 0.8},
			state: State{Status: Tripped, CooldownSeconds: 3600, LastTrippedAt: now.Add(-time.Minute)},
			want:  verdictReset},
		{name: "source error is no fire", state: armed, cond: giLow, failed: map[core.SourceRef]error{gi: errors.New("down")},
			want: verdictSkip, wantSkip: SkipSourceError},
		{name: "source error is no reset", state: tripped, cond: giLow, failed: map[core.SourceRef]error{gi: errors.New("down")},
			want: verdictSkip, wantSkip: SkipSourceError},
		{name: "wrong value type is a source error", state: armed, cond: giLow, observed: map[core.SourceRef]any{gi: "n/a"},
			want: verdictSkip, wantSkip: SkipSourceError},
		{name: "source not read this pass is pending", state: armed, cond: giLow, want: verdictSkip, wantSkip: SkipPending},
		{name: "changed: first observation never fires", state: armed, cond: Condition{Op: OpChanged},
			observed: map[core.SourceRef]any{gi: 0.6}, want: verdictQuiet},
		{name: "changed: a change fires", cond: Condition{Op: OpChanged}, observed: map[core.SourceRef]any{gi: 0.6},
			state: State{Status: Armed, LastObserved: "[0.5]"}, want: verdictFire},
		{name: "changed: no change resets", cond: Condition{Op: OpChanged}, observed: map[core.SourceRef]any{gi: 0.6},
			state: State{Status: Tripped, LastObserved: "[0.6]"}, want: verdictReset},
		{name: "all: every condition matches", state: armed, cond: both(OpAll),
			observed: map[core.SourceRef]any{gi: 0.6, lane: "degraded"}, want: verdictFire},
		{name: "all: one does not", state: armed, cond: both(OpAll),
			observed: map[core.SourceRef]any{gi: 0.6, lane: "healthy"}, want: verdictQuiet},
		{name: "any: one matches", state: armed, cond: both(OpAny),
			observed: map[core.SourceRef]any{gi: 0.9, lane: "degraded"}, want: verdictFire},
		{name: "any: none match", state: armed, cond: both(OpAny),
			observed: map[core.SourceRef]any{gi: 0.9, lane: "healthy"}, want: verdictQuiet},
		{name: "any: an error in one source skips", state: armed, cond: both(OpAny),
			observed: map[core.SourceRef]any{gi: 0.6}, failed: map[core.SourceRef]error{lane: errors.New("down")},
			want: verdictSkip, wantSkip: SkipSourceError},
	} {
		t.Run(tt.name, func(t *testing.T) {
			view := newEvalView()
			view.index["tw"] = 0
			view.entries = []evalEntry{{state: tt.state}}
			view.attach(Spec{ID: "tw", Source: gi, Condition: tt.cond})
			results := make(passResults, len(view.slots.refs))
			for ref, v := range tt.observed {
				slot := view.slots.index[ref]
				results[slot] = sourceResult{gen: view.slots.gens[slot], read: true, obs: core.Observation{Value: v}}
			}
			for ref, err := range tt.failed {
				slot := view.slots.index[ref]
				results[slot] = sourceResult{gen: view.slots.gens[slot], read: true, err: err}
			}
			ev := evaluate(&view.entries[0], results, now)
			if ev.verdict != tt.want || ev.skip != tt.wantSkip {
				t.Errorf("evaluate() = verdict %d skip %q (%v), want %d %q", ev.verdict, ev.skip, ev.err, tt.want, tt.wantSkip)
			}
		})
	}
}

func TestEvaluateKeepsChangedObservations(t *testing.T) {
	view := newEvalView()
	view.index["tw"] = 0
	view.entries = []evalEntry{{state: State{Status: Armed}}}
	view.attach(Spec{ID: "tw", Source: core.SourceRef{Kind: "agent.status", Param: "EVE"}, Condition: Condition{Op: OpChanged}})
	results := passResults{{gen: view.slots.gens[0], read: true, obs: core.Observation{Value: "online"}}}
	ev := evaluate(&view.entries[0], results, time.Now())
	if ev.observed != `["online"]` {
		t.Errorf("observed = %q, want the first observation recorded", ev.observed)
	}
}

func TestSourceSlotsReuseNeverConfuses(t *testing.T) {
	slots := newSourceSlots()
	gi, vault := core.SourceRef{Kind: "integrity.gi"}, core.SourceRef{Kind: "vault.balance"}
	a, genA := slots.acquire(gi)
	if b, _ := slots.acquire(gi); b != a {
		t.Errorf("the same source got slots %d and %d", a, b)
	}
	slots.release(a)
	if _, ok := slots.index[gi]; !ok {
		t.Fatal("a source still read by one tripwire lost its slot")
	}
	slots.release(a)
	c, genC := slots.acquire(vault)
	if c != a || genC == genA {
		t.Errorf("reused slot %d gen %d after slot %d gen %d; want the freed slot with a new generation", c, genC, a, genA)
	}
	stale := leaf{source: gi, slot: a, gen: genA}
	results := passResults{{gen: genC, read: true, obs: core.Observation{Value: 46.0}}}
	if _, ok := results.get(stale); ok {
		t.Error("a leaf of the slot's former source read the new source's result")
	}
}

// TestSourceErrorHidesTheParamOfAnUnavailableSource: the owner reads an
// unavailable source by its kind and reason alone (its param may be a
// URL); other source errors keep the param, which says which one failed.
func TestSourceErrorHidesTheParamOfAnUnavailableSource(t *testing.T) {
	ref := core.SourceRef{Kind: "url-fetch", Param: "https://status.example.org/api.json data.gi"}
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&core.SourceUnavailable{Reason: "timed out", Detail: errors.New(`Get "https://status.example.org/api.json": context deadline exceeded`)},
			"url-fetch: source unavailable: timed out"},
		{fmt.Errorf("memo: %w", &core.SourceUnavailable{Reason: "bad response", Detail: errors.New("status.example.org answered 500")}),
			"url-fetch: source unavailable: bad response"},
		{errors.New("nothing at data.gi"), "url-fetch[https://status.example.org/api.json data.gi]: nothing at data.gi"},
	} {
		if got := sourceError(ref, tt.err).Error(); got != tt.want {
			t.Errorf("sourceError(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
