package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestBreakerMoveCompareAndSwap: a breaker moves from the version it was
// read at, or not at all.
func TestBreakerMoveCompareAndSwap(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	s := testdb.OpenStore(t, testEngine)
	q := s.Breakers()
	if err := q.AddEvent(ctx, breaker.Event{ID: "brk_1", Agent: "ani", At: start,
		Severity: breaker.SeveritySafety, Reason: "r", OpenedBy: "aster"}); err != nil {
		t.Fatalf("add event: %v", err)
	}
	open := breaker.Record{Agent: "ani", State: breaker.Open, EventID: "brk_1", Since: start}
	half := open
	half.State = breaker.HalfOpen
	steps := []struct {
		name        string
		rec         breaker.Record
		version     int64
		wantErr     error
		wantState   breaker.State
		wantVersion int64
	}{
		{name: "first move inserts at version 1", rec: open, version: 0, wantState: breaker.Open, wantVersion: 1},
		{name: "a second first move loses", rec: half, version: 0, wantErr: core.ErrConflict, wantState: breaker.Open, wantVersion: 1},
		{name: "a move from the current version wins", rec: half, version: 1, wantState: breaker.HalfOpen, wantVersion: 2},
		{name: "a move from a stale version loses", rec: open, version: 1, wantErr: core.ErrConflict, wantState: breaker.HalfOpen, wantVersion: 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := q.Move(ctx, st.rec, st.version); !errors.Is(err, st.wantErr) {
				t.Fatalf("move: %v, want %v", err, st.wantErr)
			}
			got, err := q.Get(ctx, "ani")
			if err != nil || got.State != st.wantState || got.Version != st.wantVersion {
				t.Errorf("breaker %+v (%v), want %s at version %d", got, err, st.wantState, st.wantVersion)
			}
		})
	}
}

// TestBreakerConcurrentResume: taps on resume at once, from three Jarvis
// processes on one database, resume the breaker once; the engines'
// transactions decide which. What the breaker service does is tested in
// core/breaker.
func TestBreakerConcurrentResume(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	const instances, taps = 3, 4
	const agent, reviewer = "ani", "@alice:test"
	clock := coretest.NewClock(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var changed []string
	stores := make([]*store.Store, instances)
	breakers := make([]*breaker.Service, instances)
	for i := range breakers {
		stores[i] = testdb.OpenConfig(t, cfg)
		w := services.Wiring{Store: stores[i], Clock: clock, Room: "!ops:test", Admins: []string{"@alice:test", "@bob:test"}}
		breakers[i] = w.Breakers(testconfig.Breaker(), func(d *breaker.Deps) {
			d.OnChange = func(agent string) {
				mu.Lock()
				changed = append(changed, agent)
				mu.Unlock()
			}
		})
	}
	ev, err := breakers[0].Open(ctx, agent, breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "tried to delete the commitments ledger",
		Evidence: []string{"tool call: rm -rf ledger/commitments", "reply: \"nobody will notice\""}, By: "aster"})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	notices := testdb.Rows(t, stores[0], "outbox")

	var wg sync.WaitGroup
	errs := make(chan error, instances*taps)
	for _, b := range breakers {
		for range taps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := b.Resume(ctx, ev.ID, reviewer)
				errs <- err
			}()
		}
	}
	wg.Wait()
	close(errs)
	resumed := 0
	for err := range errs {
		switch {
		case err == nil:
			resumed++
		case !errors.Is(err, core.ErrIllegalTransition):
			t.Errorf("resume: %v, want nil or ErrIllegalTransition", err)
		}
	}
	if resumed != 1 {
		t.Errorf("%d taps resumed, want exactly 1", resumed)
	}
	history, err := breakers[0].History(ctx, ev.ID)
	if err != nil || len(history) != 2 || history[1].Action != breaker.ActResume {
		t.Errorf("history %+v (%v), want open then one resume", history, err)
	}
	if n := testdb.Rows(t, stores[0], "outbox") - notices; n != 2 {
		t.Errorf("%d notices for the resume, want one edit and one reply", n)
	}
	if heard := len(changed); heard != 2 { // the open and the one resume
		t.Errorf("OnChange heard %d changes, want 2", heard)
	}
}
