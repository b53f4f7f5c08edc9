package tripwire

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
)

// SkipReason says why an evaluated tripwire neither fired nor reset.
type SkipReason string

// Skip reasons.
const (
	// SkipCooldown: the condition matched, but the tripwire fired within
	// its cooldown. It neither fires again nor resets.
	SkipCooldown SkipReason = "cooldown"
	// SkipTripped: the condition still matches a tripwire that fired
	// earlier and has not reset since.
	SkipTripped SkipReason = "already-tripped"
	// SkipSourceError: a source could not be read, or gave a value the
	// condition cannot compare. Source errors are never fires.
	SkipSourceError SkipReason = "source-error"
	// SkipPending: the tripwire was armed after this pass read its sources.
	SkipPending SkipReason = "pending"
	// SkipInvalid: the stored condition could not be read.
	SkipInvalid SkipReason = "invalid"
)

// resolveWorkers is how many resolver calls one pass makes at a time.
const resolveWorkers = 8

// TickReport says what one evaluator pass did.
type TickReport struct {
	// Sources counts the distinct (kind, param) pairs read, each once;
	// SourceErrors those that failed.
	Sources      int
	SourceErrors int
	// Evaluated counts the tripwires tested; of them, Fired fired, Reset
	// reset, Quarantined were stopped and Skipped were skipped, by reason.
	Evaluated   int
	Fired       int
	Reset       int
	Quarantined int
	Skipped     map[SkipReason]int
}

// State is what the evaluator keeps in memory about a tripwire,
// loaded once and again whenever the tripwire is written.
type State struct {
	ID              string
	Status          Status
	CooldownSeconds int
	LastTrippedAt   time.Time
	LastObserved    string
	ErrorStreak     int
}

// Spec is what a tripwire watches and tests.
type Spec struct {
	ID        string
	Scope     string
	Source    core.SourceRef
	Condition Condition
}

// ObservedUpdate records a pass's observation of a tripwire that neither
// fired nor reset.
type ObservedUpdate struct {
	ID           string
	LastObserved string
	ErrorStreak  int
	LastError    string
}

// Trip is one firing to record: always in the tripwire's history, in the
// scope's journal and push queue as its action says.
type Trip struct {
	Scope   string
	Event   TripEvent
	Journal bool
	Push    bool
}

// TickWrites is everything an evaluator pass writes, in one transaction.
type TickWrites struct {
	Observed []ObservedUpdate
	// Records are tripwires that fired, reset or were quarantined; only
	// their state is written, never their definition.
	Records []Record
	Trips   []Trip
	// Readings are the values the pass read, for the sources' history.
	Readings []history.Reading
	// Skips are the evaluations the pass skipped, for the skip log, and
	// TrimSkips the tripwires whose log is to be cut back to
	// tripwires.skip_log.per_tripwire.
	Skips     []Skip
	TrimSkips []string
	// KeepSkips is tripwires.skip_log.per_tripwire.
	KeepSkips int
}

type verdict int

const (
	verdictQuiet verdict = iota
	verdictFire
	verdictReset
	verdictSkip
)

// sourceSlots interns the sources of the active tripwires: each gets a slot,
// so a pass keeps its observations in a slice and evaluating a tripwire
// hashes and compares no strings. A slot given to another source gets a
// new generation, so a stale leaf never reads another source's result.
type sourceSlots struct {
	index map[core.SourceRef]int
	refs  []core.SourceRef
	gens  []uint64
	users []int // tripwires reading each slot; 0 marks a free slot
	free  []int
}

func newSourceSlots() *sourceSlots { return &sourceSlots{index: map[core.SourceRef]int{}} }

// acquire returns the slot of ref and its generation, for one more reader.
func (t *sourceSlots) acquire(ref core.SourceRef) (int, uint64) {
	slot, ok := t.index[ref]
	switch {
	case ok:
	case len(t.free) > 0:
		slot, t.free = t.free[len(t.free)-1], t.free[:len(t.free)-1]
		t.refs[slot] = ref
		t.gens[slot]++
	default:
		slot = len(t.refs)
		t.refs = append(t.refs, ref)
		t.gens = append(t.gens, 0)
		t.users = append(t.users, 0)
	}
	t.index[ref] = slot
	t.users[slot]++
	return slot, t.gens[slot]
}

// release gives back a reader's slot.
func (t *sourceSlots) release(slot int) {
	if t.users[slot]--; t.users[slot] == 0 {
		delete(t.index, t.refs[slot])
		t.free = append(t.free, slot)
	}
}

// sourceResult is what a pass read from one source.
type sourceResult struct {
	gen  uint64
	read bool
	// cached marks a network source's reading from the last tick, which a
	// pass over Jarvis's own sources reuses and does not keep again.
	cached bool
	obs    core.Observation
	err    error
}

