package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
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
