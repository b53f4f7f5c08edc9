package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestAgentJournal(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	t0 := time.UnixMilli(1_776_384_000_000)
	entry := func(cycle, id string, at time.Time) fleet.AgentJournalEntry {
		return fleet.AgentJournalEntry{Agent: "EVE", Cycle: cycle, EntryID: id, Title: "title " + id, Content: "body " + id,
			ContentSignature: fleet.ContentSignature("body " + id), SignalWeight: 0.25, Timestamp: t0, ReceivedAt: at,
			Evidence: []fleet.JournalEvidence{{Type: "metric", Source: "terminal-snapshot", Key: "active_tripwires", Value: float64(0)}}}
	}
	if _, _, err := s.AgentJournal().LatestJournal(ctx, "EVE"); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("LatestJournal() with no entries = %v, want ErrNotFound", err)
	}
	steps := []struct {
		name    string
		entry   fleet.AgentJournalEntry
		wantErr error
	}{
		{name: "first", entry: entry("C-284", "a", t0.Add(time.Minute))},
		{name: "second", entry: entry("C-284", "b", t0.Add(2*time.Minute))},
		{name: "same id in the cycle", entry: entry("C-284", "a", t0.Add(3*time.Minute)), wantErr: core.ErrConflict},
		{name: "same id in the next cycle", entry: entry("C-285", "a", t0.Add(4*time.Minute))},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			err := s.AgentJournal().AppendJournal(ctx, st.entry)
			if !errors.Is(err, st.wantErr) || (st.wantErr == nil && err != nil) {
				t.Fatalf("AppendJournal() = %v, want %v", err, st.wantErr)
			}
		})
	}
	entries, err := s.AgentJournal().JournalEntries(ctx, "EVE", "C-284")
	if err != nil || len(entries) != 2 || entries[0].EntryID != "a" || entries[1].EntryID != "b" ||
		entries[0].Content != "body a" || !entries[0].ReceivedAt.Equal(t0.Add(time.Minute)) ||
		len(entries[0].Evidence) != 1 || entries[0].Evidence[0] != (fleet.JournalEvidence{Type: "metric", Source: "terminal-snapshot", Key: "active_tripwires", Value: float64(0)}) {
		t.Errorf("JournalEntries() = %+v, %v; want a then b, as written", entries, err)
	}
	if n, err := s.AgentJournal().JournalCounts(ctx, map[string]string{"EVE": "C-284"}); err != nil || n["EVE"] != 2 {
		t.Errorf("JournalCounts(EVE: C-284) = %v, %v; want 2", n, err)
	}
	cycle, at, err := s.AgentJournal().LatestJournal(ctx, "EVE")
	if err != nil || cycle != "C-285" || !at.Equal(t0.Add(4*time.Minute)) {
		t.Errorf("LatestJournal() = %s, %v, %v; want C-285 at +4m", cycle, at, err)
	}
	size := entry("C-284", "a", t0).Size()
	want := fleet.JournalUsage{CycleEntries: 2, CycleBytes: 2 * size, AgentBytes: 3 * size}
	if used, err := s.AgentJournal().JournalUsage(ctx, "EVE", "C-284"); err != nil || used != want {
		t.Errorf("JournalUsage(EVE, C-284) = %+v, %v; want %+v", used, err, want)
	}
	if used, err := s.AgentJournal().JournalUsage(ctx, "ZEUS", "C-284"); err != nil || used != (fleet.JournalUsage{}) {
		t.Errorf("JournalUsage(ZEUS) = %+v, %v; want nothing", used, err)
	}
	// A page after b's position is empty; after a's it is b.
	for _, tt := range []struct {
		after fleet.JournalPosition
		want  string
	}{
		{fleet.JournalPosition{}, "a b"},
		{fleet.JournalPosition{ReceivedAt: t0.Add(time.Minute), EntryID: "a"}, "b"},
		{fleet.JournalPosition{ReceivedAt: t0.Add(2 * time.Minute), EntryID: "b"}, ""},
	} {
		page, err := s.AgentJournal().JournalPage(ctx, "EVE", "C-284", tt.after, 10)
		var ids []string
		for _, e := range page {
			ids = append(ids, e.EntryID)
		}
		if got := strings.Join(ids, " "); err != nil || got != tt.want {
			t.Errorf("JournalPage(after %+v) = %q, %v; want %q", tt.after, got, err, tt.want)
		}
	}
}

// TestJournalEntriesWithEvidence: only the entries carrying evidence of the
// type are listed, of the cycle named for each agent, by agent and in
// arrival order; a type that differs only where LIKE reads a wildcard
// ("c_" against "ci") matches nothing.
func TestJournalEntriesWithEvidence(t *testing.T) {
	s := testdb.OpenStore(t, testEngine)
	ctx := context.Background()
	t0 := time.UnixMilli(1_776_384_000_000)
	for i, ev := range [][]fleet.JournalEvidence{
		{{Type: "metric", Key: "x", Value: float64(1)}},
		{{Type: "metric", Key: "x"}, {Type: "ci", Key: "card-1", Value: "failed", URL: "https://ci.example.org/1"}},
		nil,
		{{Type: "ci", Key: "card-2", Value: "passed"}},
	} {
		id := string(rune('a' + i))
		for _, at := range []struct{ agent, cycle string }{{"EVE", "C-1"}, {"EVE", "C-0"}, {"ZED", "C-9"}} {
			e := fleet.AgentJournalEntry{Agent: at.agent, Cycle: at.cycle, EntryID: id, Title: id, Content: "body " + id,
				ContentSignature: fleet.ContentSignature("body " + id), Timestamp: t0, ReceivedAt: t0.Add(time.Duration(i) * time.Second), Evidence: ev}
			if err := s.AgentJournal().AppendJournal(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tt := range []struct {
		kind   string
		cycles map[string]string
		want   []string
	}{
		{"ci", map[string]string{"EVE": "C-1"}, []string{"EVE/C-1/b", "EVE/C-1/d"}},
		{"ci", map[string]string{"ZED": "C-9", "EVE": "C-1", "NOBODY": "C-1"}, []string{"EVE/C-1/b", "EVE/C-1/d", "ZED/C-9/b", "ZED/C-9/d"}},
		{"metric", map[string]string{"EVE": "C-0"}, []string{"EVE/C-0/a", "EVE/C-0/b"}},
		{"c_", map[string]string{"EVE": "C-1"}, nil},
		{"attestation", map[string]string{"EVE": "C-1"}, nil},
		{"ci", map[string]string{}, nil},
	} {
		entries, err := s.AgentJournal().JournalEntriesWithEvidence(ctx, tt.cycles, tt.kind)
		var got []string
		for _, e := range entries {
			got = append(got, e.Agent+"/"+e.Cycle+"/"+e.EntryID)
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("JournalEntriesWithEvidence(%v, %q) = %v, %v; want %v", tt.cycles, tt.kind, got, err, tt.want)
		}
	}
}