// passResults are a pass's observations by source slot.
type passResults []sourceResult

// get returns a leaf's observation, or false when its source was not read
// in this pass (its tripwire was armed meanwhile).
func (r passResults) get(l leaf) (sourceResult, bool) {
	if l.slot < len(r) && r[l.slot].read && r[l.slot].gen == l.gen {
		return r[l.slot], true
	}
	return sourceResult{}, false
}

// evalView is the evaluator's in-memory view of the active tripwires, kept
// up to date from the store by revision. Entries sit in one slice so that
// a pass sweeps them in order.
type evalView struct {
	entries []evalEntry
	index   map[string]int // tripwire id → position in entries
	slots   *sourceSlots
	rev     int64
	// fetched are the network sources the last tick read, by slot.
	fetched passResults
	// pass counts the evaluator's passes, for evalEntry.evaluatedIn.
	pass uint64
}

func newEvalView() *evalView {
	return &evalView{index: map[string]int{}, slots: newSourceSlots()}
}

// remove drops a tripwire, moving the last entry into its place.
func (v *evalView) remove(id string) {
	i, ok := v.index[id]
	if !ok {
		return
	}
	if cc := v.entries[i].cc; cc != nil {
		for _, l := range cc.leaves {
			v.slots.release(l.slot)
		}
	}
	last := len(v.entries) - 1
	if i != last {
		v.entries[i] = v.entries[last]
		v.index[v.entries[i].state.ID] = i
	}
	v.entries[last] = evalEntry{}
	v.entries = v.entries[:last]
	delete(v.index, id)
}

// attach compiles a new tripwire's condition into the view.
func (v *evalView) attach(spec Spec) {
	i, ok := v.index[spec.ID]
	if !ok {
		return
	}
	cc, err := compileCondition(spec.Source, spec.Condition)
	if err != nil {
		return // the entry stays without a condition: skipped as invalid
	}
	for j := range cc.leaves {
		cc.leaves[j].slot, cc.leaves[j].gen = v.slots.acquire(cc.leaves[j].source)
	}
	v.entries[i].cc, v.entries[i].scope = cc, spec.Scope
}

// evalEntry is the evaluator's view of one active tripwire.
type evalEntry struct {
	state State
	scope string
	cc    *compiledCondition // nil when the stored condition cannot be read
	// last is state.LastObserved decoded, and lastRaw what it was decoded
	// from.
	last    []any
	lastRaw string
	// skipsUntilTrim counts down the skips logged until the tripwire's
	// skip log is trimmed again; below zero at the next skip.
	skipsUntilTrim int
	// ev is what the pass numbered evaluatedIn (0 for none) made of the
	// tripwire before its transaction, which reads it instead of
	// evaluating again; refresh clears evaluatedIn when the state changes.
	ev          evaluation
	evaluatedIn uint64
}

// reads reports whether the tripwire reads a source of one of kinds; every
// tripwire does when kinds is nil.
func (e *evalEntry) reads(kinds []string) bool {
	if kinds == nil || e.cc == nil {
		return kinds == nil
	}
	for _, l := range e.cc.leaves {
		if slices.Contains(kinds, l.source.Kind) {
			return true
		}
	}
	return false
}

// lastValues returns the last observation of each leaf, for changed.
func (e *evalEntry) lastValues() []any {
	if e.lastRaw != e.state.LastObserved {
		e.last, e.lastRaw = nil, e.state.LastObserved
		// An unreadable observation counts as none: it only records.
		_ = json.Unmarshal([]byte(e.lastRaw), &e.last)
	}
	return e.last
}

// evaluation is the outcome of testing one tripwire.
type evaluation struct {
	verdict verdict
	skip    SkipReason
	err     error
	// observed is the encoded observation to keep for changed ("" when the
	// condition has no changed leaf).
	observed string
}

// sourceError names the source whose read failed. An unavailable source is
// named by its kind alone: its param may be a URL, and the text goes to the
// tripwire's owner (last_error, the quarantine notice), which learns only
// the reason class.
func sourceError(ref core.SourceRef, err error) error {
	if unavailable := (*core.SourceUnavailable)(nil); errors.As(err, &unavailable) {
		return fmt.Errorf("%s: %w", ref.Kind, unavailable)
	}
	return fmt.Errorf("%s: %w", ref, err)
}

