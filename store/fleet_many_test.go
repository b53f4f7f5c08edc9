package store_test

import (
	"context"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestFleetManyReads: the reads of many agents at once give each agent
// what the reads of one give it. EVE and eve are two agents (names are
// kept as written; the fleet matches them case-insensitively only against
// its configuration), ZEUS has no rows at all, and no agents at all read
// nothing.
func TestFleetManyReads(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	t0 := time.UnixMilli(1_776_384_000_000)
	agents := []string{"EVE", "eve", "ZEUS", "JADE"}

	journal := s.AgentJournal()
	for i, e := range []struct {
		agent, cycle, id string
		at               time.Duration
	}{
		{"EVE", "C-1", "a", time.Minute},
		{"EVE", "C-1", "b", 2 * time.Minute},
		{"EVE", "C-2", "a", 3 * time.Minute},
		{"eve", "C-9", "a", 5 * time.Minute},
		// Two entries in the same millisecond: the greater cycle is the
		// latest.
		{"JADE", "C-3", "a", time.Minute},
		{"JADE", "C-4", "a", time.Minute},
	} {
		err := journal.AppendJournal(ctx, fleet.AgentJournalEntry{Agent: e.agent, Cycle: e.cycle, EntryID: e.id, Title: "t",
			Content: "c", ContentSignature: fleet.ContentSignature("c"), Timestamp: t0, ReceivedAt: t0.Add(e.at)})
		if err != nil {
			t.Fatalf("entry %d: %v", i, err)
		}
	}
	t.Run("latest journal entries", func(t *testing.T) {
		got, err := journal.LatestJournals(ctx, agents)
		want := map[string]fleet.JournalMark{
			"EVE":  {Cycle: "C-2", At: t0.Add(3 * time.Minute)},
			"eve":  {Cycle: "C-9", At: t0.Add(5 * time.Minute)},
			"JADE": {Cycle: "C-4", At: t0.Add(time.Minute)},
		}
		if err != nil || !maps.EqualFunc(got, want, func(a, b fleet.JournalMark) bool { return a.Cycle == b.Cycle && a.At.Equal(b.At) }) {
			t.Errorf("LatestJournals() = %v, %v; want %v", got, err, want)
		}
		for _, agent := range []string{"EVE", "eve"} {
			cycle, at, err := journal.LatestJournal(ctx, agent)
			if err != nil || cycle != want[agent].Cycle || !at.Equal(want[agent].At) {
				t.Errorf("LatestJournal(%s) = %s, %v, %v; want %v as LatestJournals says", agent, cycle, at, err, want[agent])
			}
		}
	})
	t.Run("journal counts", func(t *testing.T) {
		got, err := journal.JournalCounts(ctx, map[string]string{"EVE": "C-1", "eve": "C-9", "ZEUS": "C-1", "JADE": "C-1"})
		if want := map[string]int{"EVE": 2, "eve": 1}; err != nil || !maps.Equal(got, want) {
			t.Errorf("JournalCounts() = %v, %v; want %v", got, err, want)
		}
	})

	att := s.Attestations()
	for _, subj := range []fleet.AttestationSubject{
		{ID: "open", Hash: "h", Agents: []string{"EVE", "eve", "ZEUS"}, OpenedAt: t0, ClosesAt: t0.Add(5 * time.Minute)},
		{ID: "also-open", Hash: "h", Agents: []string{"EVE"}, OpenedAt: t0, ClosesAt: t0.Add(5 * time.Minute)},
		{ID: "closed", Hash: "h", Agents: []string{"EVE", "JADE"}, OpenedAt: t0.Add(-time.Hour), ClosesAt: t0},
	} {
		if err := att.CreateSubject(ctx, subj); err != nil {
			t.Fatal(err)
		}
	}
	if err := att.PutAttestation(ctx, fleet.Attestation{SubjectID: "open", Agent: "ZEUS", Verdict: "pass", Rationale: "r",
		Signature: "s", ReceivedAt: t0}); err != nil {
		t.Fatal(err)
	}
	t.Run("pending attestations", func(t *testing.T) {
		got, err := att.PendingAttestations(ctx, t0, agents)
		if want := map[string]int{"EVE": 2, "eve": 1}; err != nil || !maps.Equal(got, want) {
			t.Errorf("PendingAttestations() = %v, %v; want %v", got, err, want)
		}
	})

	m := s.Meter()
	for _, sp := range []struct {
		agent, day string
		cost       float64
	}{{"EVE", "2026-04-17", 1.5}, {"eve", "2026-04-17", 0.25}, {"ZEUS", "2026-04-16", 9}} {
		if _, err := m.AddSpend(ctx, sp.agent, sp.day, fleet.Spend{TokensIn: 7, Cost: sp.cost, Currency: "USD"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.MarkSpend(ctx, "EVE", "2026-04-17", true, false); err != nil {
		t.Fatal(err)
	}
	t.Run("spend on a day", func(t *testing.T) {
		got, err := m.SpendsOn(ctx, "2026-04-17", agents)
		want := map[string]fleet.DaySpend{
			"EVE": {Spend: fleet.Spend{TokensIn: 7, Cost: 1.5, Currency: "USD"}, Warned: true},
			"eve": {Spend: fleet.Spend{TokensIn: 7, Cost: 0.25, Currency: "USD"}},
		}
		if err != nil || !maps.Equal(got, want) {
			t.Errorf("SpendsOn() = %v, %v; want %v", got, err, want)
		}
	})

	for i, b := range []struct {
		agent, id string
		restart   bool
	}{{"EVE", "a", false}, {"EVE", "b", true}, {"EVE", "c", true}, {"eve", "a", false}, {"eve", "b", true}, {"JADE", "a", false}} {
		if err := m.AddBoot(ctx, b.agent, fleet.Boot{ID: b.id, SeenAt: t0.Add(time.Duration(i) * time.Minute), Restart: b.restart}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("restarts since", func(t *testing.T) {
		got, err := m.RestartsSince(ctx, t0.Add(2*time.Minute), agents)
		if want := map[string]int{"EVE": 1, "eve": 1}; err != nil || !maps.Equal(got, want) {
			t.Errorf("RestartsSince() = %v, %v; want %v", got, err, want)
		}
	})

	t.Run("no agents", func(t *testing.T) {
		latest, err1 := journal.LatestJournals(ctx, nil)
		counts, err2 := journal.JournalCounts(ctx, nil)
		pending, err3 := att.PendingAttestations(ctx, t0, nil)
		spends, err4 := m.SpendsOn(ctx, "2026-04-17", nil)
		restarts, err5 := m.RestartsSince(ctx, t0, nil)
		if len(latest)+len(counts)+len(pending)+len(spends)+len(restarts) != 0 {
			t.Errorf("reads of no agents = %v, %v, %v, %v, %v; want nothing", latest, counts, pending, spends, restarts)
		}
		for _, err := range []error{err1, err2, err3, err4, err5} {
			if err != nil {
				t.Errorf("a read of no agents = %v", err)
			}
		}
	})

	// More agents than one statement takes: the last, with an entry, is
	// still read.
	t.Run("many agents", func(t *testing.T) {
		many := make([]string, 9000)
		for i := range many {
			many[i] = fmt.Sprintf("A%04d", i)
		}
		many[len(many)-1] = "eve"
		got, err := journal.LatestJournals(ctx, many)
		if err != nil || len(got) != 1 || got["eve"].Cycle != "C-9" {
			t.Errorf("LatestJournals(9,000 agents) = %v, %v; want eve's alone", got, err)
		}
		pending, err := att.PendingAttestations(ctx, t0, many)
		if err != nil || !maps.Equal(pending, map[string]int{"eve": 1}) {
			t.Errorf("PendingAttestations(9,000 agents) = %v, %v; want eve's alone", pending, err)
		}
	})
}
