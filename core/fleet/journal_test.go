package fleet_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// journalEntry is an entry of EVE's with content of n bytes: its size is
// n plus 72 (a one-letter title and the signature), and at least 1 KiB.
func journalEntry(cycle, id string, n int) fleet.AgentJournalEntry {
	content := strings.Repeat("a", n)
	return fleet.AgentJournalEntry{Agent: "EVE", Cycle: cycle, EntryID: id, Title: "t", Content: content,
		ContentSignature: fleet.ContentSignature(content), SignalWeight: 0.5, Timestamp: fleetT0}
}

// TestJournalLimits: an entry past a limit is refused with the limit's key,
// a size as ErrTooLarge and a count as ErrRateLimited, and stores nothing;
// the entries before it stay as they were.
func TestJournalLimits(t *testing.T) {
	fx := newFleetFixture(t)
	fx.cfg.Journal = fleet.JournalConfig{MaxEntryBytes: 2000, MaxCycleEntries: 3, MaxCycleBytes: 3500, MaxAgentBytes: 7000,
		PageSize: 10, MaxPageSize: 10}
	fx.fleet = fx.newFleet(t)
	ctx := context.Background()
	steps := []struct {
		name    string
		entry   fleet.AgentJournalEntry
		wantErr error
		wantKey string
	}{
		{name: "an entry past max_entry_bytes", entry: journalEntry("C-1", "big", 1929), wantErr: core.ErrTooLarge, wantKey: "fleet.journal.max_entry_bytes"},
		{name: "first of C-1, counted as 1 KiB", entry: journalEntry("C-1", "a1", 1)},
		{name: "second of C-1", entry: journalEntry("C-1", "a2", 1)},
		{name: "third of C-1", entry: journalEntry("C-1", "a3", 1)},
		{name: "a fourth in C-1", entry: journalEntry("C-1", "a4", 1), wantErr: core.ErrRateLimited, wantKey: "fleet.journal.max_cycle_entries"},
		{name: "first of C-2", entry: journalEntry("C-2", "b1", 1100)},
		{name: "second of C-2", entry: journalEntry("C-2", "b2", 1100)},
		{name: "past C-2's bytes", entry: journalEntry("C-2", "b3", 1100), wantErr: core.ErrTooLarge, wantKey: "fleet.journal.max_cycle_bytes"},
		{name: "first of C-3", entry: journalEntry("C-3", "c1", 1100)},
		{name: "past EVE's bytes", entry: journalEntry("C-3", "c2", 1100), wantErr: core.ErrTooLarge, wantKey: "fleet.journal.max_agent_bytes"},
	}
	for _, s := range steps {
		_, err := fx.fleet.AppendJournal(ctx, s.entry)
		var le *core.LimitError
		switch {
		case s.wantErr == nil && err != nil:
			t.Fatalf("%s: AppendJournal() = %v", s.name, err)
		case s.wantErr != nil && (!errors.Is(err, s.wantErr) || !errors.As(err, &le) || le.Key != s.wantKey):
			t.Fatalf("%s: AppendJournal() = %v, want %v naming %s", s.name, err, s.wantErr, s.wantKey)
		}
	}
	for cycle, want := range map[string]string{"C-1": "a1 a2 a3", "C-2": "b1 b2", "C-3": "c1"} {
		page, err := fx.fleet.Journal(ctx, "EVE", cycle, 0, "")
		var ids []string
		for _, e := range page.Entries {
			ids = append(ids, e.EntryID)
		}
		if got := strings.Join(ids, " "); err != nil || got != want {
			t.Errorf("%s holds %q (%v), want %q: nothing refused stored", cycle, got, err, want)
		}
	}
}

// TestJournalPages: a cycle is read page by page, each page's cursor
// reading the next in arrival order until the last, which has none; a
// limit past max_page_size and a cursor the API did not give are refused.
func TestJournalPages(t *testing.T) {
	fx := newFleetFixture(t)
	fx.cfg.Journal = fleet.DefaultJournal
	fx.cfg.Journal.PageSize, fx.cfg.Journal.MaxPageSize = 2, 3
	fx.fleet = fx.newFleet(t)
	ctx := context.Background()
	for i := range 5 {
		// Two entries arrive in each millisecond: the entry id orders them.
		if i%2 == 0 {
			fx.clock.Advance(time.Millisecond)
		}
		if _, err := fx.fleet.AppendJournal(ctx, journalEntry("C-9", fmt.Sprintf("e%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	var pages []string
	cursor := ""
	for range 5 {
		page, err := fx.fleet.Journal(ctx, "EVE", "C-9", 0, cursor)
		if err != nil {
			t.Fatalf("page after %q: %v", cursor, err)
		}
		var ids []string
		for _, e := range page.Entries {
			ids = append(ids, e.EntryID)
		}
		pages = append(pages, strings.Join(ids, " "))
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if got, want := strings.Join(pages, " | "), "e0 e1 | e2 e3 | e4"; got != want {
		t.Errorf("pages = %q, want %q", got, want)
	}
	if page, err := fx.fleet.Journal(ctx, "EVE", "C-9", 3, ""); err != nil || len(page.Entries) != 3 || page.Next == "" {
		t.Errorf("a page of 3 = %d entries, next %q, %v; want 3 and a cursor", len(page.Entries), page.Next, err)
	}
	if _, err := fx.fleet.Journal(ctx, "EVE", "C-9", 4, ""); fieldOf(err) != "limit" {
		t.Errorf("a page of 4, past max_page_size = %v, want an invalid limit", err)
	}
	if _, err := fx.fleet.Journal(ctx, "EVE", "C-9", 0, "not-a-cursor"); fieldOf(err) != "cursor" {
		t.Errorf("a made-up cursor = %v, want an invalid cursor", err)
	}
}