// evaluate applies the rules of one pass to one tripwire: a match fires an
// armed tripwire out of cooldown; a miss resets a tripped one; a source
// error skips it; changed compares with the last observation, and the
// first observation never fires.
func evaluate(e *evalEntry, results passResults, now time.Time) evaluation {
	st, cc := e.state, e.cc
	var last []any
	if cc.watchesChange {
		last = e.lastValues()
	}
	var ev evaluation
	matches, same := 0, len(last) == len(cc.leaves)
	for i, l := range cc.leaves {
		r, ok := results.get(l)
		if !ok {
			return evaluation{verdict: verdictSkip, skip: SkipPending}
		}
		if r.err != nil {
			return evaluation{verdict: verdictSkip, skip: SkipSourceError, err: sourceError(l.source, r.err)}
		}
		var prev any
		if i < len(last) {
			prev = last[i]
		}
		m, err := l.match(r.obs.Value, prev)
		if err != nil {
			return evaluation{verdict: verdictSkip, skip: SkipSourceError, err: err}
		}
		if m {
			matches++
		}
		same = same && sameValue(r.obs.Value, prev)
	}
	switch {
	case !cc.watchesChange:
	case same:
		ev.observed = st.LastObserved
	default:
		ev.observed = encodeObserved(observations(cc, results))
	}
	matched := matches == len(cc.leaves)
	if cc.combine == OpAny {
		matched = matches > 0
	}
	cooling := !st.LastTrippedAt.IsZero() && now.Sub(st.LastTrippedAt) < time.Duration(st.CooldownSeconds)*time.Second
	switch {
	case matched && cooling:
		ev.verdict, ev.skip = verdictSkip, SkipCooldown
	case matched && st.Status == Armed:
		ev.verdict = verdictFire
	case matched:
		ev.verdict, ev.skip = verdictSkip, SkipTripped
	case st.Status == Tripped:
		ev.verdict = verdictReset
	}
	return ev
}

// observations lists what each leaf's source showed in this pass.
func observations(cc *compiledCondition, results passResults) []core.Observation {
	obs := make([]core.Observation, len(cc.leaves))
	for i, l := range cc.leaves {
		r, _ := results.get(l)
		obs[i] = r.obs
	}
	return obs
}

func encodeObserved(obs []core.Observation) string {
	values := make([]any, len(obs))
	for i, o := range obs {
		values[i] = o.Value
	}
	b, _ := json.Marshal(values) // floats, strings and bools always encode
	return string(b)
}

// Tick runs one evaluator pass over every armed and tripped tripwire.
func (s *Service) Tick(ctx context.Context) (TickReport, error) {
	return s.pass(ctx, nil)
}

// Reevaluate runs a pass over the tripwires that read one of the given
// source kinds, so that a change in Jarvis's own state (an agent going
// offline, a breaker opening) trips them at once rather than at the next
// tick.
func (s *Service) Reevaluate(ctx context.Context, kinds ...string) (TickReport, error) {
	if len(kinds) == 0 {
		return TickReport{Skipped: map[SkipReason]int{}}, nil
	}
	return s.pass(ctx, kinds)
}

// Run ticks every configured interval until ctx ends, handing each pass's
// report (or error) to report.
func (s *Service) Run(ctx context.Context, report func(TickReport, error)) {
	t := time.NewTicker(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r, err := s.Tick(ctx)
			if report != nil {
				report(r, err)
			}
		}
	}
}

// candidate is a tripwire whose state changes in this pass.
type candidate struct {
	ev         evaluation
	cc         *compiledCondition
	obs        []core.Observation
	quarantine string // why it is quarantined for source errors
}

// yieldEvery is how many tripwires a pass evaluates between two looks
// at whether a person waits (a few milliseconds' work).
const yieldEvery = 4096

