package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/wake"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// recordWindows differ from each other, so that a kind pruned by another's
// window fails the test.
var recordWindows = retention.Config{Outbox: time.Hour, Events: 24 * time.Hour, Pending: time.Hour, Journal: 10000 * time.Hour,
	Approvals: time.Hour, Deleted: time.Hour, Heartbeats: 300 * time.Hour, Incidents: 400 * time.Hour, Reminders: 500 * time.Hour,
	ConsumedEvents: 600 * time.Hour}

// TestRetentionRecords: heartbeats, resolved incidents, reminders and tasks
// that are over, and the wake router's marks of consumed events go a
// millisecond past their windows; what is still needed stays whatever its
// age: each agent's latest heartbeat, open incidents (claimed or not),
// waiting reminders and open tasks, and the marks of the CI failures in
// an agent's current journal cycle, which the router would otherwise
// announce again.
func TestRetentionRecords(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)
	now := start.Add(5000 * time.Hour)
	clock := coretest.NewClock(now)
	inside := func(window time.Duration) time.Time { return now.Add(-window + time.Millisecond) }
	outside := func(window time.Duration) time.Time { return now.Add(-window - time.Millisecond) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Heartbeats: EVE's C-1 is old, C-2 recent; ADA's only heartbeat, far
	// older than the window, is its latest.
	hbs := s.Heartbeats()
	for _, hb := range []fleet.Heartbeat{
		{Agent: "EVE", Cycle: "C-1", ReceivedAt: outside(recordWindows.Heartbeats)},
		{Agent: "EVE", Cycle: "C-2", ReceivedAt: inside(recordWindows.Heartbeats)},
		{Agent: "ADA", Cycle: "C-9", ReceivedAt: start},
	} {
		hb.Timestamp, hb.Mode = hb.ReceivedAt, "green"
		_, err := hbs.PutHeartbeats(ctx, []fleet.Heartbeat{hb})
		must(err)
		must(hbs.PutAgentStates(ctx, fleet.AgentState{Agent: hb.Agent, Cycle: hb.Cycle, LastAt: hb.ReceivedAt, Mode: "green"}))
	}

	// Incidents: resolved just outside and just inside the window, and
	// two that opened long ago and are still open, one claimed.
	incidents := map[string]oncall.Incident{
		"resolved-old": {ResolvedAt: outside(recordWindows.Incidents)},
		"resolved-new": {ResolvedAt: inside(recordWindows.Incidents)},
		"open":         {},
		"claimed":      {Owner: "@bob:example.org", ClaimedAt: start},
	}
	for id, inc := range incidents {
		inc.ID, inc.NoticeKey, inc.RoomID, inc.Body, inc.Kind, inc.Subject, inc.OpenedAt = id, "fleet:"+id, "!room", id, "alert", "EVE", start
		must(s.Incidents().PutIncident(ctx, inc))
	}

	// Reminders: over (done, cancelled, delivered once) just outside and
	// inside the window, and a waiting one whose time passed long ago
	// (it is delivered late when a Jarvis runs again).
	reminders := map[string]struct {
		status reminder.Status
		due    time.Time
	}{
		"done-old":      {reminder.Done, outside(recordWindows.Reminders)},
		"cancelled-old": {reminder.Cancelled, outside(recordWindows.Reminders)},
		"sent-old":      {reminder.Sent, outside(recordWindows.Reminders)},
		"done-new":      {reminder.Done, inside(recordWindows.Reminders)},
		"sent-new":      {reminder.Sent, inside(recordWindows.Reminders)},
		"waiting":       {reminder.Waiting, start},
	}
	reminderIDs := map[string]int64{}
	for text, r := range reminders {
		id, err := s.Reminders().InsertReminder(ctx, reminder.Reminder{Owner: "@alice:example.org", Text: text, Due: r.due, At: r.due,
			Status: r.status, CreatedAt: start})
		must(err)
		reminderIDs[text] = id
	}

	// Tasks: done just outside and inside the window, one open; a note as
	// old stays (notes and ideas are kept until their owner says).
	nb := s.Notebook()
	for text, done := range map[string]time.Time{"task-old": outside(recordWindows.Reminders), "task-new": inside(recordWindows.Reminders),
		"task-open": {}} {
		id, err := nb.InsertEntry(ctx, notebook.Entry{Owner: "@alice:example.org", Kind: notebook.Task, Text: text, CreatedAt: start})
		must(err)
		if !done.IsZero() {
			_, err := nb.FinishTask(ctx, "@alice:example.org", id, done)
			must(err)
		}
	}
	_, err := nb.InsertEntry(ctx, notebook.Entry{Owner: "@alice:example.org", Kind: notebook.Note, Text: "note-old", CreatedAt: start})
	must(err)

	// Consumed events: EVE journaled a CI failure in C-1 long ago and one
	// in C-2, its current cycle, as long ago; ZEUS's current cycle has one
	// consumed just outside the window. The router read all three long
	// ago; marks of entries no longer in a current cycle go, as does one
	// of a source that reports no journal.
	for _, e := range []fleet.AgentJournalEntry{
		{Agent: "EVE", Cycle: "C-1", EntryID: "ci-1", ReceivedAt: start},
		{Agent: "EVE", Cycle: "C-2", EntryID: "ci-2", ReceivedAt: start.Add(time.Hour)},
		{Agent: "ZEUS", Cycle: "C-5", EntryID: "ci-5", ReceivedAt: start},
	} {
		e.Title, e.Content, e.ContentSignature, e.Timestamp = e.EntryID, e.EntryID, fleet.ContentSignature(e.EntryID), e.ReceivedAt
		must(s.AgentJournal().AppendJournal(ctx, e))
	}
	consumed := map[[2]string]struct {
		at   time.Time
		kept bool
	}{
		{"journal of EVE", "EVE/C-1/ci-1"}:   {outside(recordWindows.ConsumedEvents), false},
		{"journal of EVE", "EVE/C-2/ci-2"}:   {outside(recordWindows.ConsumedEvents), true},
		{"journal of ZEUS", "ZEUS/C-5/ci-5"}: {outside(recordWindows.ConsumedEvents), true},
		{"journal of ZEUS", "ZEUS/C-4/ci-4"}: {outside(recordWindows.ConsumedEvents), false},
		{"journal of EVE", "EVE/C-1/ci-0"}:   {inside(recordWindows.ConsumedEvents), true},
		{"elsewhere", "x-1"}:                 {outside(recordWindows.ConsumedEvents), false},
	}
	for ev, c := range consumed {
		first, err := s.ConsumeEvents(ctx, []wake.Event{{Source: ev[0], ID: ev[1]}}, c.at)
		must(err)
		if !first[wake.Event{Source: ev[0], ID: ev[1]}] {
			t.Fatalf("ConsumeEvent(%v) = false before the pass", ev)
		}
	}

	r := services.Wiring{Store: s, Clock: clock}.Retention(recordWindows).Pass(ctx)
	if r.Err != nil {
		t.Fatalf("Pass() error = %v", r.Err)
	}
	want := retention.Report{At: now, Heartbeats: 1, Incidents: 1, Reminders: 4, Consumed: 3}
	if r != want {
		t.Errorf("Pass() = %+v, want %+v", r, want)
	}

	t.Run("heartbeats", func(t *testing.T) {
		for _, h := range []struct {
			agent, cycle string
			kept         bool
		}{{"EVE", "C-1", false}, {"EVE", "C-2", true}, {"ADA", "C-9", true}} {
			_, err := hbs.Heartbeat(ctx, h.agent, h.cycle)
			if kept := err == nil; kept != h.kept || (err != nil && !errors.Is(err, core.ErrNotFound)) {
				t.Errorf("heartbeat %s %s: error = %v, want kept %v", h.agent, h.cycle, err, h.kept)
			}
		}
	})
	t.Run("incidents", func(t *testing.T) {
		for id := range incidents {
			_, err := s.Incidents().Incident(ctx, id)
			wantKept := id != "resolved-old"
			if kept := err == nil; kept != wantKept || (err != nil && !errors.Is(err, core.ErrNotFound)) {
				t.Errorf("incident %s: error = %v, want kept %v", id, err, wantKept)
			}
		}
		// The open one is still escalated when nobody claims it.
		open, err := s.Incidents().Unclaimed(ctx, now, 1)
		if err != nil || len(open) != 1 || open[0].ID != "open" {
			t.Errorf("Unclaimed() = %+v, %v; want the open incident", open, err)
		}
	})
	t.Run("reminders", func(t *testing.T) {
		for text, id := range reminderIDs {
			_, err := s.Reminders().Reminder(ctx, id)
			wantKept := text == "done-new" || text == "sent-new" || text == "waiting"
			if kept := err == nil; kept != wantKept || (err != nil && !errors.Is(err, core.ErrNotFound)) {
				t.Errorf("reminder %s: error = %v, want kept %v", text, err, wantKept)
			}
		}
	})
	t.Run("tasks and notes", func(t *testing.T) {
		// Done tasks are listed nowhere; the table says what is left.
		rows, err := s.DB.Query(ctx, `SELECT body FROM notebook`)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var body string
			must(rows.Scan(&body))
			got = append(got, body)
		}
		must(rows.Err())
		if want := []string{"task-new", "task-open", "note-old"}; !sameSet(got, want) {
			t.Errorf("notebook = %v, want %v", got, want)
		}
	})
	t.Run("consumed events", func(t *testing.T) {
		for ev, c := range consumed {
			// A mark that went lets the event be consumed again.
			e := wake.Event{Source: ev[0], ID: ev[1]}
			firsts, err := s.ConsumeEvents(ctx, []wake.Event{e}, now)
			if first := firsts[e]; err != nil || first == c.kept {
				t.Errorf("event %v: ConsumeEvents() = %v, %v; want kept %v", ev, firsts, err, c.kept)
			}
		}
	})
}

// sameSet says whether a and b hold the same strings, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	seen := map[string]int{}
	for _, s := range a {
		seen[s]++
	}
	for _, s := range b {
		seen[s]--
	}
	for _, n := range seen {
		if n != 0 {
			return false
		}
	}
	return true
}
