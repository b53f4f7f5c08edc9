package services

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/store"
)

// TripwireRoom is the dedicated room of a TripwireFixture.
const TripwireRoom = "!jarvis:example.org"

// TripwireFixture is the tripwire service on a real store, reading the
// kinds of coretest.Registry from sources whose values the test sets, on
// a clock that starts at 2026-01-01 09:00 UTC. Its methods fail the test
// on an error.
type TripwireFixture struct {
	Ctx     context.Context
	Store   *store.Store
	Service *tripwire.Service
	Clock   *coretest.Clock
	Sources *coretest.Sources

	t *testing.T
}

// NewTripwireFixture returns the tripwire service of cfg on st, posting
// what goes to the room to TripwireRoom.
func NewTripwireFixture(t *testing.T, st *store.Store, cfg tripwire.Config) *TripwireFixture {
	t.Helper()
	f := &TripwireFixture{Ctx: context.Background(), Store: st, Sources: coretest.NewSources(),
		Clock: coretest.NewClock(time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)), t: t}
	w := Wiring{Store: st, Clock: f.Clock, Room: TripwireRoom}
	f.Service = w.Tripwires(cfg, f.Sources.Registry())
	return f
}

// Set gives the source key (kind or kind[param]) the value v.
func (f *TripwireFixture) Set(key string, v any) { f.Sources.Set(key, v) }

// Fail has reads of the source key fail with err until it is Set.
func (f *TripwireFixture) Fail(key string, err error) { f.Sources.Fail(key, err) }

// Tick runs one evaluator pass.
func (f *TripwireFixture) Tick() tripwire.TickReport {
	f.t.Helper()
	r, err := f.Service.Tick(f.Ctx)
	if err != nil {
		f.t.Fatalf("Tick() error = %v", err)
	}
	return r
}

// Arm arms d in scope.
func (f *TripwireFixture) Arm(scope string, d tripwire.Draft) tripwire.Definition {
	f.t.Helper()
	def, err := f.Service.Arm(f.Ctx, scope, d)
	if err != nil {
		f.t.Fatalf("Arm(%q) error = %v", d.Label, err)
	}
	return def
}

// Get reads the tripwire id of scope.
func (f *TripwireFixture) Get(scope, id string) tripwire.Definition {
	f.t.Helper()
	def, err := f.Service.Get(f.Ctx, scope, id)
	if err != nil {
		f.t.Fatalf("Get(%s) error = %v", id, err)
	}
	return def
}

// Notices returns the outbox's waiting notices, oldest first.
func (f *TripwireFixture) Notices() []core.OutboxEntry {
	f.t.Helper()
	entries, err := f.Store.Outbox().Waiting(f.Ctx, 1000)
	if err != nil {
		f.t.Fatalf("outbox: %v", err)
	}
	return entries
}

// History returns the trips of the tripwire id of scope.
func (f *TripwireFixture) History(scope, id string) []tripwire.TripEvent {
	f.t.Helper()
	events, err := f.Service.History(f.Ctx, scope, id, 0)
	if err != nil {
		f.t.Fatalf("History(%s) error = %v", id, err)
	}
	return events
}

// GIBelow is a draft that trips when integrity.gi is below threshold,
// journaled, pushed when push is set, with cooldown seconds between
// trips.
func GIBelow(label string, threshold float64, push bool, cooldown int) tripwire.Draft {
	return tripwire.Draft{
		Label: label, Rationale: "the substrate degrades below the yellow band",
		Source:    core.SourceRef{Kind: "integrity.gi"},
		Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: threshold},
		Action:    &tripwire.Action{Journal: true, Push: push}, CooldownSeconds: &cooldown,
	}
}