// pass brings the evaluator's view of the tripwires up to date, reads each
// distinct source once outside any transaction, then in one transaction
// evaluates the tripwires and writes the outcome together with the notices
// it causes. A tick reads the network sources first, without the
// evaluator's lock, so that a pass over Jarvis's own sources meanwhile
// waits for none of them; such a pass reuses the last tick's readings of
// the network sources its tripwires also read.
func (s *Service) pass(ctx context.Context, kinds []string) (TickReport, error) {
	ctx = core.WithMemo(ctx)
	var fetched passResults
	if kinds == nil {
		var err error
		if fetched, err = s.fetchNetwork(ctx); err != nil {
			return TickReport{}, fmt.Errorf("load tripwires: %w", err)
		}
	}
	s.evalMu.Lock()
	defer s.evalMu.Unlock()
	if err := s.refresh(ctx); err != nil {
		return TickReport{}, fmt.Errorf("load tripwires: %w", err)
	}
	if kinds == nil {
		s.view.fetched = fetched
	}
	polite := s.deps.Chat.Deferring(s.deps.ChatPause)
	if err := polite.Yield(ctx); err != nil {
		return TickReport{}, err
	}
	results := s.resolveSources(ctx, s.slotsToRead(kinds), kinds == nil)
	now := msTime(s.deps.Clock.Now())
	s.view.pass++
	passNo := s.view.pass
	// Evaluating needs no database: it is done before the transaction,
	// which (on SQLite, the one writer) a person's command would otherwise
	// wait for. The transaction evaluates again only the tripwires written
	// meanwhile.
	for i := range s.view.entries {
		if i%yieldEvery == 0 {
			if err := polite.Yield(ctx); err != nil {
				return TickReport{}, err
			}
		}
		if e := &s.view.entries[i]; e.cc != nil && e.reads(kinds) {
			e.ev, e.evaluatedIn = evaluate(e, results, now), passNo
		}
	}
	if err := polite.Yield(ctx); err != nil {
		return TickReport{}, err
	}
	var report TickReport
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		// Take in what was written while the sources were read.
		if err := s.refresh(ctx); err != nil {
			return err
		}
		report = TickReport{Skipped: map[SkipReason]int{}}
		for _, r := range results {
			if r.read {
				report.Sources++
			}
			if r.err != nil {
				report.SourceErrors++
			}
		}
		w := TickWrites{Readings: s.readings(results, now), KeepSkips: s.cfg.SkipLog.PerTripwire}
		candidates := map[string]candidate{}
		var ids []string
		for i := range s.view.entries {
			e := &s.view.entries[i]
			id := e.state.ID
			// One evaluated before the transaction reads kinds and is valid.
			evaluated := e.evaluatedIn == passNo
			if !evaluated && !e.reads(kinds) {
				continue
			}
			if e.cc == nil {
				report.Skipped[SkipInvalid]++
				continue
			}
			st := e.state
			report.Evaluated++
			ev := e.ev
			if !evaluated {
				ev = evaluate(e, results, now)
			}
			switch {
			case ev.verdict == verdictFire || ev.verdict == verdictReset:
				candidates[id] = candidate{ev: ev, cc: e.cc, obs: observations(e.cc, results)}
				ids = append(ids, id)
				continue
			case ev.skip == SkipSourceError && st.ErrorStreak+1 >= s.cfg.Quarantine.SourceErrors:
				reason := fmt.Sprintf("its sources failed %d times in a row (last: %v)", st.ErrorStreak+1, ev.err)
				candidates[id] = candidate{ev: ev, cc: e.cc, quarantine: reason}
				ids = append(ids, id)
				s.addSkip(&w, e, SkipQuarantine, ev, now)
				continue
			case ev.skip == SkipSourceError:
				w.Observed = append(w.Observed, ObservedUpdate{ID: id, LastObserved: st.LastObserved, ErrorStreak: st.ErrorStreak + 1, LastError: ev.err.Error()})
			case ev.skip == SkipPending:
			case st.ErrorStreak > 0 || (e.cc.watchesChange && ev.observed != st.LastObserved):
				w.Observed = append(w.Observed, ObservedUpdate{ID: id, LastObserved: ev.observed})
			}
			if ev.verdict == verdictSkip {
				report.Skipped[ev.skip]++
				if reason, ok := logSkip(ev); ok {
					s.addSkip(&w, e, reason, ev, now)
				}
			}
		}
		// Tripwire ids start with their creation time: trips and notices
		// of one pass go out oldest tripwire first.
		slices.Sort(ids)
		notices, err := s.transition(ctx, ids, candidates, now, &w, &report)
		if err != nil {
			return err
		}
		if err := s.deps.Store.ApplyTick(ctx, w); err != nil {
			return err
		}
		return s.send(ctx, notices)
	})
	if err != nil {
		return TickReport{}, fmt.Errorf("evaluate tripwires: %w", err)
	}
	return report, nil
}

// refresh brings the evaluator's view up to date with the tripwires written
// since it last looked, compiling the conditions of new ones. Conditions
// never change, so a compiled one serves until its tripwire stops being
// active.
func (s *Service) refresh(ctx context.Context) error {
	v := s.view
	states, rev, err := s.deps.Store.ChangedTripwires(ctx, v.rev)
	if err != nil {
		return err
	}
	var fresh []string
	for _, st := range states {
		i, known := v.index[st.ID]
		switch {
		case known && !st.Status.Active():
			v.remove(st.ID)
		case known:
			v.entries[i].state, v.entries[i].evaluatedIn = st, 0
		case st.Status.Active():
			v.index[st.ID] = len(v.entries)
			v.entries = append(v.entries, evalEntry{state: st})
			fresh = append(fresh, st.ID)
		}
	}
	if len(fresh) > 0 {
		specs, err := s.deps.Store.TripwireSpecs(ctx, fresh)
		if err != nil {
			for _, id := range fresh {
				v.remove(id)
			}
			return err
		}
		for _, spec := range specs {
			v.attach(spec)
		}
	}
	v.rev = rev
	return nil
}

