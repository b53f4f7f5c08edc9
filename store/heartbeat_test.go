package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestPutHeartbeatsUpsertsPerCycle(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	t0 := time.UnixMilli(1_776_384_000_000)
	hb := func(agent, cycle string, received time.Duration, mii float64) fleet.Heartbeat {
		return fleet.Heartbeat{Agent: agent, Cycle: cycle, Timestamp: t0, ReceivedAt: t0.Add(received), MII: mii, Mode: "green", Notes: cycle}
	}
	steps := []struct {
		name      string
		batch     []fleet.Heartbeat
		wantFirst []bool
	}{
		{name: "new rows", batch: []fleet.Heartbeat{hb("EVE", "C-284", 0, 0.9), hb("ZEUS", "C-284", 0, 0.8)}, wantFirst: []bool{true, true}},
		{name: "a resubmission replaces, a new cycle adds",
			batch: []fleet.Heartbeat{hb("EVE", "C-285", time.Hour, 0.7), hb("EVE", "C-284", time.Hour, 0.6)}, wantFirst: []bool{true, false}},
		{name: "one alone", batch: []fleet.Heartbeat{hb("ZEUS", "C-284", 2*time.Hour, 0.5)}, wantFirst: []bool{false}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			first, err := s.Heartbeats().PutHeartbeats(ctx, st.batch)
			if err != nil || !slices.Equal(first, st.wantFirst) {
				t.Fatalf("PutHeartbeats() = %v, %v; want %v", first, err, st.wantFirst)
			}
			for _, want := range st.batch {
				got, err := s.Heartbeats().Heartbeat(ctx, want.Agent, want.Cycle)
				if err != nil || got.MII != want.MII || got.Mode != want.Mode || got.Notes != want.Notes ||
					!got.Timestamp.Equal(want.Timestamp) || !got.ReceivedAt.Equal(want.ReceivedAt) {
					t.Errorf("stored = %+v, %v; want %+v", got, err, want)
				}
			}
		})
	}
	var rows int
	if err := s.DB.QueryRow(ctx, "SELECT COUNT(*) FROM agent_heartbeat").Scan(&rows); err != nil || rows != 3 {
		t.Errorf("%d heartbeat rows (%v), want 3", rows, err)
	}
}

func TestPutHeartbeatsInChunks(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	batch := make([]fleet.Heartbeat, 1234)
	for i := range batch {
		batch[i] = fleet.Heartbeat{Agent: "EVE", Cycle: fmt.Sprintf("C-%d", i), Timestamp: time.UnixMilli(0), ReceivedAt: time.UnixMilli(1), Mode: "green"}
	}
	first, err := s.Heartbeats().PutHeartbeats(ctx, batch)
	if err != nil || len(first) != len(batch) || slices.Contains(first, false) {
		t.Fatalf("PutHeartbeats() = %d results, %v; want %d new", len(first), err, len(batch))
	}
	var rows int
	if err := s.DB.QueryRow(ctx, "SELECT COUNT(*) FROM agent_heartbeat").Scan(&rows); err != nil || rows != len(batch) {
		t.Errorf("%d heartbeat rows (%v), want %d", rows, err, len(batch))
	}
}

func TestAgentStateRoundTrip(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	if _, err := s.Heartbeats().AgentState(ctx, "EVE"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("AgentState() before any heartbeat = %v, want ErrNotFound", err)
	}
	t0 := time.UnixMilli(1_776_384_000_000)
	states := []fleet.AgentState{
		{Agent: "ZEUS", Cycle: "C-284", LastAt: t0, NextExpectedBy: t0.Add(24 * time.Hour), Streak: 3, MII: 0.5, Mode: "red", Notes: "n"},
		{Agent: "EVE", Cycle: "C-284", LastAt: t0, NextExpectedBy: t0.Add(time.Hour), Streak: 1, MII: 0.9, Mode: "green"},
		{Agent: "EVE", Cycle: "C-285", LastAt: t0.Add(time.Hour), NextExpectedBy: t0.Add(25 * time.Hour), Streak: 2, MII: 0.8, Mode: "yellow", Announced: "offline", Incident: 4,
			Metered: "k1", GraceUntil: t0.Add(2 * time.Hour)},
	}
	if err := s.Heartbeats().PutAgentStates(ctx, states[0], states[1]); err != nil {
		t.Fatalf("PutAgentStates() = %v", err)
	}
	if err := s.Heartbeats().PutAgentStates(ctx, states[2]); err != nil {
		t.Fatalf("PutAgentStates(EVE again) = %v", err)
	}
	if only, err := s.Heartbeats().AgentStates(ctx, "ZEUS", "JADE"); err != nil || len(only) != 1 || only[0].Agent != "ZEUS" {
		t.Errorf("AgentStates(ZEUS, JADE) = %+v, %v; want ZEUS only", only, err)
	}
	got, err := s.Heartbeats().AgentStates(ctx)
	if err != nil || len(got) != 2 {
		t.Fatalf("AgentStates() = %+v, %v; want EVE and ZEUS", got, err)
	}
	for i, want := range []fleet.AgentState{states[2], states[0]} {
		g := got[i]
		if g.Agent != want.Agent || g.Cycle != want.Cycle || !g.LastAt.Equal(want.LastAt) || !g.NextExpectedBy.Equal(want.NextExpectedBy) ||
			g.Streak != want.Streak || g.MII != want.MII || g.Mode != want.Mode || g.Notes != want.Notes ||
			g.Announced != want.Announced || g.Incident != want.Incident || g.Metered != want.Metered || !g.GraceUntil.Equal(want.GraceUntil) {
			t.Errorf("AgentStates()[%d] = %+v, want %+v", i, g, want)
		}
	}
}