// slotsToRead lists the source slots the tripwires reading one of kinds
// (all when nil) need.
func (s *Service) slotsToRead(kinds []string) []int {
	v := s.view
	var slots []int
	if kinds == nil {
		for slot, n := range v.slots.users {
			if n > 0 {
				slots = append(slots, slot)
			}
		}
		return slots
	}
	need := make([]bool, len(v.slots.refs))
	for i := range v.entries {
		if e := &v.entries[i]; e.cc != nil && e.reads(kinds) {
			for _, l := range e.cc.leaves {
				need[l.slot] = true
			}
		}
	}
	for slot, ok := range need {
		if ok {
			slots = append(slots, slot)
		}
	}
	return slots
}

// resolveSources reads the sources of the given slots once each: the
// sources of a kind that reads many at once together, the others a few
// at a time. A resolver that panics counts as a source error. A network
// source is not read here: it takes what the last tick fetched (fresh
// when this pass is a tick, cached when not), or stays unread.
func (s *Service) resolveSources(ctx context.Context, slots []int, tick bool) passResults {
	t := s.view.slots
	results := make(passResults, len(t.refs))
	var local []int
	var refs []core.SourceRef
	for _, slot := range slots {
		if !s.network(t.refs[slot]) {
			local, refs = append(local, slot), append(refs, t.refs[slot])
			continue
		}
		if f := s.view.fetched; slot < len(f) && f[slot].read && f[slot].gen == t.gens[slot] {
			results[slot] = f[slot]
			results[slot].cached = !tick
		}
	}
	for i, res := range s.deps.Sources.ResolveAll(ctx, refs, resolveWorkers) {
		slot := local[i]
		results[slot] = sourceResult{gen: t.gens[slot], read: true, obs: res.Observation, err: res.Err}
	}
	return results
}

// network reports whether ref is of a kind read over the network.
func (s *Service) network(ref core.SourceRef) bool {
	k, ok := s.deps.Sources.Lookup(ref.Kind)
	return ok && k.Network
}

// errFetchBudget is the reading of a network source its owner's fetch
// budget had no time left for.
var errFetchBudget = &core.SourceUnavailable{Reason: "fetch budget spent",
	Detail: errors.New("not read within tripwires.fetch_budget.time")}

// fetchNetwork reads the network sources of the active tripwires: each
// person's at most FetchBudget.Workers at a time and within
// FetchBudget.Time, people side by side. A source several people read is
// in each one's lane and taken from the first to read it, so that no one
// can hold back a source others read by queueing it behind their own slow
// ones. It holds the evaluator's lock only to see which sources to read.
func (s *Service) fetchNetwork(ctx context.Context) (passResults, error) {
	type lane struct {
		slots []int
		refs  []core.SourceRef
		has   map[int]bool
	}
	s.evalMu.Lock()
	if err := s.refresh(ctx); err != nil {
		s.evalMu.Unlock()
		return nil, err
	}
	t := s.view.slots
	results := make(passResults, len(t.refs))
	// Which slots are network sources: with none (the usual workspace),
	// the tripwires need no sweep.
	network := make([]bool, len(t.refs))
	entries := s.view.entries[:0]
	for slot, n := range t.users {
		if network[slot] = n > 0 && s.network(t.refs[slot]); network[slot] {
			entries = s.view.entries
		}
	}
	lanes := map[string]*lane{}
	for i := range entries {
		e := &entries[i]
		if e.cc == nil {
			continue
		}
		for _, l := range e.cc.leaves {
			ln := lanes[e.scope]
			if !network[l.slot] || (ln != nil && ln.has[l.slot]) {
				continue
			}
			if ln == nil {
				ln = &lane{has: map[int]bool{}}
				lanes[e.scope] = ln
			}
			results[l.slot] = sourceResult{gen: l.gen, read: true, err: errFetchBudget}
			ln.slots, ln.refs, ln.has[l.slot] = append(ln.slots, l.slot), append(ln.refs, l.source), true
		}
	}
	s.evalMu.Unlock()

	budget := s.cfg.FetchBudget
	var mu sync.Mutex // guards results, done and each lane's spent
	done := make([]bool, len(results))
	var wg sync.WaitGroup
	for _, ln := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, budget.Time)
			defer cancel()
			spent := false
			sem := make(chan struct{}, budget.Workers)
			var fetches sync.WaitGroup
			for i, slot := range ln.slots {
				fetches.Add(1)
				go func() {
					defer fetches.Done()
					select {
					case sem <- struct{}{}:
					case <-ctx.Done():
						return
					}
					defer func() { <-sem }()
					mu.Lock()
					taken := done[slot]
					mu.Unlock()
					if taken {
						return
					}
					res := s.deps.Sources.ResolveAll(ctx, ln.refs[i:i+1], 1)[0]
					mu.Lock()
					defer mu.Unlock()
					// A failed read stands until another lane reads the
					// source (its owner's budget may be what failed it).
					if !spent && !done[slot] {
						results[slot].obs, results[slot].err, done[slot] = res.Observation, res.Err, res.Err == nil
					}
				}()
			}
			finished := make(chan struct{})
			go func() { fetches.Wait(); close(finished) }()
			select {
			case <-finished:
			case <-ctx.Done():
				// What is still being read stays spent; cancel stops it.
				mu.Lock()
				spent = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return results, nil
}

// readings are the values a pass read that a history can keep.
func (s *Service) readings(results passResults, now time.Time) []history.Reading {
	var out []history.Reading
	for slot, r := range results {
		if !r.read || r.cached || r.err != nil || r.gen != s.view.slots.gens[slot] {
			continue
		}
		if v, ok := history.Keepable(r.obs.Value); ok {
			out = append(out, history.Reading{Source: s.view.slots.refs[slot], At: now, Value: v})
		}
	}
	return out
}

// transition fires, resets and quarantines the candidates, adding their
// state, trips and notices to the pass's writes.
func (s *Service) transition(ctx context.Context, ids []string, candidates map[string]candidate, now time.Time, w *TickWrites, report *TickReport) ([]core.Notice, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	recs, err := s.deps.Store.TripwireRecords(ctx, ids)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(recs, func(a, b Record) int { return strings.Compare(a.ID, b.ID) })
	var resets []string
	for _, rec := range recs {
		if candidates[rec.ID].ev.verdict == verdictReset {
			resets = append(resets, rec.ID)
		}
	}
	var recent map[string][]time.Time
	if len(resets) > 0 {
		if recent, err = s.deps.Store.RecentTrips(ctx, resets, now.Add(-s.cfg.Quarantine.FlapWindow)); err != nil {
			return nil, err
		}
	}
	var silencing Silencing
	if s.deps.Silences != nil {
		if silencing, err = s.deps.Silences.Silencing(ctx); err != nil {
			return nil, err
		}
	}
	muted, err := s.muted(ctx, recs, candidates, now, silencing)
	if err != nil {
		return nil, err
	}
	events, held, err := s.keepQuiet(ctx, recs, candidates, muted, now)
	if err != nil {
		return nil, err
	}
	var notices []core.Notice
	for _, rec := range recs {
		c := candidates[rec.ID]
		switch {
		case c.quarantine != "":
			rec.ErrorStreak, rec.LastError = rec.ErrorStreak+1, c.ev.err.Error()
			notices = s.quarantine(&rec, c.quarantine, notices)
			report.Skipped[SkipSourceError]++
			report.Quarantined++
		case c.ev.verdict == verdictFire:
			notices = s.fire(&rec, c, events[rec.ID], muted[rec.ID], held[rec.ID], now, w, notices)
			report.Fired++
		case c.ev.verdict == verdictReset:
			notices = s.reset(&rec, c, now, notices)
			if silencing != nil {
				if err := silencing.Cleared(ctx, rec.Scope, c.cc.sources()); err != nil {
					return nil, err
				}
			}
			report.Reset++
			cycles := 0
			for _, at := range recent[rec.ID] {
				if at.After(rec.FlapSince) {
					cycles++
				}
			}
			if cycles > s.cfg.Quarantine.FlapCycles {
				reason := fmt.Sprintf("it tripped and cleared %d times within %s", cycles, core.ShortDuration(s.cfg.Quarantine.FlapWindow))
				notices = s.quarantine(&rec, reason, notices)
				report.Quarantined++
			}
		}
		w.Records = append(w.Records, rec)
	}
	return notices, nil
}

// muted reports, of each candidate that fires with a push, whether its
// owner snoozed the tripwire or a silence holds it: such a trip is
// journaled instead of pushed.
func (s *Service) muted(ctx context.Context, recs []Record, candidates map[string]candidate, now time.Time, silencing Silencing) (map[string]bool, error) {
	muted := map[string]bool{}
	for _, rec := range recs {
		c := candidates[rec.ID]
		if c.quarantine != "" || c.ev.verdict != verdictFire || !rec.Action.Push {
			continue
		}
		held := now.Before(rec.SnoozedUntil)
		if !held && silencing != nil {
			var err error
			if held, err = silencing.HoldTrip(ctx, rec.Scope, c.cc.sources(), rec.Label); err != nil {
				return nil, err
			}
		}
		muted[rec.ID] = held
	}
	return muted, nil
}

// keepQuiet builds the trip event of each candidate that fires and hands
// those of citizens, urgent and muted pushes aside, to their quiet hours
// and daily digests at once; it returns the events and which pushes were
// held.
func (s *Service) keepQuiet(ctx context.Context, recs []Record, candidates map[string]candidate, muted map[string]bool, now time.Time) (map[string]TripEvent, map[string]bool, error) {
	events := map[string]TripEvent{}
	var trips []Trip
	for i := range recs {
		rec, c := &recs[i], candidates[recs[i].ID]
		if c.quarantine != "" || c.ev.verdict != verdictFire {
			continue
		}
		ev := tripEvent(rec, c, now)
		events[rec.ID] = ev
		if s.deps.Quiet != nil && rec.Scope != SelfScope && !(rec.Action.Push && rec.Action.Urgent) && !muted[rec.ID] {
			trips = append(trips, Trip{Scope: rec.Scope, Event: ev, Journal: rec.Action.Journal, Push: rec.Action.Push})
		}
	}
	if len(trips) == 0 {
		return events, nil, nil
	}
	kept, err := s.deps.Quiet.Keep(ctx, trips, now)
	if err != nil {
		return nil, nil, err
	}
	held := map[string]bool{}
	for i, t := range trips {
		held[t.Event.TripwireID] = kept[i]
	}
	return events, held, nil
}

// tripEvent is the event of the trip a candidate makes of rec.
func tripEvent(rec *Record, c candidate, now time.Time) TripEvent {
	return TripEvent{
		TripwireID:      rec.ID,
		Trip:            rec.TripSeq + 1,
		Label:           rec.Label,
		Timestamp:       now,
		ObservedValue:   observedValue(c.cc, c.obs),
		ObservedContext: observedContext(c.cc, c.obs),
		Summary:         observedText(c.cc, c.obs, plain) + " (" + c.cc.text() + ")",
	}
}

// fire records a trip, ev: history always, journal and push queue as the
// action says, and a notice to the citizen (with 💤 on it) when push is on,
// unless it is muted (its owner snoozed the tripwire or a silence holds
// it: then the trip is journaled) or their quiet hours held it for their
// digest.
func (s *Service) fire(rec *Record, c candidate, ev TripEvent, muted, held bool, now time.Time, w *TickWrites, notices []core.Notice) []core.Notice {
	rec.Status = Tripped
	rec.LastTrippedAt = &now
	rec.TripSeq++
	rec.TripPushed = rec.Action.Push && !muted
	rec.ErrorStreak, rec.LastError = 0, ""
	if c.cc.watchesChange {
		rec.LastObserved = c.ev.observed
	}
	w.Trips = append(w.Trips, Trip{Scope: rec.Scope, Event: ev, Journal: rec.Action.Journal || muted, Push: rec.Action.Push && !muted})
	if muted {
		return notices
	}
	if !rec.Action.Push {
		return notices
	}
	if held {
		// A held trip has no notice for its reset to answer in.
		rec.TripPushed = false
		return notices
	}
	body := fmt.Sprintf("🔔 **Tripwire tripped: %s**\n\nObserved: %s\n\nCondition: %s\n\nWhy you armed it: %s\n\n`%s` · trip %d",
		core.EscapeMarkdown(rec.Label), observedText(c.cc, c.obs, boldMarkdown), core.CodeSpan(c.cc.text()), markdownLines(rec.Rationale), rec.ID, rec.TripSeq)
	key := tripNoticeKey(rec.ID, rec.TripSeq)
	notices = s.notify(notices, rec.Scope, core.Notice{Key: key, Kind: core.NoticeMessage, Body: body}, true)
	if rec.Scope != SelfScope {
		notices = s.notify(notices, rec.Scope, core.Notice{Key: key + ":snooze", Kind: core.NoticeReaction, Body: SnoozeReaction, Target: key}, false)
	}
	return s.notify(notices, rec.Scope, core.Notice{Key: key + ":chart", Kind: core.NoticeImage, Target: key, Thread: true,
		Body: s.tripChart(rec, c.cc, now)}, false)
}

// tripChart asks for the chart a trip notice carries in its thread: the
// last history.ChartSpan of the tripwire's first source, its thresholds
// as lines, the states it watches shaded, the trip marked.
func (s *Service) tripChart(rec *Record, cc *compiledCondition, now time.Time) string {
	return s.chart(rec.Label, cc, now.Add(-history.ChartSpan), now, now)
}

// chart asks for a chart of the first source a condition reads over
// from–to, with the condition's thresholds and watched states on that
// source and, when set, a trip marked.
func (s *Service) chart(title string, cc *compiledCondition, from, to, tripAt time.Time) string {
	src := cc.leaves[0].source
	c := history.Chart{Title: title, Source: src, From: from, To: to, TripAt: tripAt}
	if k, ok := s.deps.Sources.Lookup(src.Kind); ok && k.Value.Numeric() && k.Value != core.ValueNumber {
		c.Unit = string(k.Value)
	}
	for _, l := range cc.leaves {
		if l.source != src {
			continue
		}
		switch l.op {
		case OpLT, OpLTE, OpGT, OpGTE:
			c.Thresholds = append(c.Thresholds, l.num)
		case OpEQ, OpIn:
			for _, v := range l.values {
				if w, ok := v.(string); ok {
					c.Watched = append(c.Watched, w)
				}
			}
		}
	}
	b, _ := json.Marshal(c) // strings, numbers and times always encode
	return string(b)
}

// reset re-arms a tripwire whose condition cleared, replying in the thread
// of its trip notice when that trip was pushed.
func (s *Service) reset(rec *Record, c candidate, now time.Time, notices []core.Notice) []core.Notice {
	rec.Status = Armed
	rec.LastResetAt = &now
	rec.ErrorStreak, rec.LastError = 0, ""
	if c.cc.watchesChange {
		rec.LastObserved = c.ev.observed
	}
	if !rec.TripPushed {
		return notices
	}
	rec.TripPushed = false
	key := tripNoticeKey(rec.ID, rec.TripSeq)
	body := fmt.Sprintf("✅ Cleared at %s — %s.", core.TimeText(now), observedText(c.cc, c.obs, markdown))
	return s.notify(notices, rec.Scope, core.Notice{Key: key + clearedSuffix, Kind: core.NoticeMessage, Target: key, Thread: true, Body: body}, false)
}

// quarantine stops a tripwire for review and tells its owner, once per
// quarantine.
func (s *Service) quarantine(rec *Record, reason string, notices []core.Notice) []core.Notice {
	rec.Status = Quarantined
	rec.QuarantineReason = reason
	rec.QuarantineCount++
	body := fmt.Sprintf("⚠️ **Tripwire quarantined: %s**\n\nJarvis stopped watching `%s` because %s. It stays quiet until you release it (`!tw release %s`).",
		core.EscapeMarkdown(rec.Label), rec.ID, core.EscapeMarkdown(reason), rec.ID)
	key := fmt.Sprintf("trip:%s:quarantine:%d", rec.ID, rec.QuarantineCount)
	return s.notify(notices, rec.Scope, core.Notice{Key: key, Kind: core.NoticeMessage, Body: body}, false)
}

// notify addresses a notice to a scope's owner: a citizen in their direct
// room, the "self" scope in the dedicated room (when one is set).
func (s *Service) notify(notices []core.Notice, scope string, n core.Notice, mention bool) []core.Notice {
	if scope != SelfScope {
		n.ToUser = scope
		if mention {
			n.Mentions = []string{scope}
		}
	} else if n.RoomID = s.deps.Room; n.RoomID == "" {
		return notices
	}
	return append(notices, n)
}

func tripNoticeKey(id string, seq int64) string { return fmt.Sprintf("trip:%s:%d", id, seq) }

// sources are the sources the condition reads, each once.
func (cc *compiledCondition) sources() []core.SourceRef {
	var out []core.SourceRef
	for _, l := range cc.leaves {
		if !slices.Contains(out, l.source) {
			out = append(out, l.source)
		}
	}
	return out
}

// text renders the condition with its sources: "integrity.gi < 0.7", or
// "all of: integrity.gi < 0.7; lane.sentiment = degraded".
func (cc *compiledCondition) text() string {
	if cc.combine == "" {
		return cc.leaves[0].text
	}
	parts := make([]string, len(cc.leaves))
	for i, l := range cc.leaves {
		parts[i] = l.text
	}
	return string(cc.combine) + " of: " + strings.Join(parts, "; ")
}

// observedText says what each source showed: "integrity.gi is 0.68",
// each part (source names and values, which feeds and fetched pages
// supply) passed through style: plain for the journal, markdown or
// boldMarkdown for a notice.
func observedText(cc *compiledCondition, obs []core.Observation, style func(name, value string) string) string {
	parts := make([]string, len(cc.leaves))
	for i, l := range cc.leaves {
		v := obs[i].Display
		if v == "" {
			v = formatValue(obs[i].Value)
		}
		parts[i] = style(l.source.String(), v)
	}
	return strings.Join(parts, "; ")
}

func plain(name, value string) string { return name + " is " + value }

func markdown(name, value string) string {
	return core.EscapeMarkdown(name) + " is " + core.EscapeMarkdown(value)
}

func boldMarkdown(name, value string) string {
	return core.EscapeMarkdown(name) + " is **" + core.EscapeMarkdown(value) + "**"
}

// markdownLines escapes text of several lines line by line.
func markdownLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = core.EscapeMarkdown(l)
	}
	return strings.Join(lines, "\n")
}

func observedValue(cc *compiledCondition, obs []core.Observation) any {
	if cc.combine == "" {
		return obs[0].Value
	}
	values := make([]any, len(obs))
	for i, o := range obs {
		values[i] = o.Value
	}
	return values
}

func observedContext(cc *compiledCondition, obs []core.Observation) map[string]any {
	if cc.combine == "" {
		if obs[0].Context == nil {
			return map[string]any{}
		}
		return obs[0].Context
	}
	leaves := make([]any, len(obs))
	for i, o := range obs {
		leaves[i] = map[string]any{"source": cc.leaves[i].source.String(), "value": o.Value, "context": o.Context}
	}
	return map[string]any{"sources": leaves}
}
