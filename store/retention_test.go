package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// The retention service's own rules (a window for each kind, batches, a
// stop at the first error) are tested in core/retention on a fake store;
// here, which rows each of the store's prune queries removes.

// retentionWindows differ from each other, so that a kind pruned by
// another's window fails the test.
var retentionWindows = retention.Config{Outbox: 72 * time.Hour, Events: 48 * time.Hour, Pending: 24 * time.Hour,
	Journal: 96 * time.Hour, Deleted: 120 * time.Hour}

var historyWindow = history.Config{Retention: 200 * time.Hour}

// TestRetentionWindows writes, for every kind the retention pass prunes, a
// row a millisecond inside its window and one a millisecond outside, and
// checks that one pass removes exactly the rows outside and what it kept
// on purpose stays.
func TestRetentionWindows(t *testing.T) {
	f := newTWFixture(t, testconfig.Tripwires())
	ctx, s := f.Ctx, f.Store
	start := f.Clock.Now()
	now := start.Add(1000 * time.Hour)
	inside := func(window time.Duration) time.Time { return now.Add(-window + time.Millisecond) }
	outside := func(window time.Duration) time.Time { return now.Add(-window - time.Millisecond) }
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Tripwires: one fires (so it has a trip), then two are deleted, one
	// just outside retention.deleted and one just inside.
	f.Set("integrity.gi", 0.5)
	gone := f.Arm("@alice:example.org", services.GIBelow("gone", 0.7, false, 60))
	f.Tick()
	kept := f.Arm("@alice:example.org", services.GIBelow("kept", 0.7, false, 60))
	live := f.Arm("@alice:example.org", services.GIBelow("live", 0.7, false, 60))
	f.Clock.Set(outside(retentionWindows.Deleted))
	must(f.Service.Delete(ctx, "@alice:example.org", gone.ID))
	f.Clock.Set(inside(retentionWindows.Deleted))
	must(f.Service.Delete(ctx, "@alice:example.org", kept.ID))

	// Sent notices; "root" is old but a notice sent within the window
	// threads on it, "waited" is old and a waiting edit targets it.
	out := s.Outbox()
	for _, n := range []struct {
		key, target string
		sent        time.Time
	}{
		{"old", "", outside(retentionWindows.Outbox)},
		{"new", "", inside(retentionWindows.Outbox)},
		{"root", "", outside(retentionWindows.Outbox)},
		{"reply", "root", inside(retentionWindows.Outbox)},
		{"waited", "", outside(retentionWindows.Outbox)},
		{"edit", "waited", time.Time{}},
	} {
		must(out.Enqueue(ctx, core.Notice{Key: n.key, RoomID: "!r", Kind: core.NoticeMessage, Body: n.key, Target: n.target}))
		if !n.sent.IsZero() {
			must(out.MarkSent(ctx, []string{n.key}, "$"+n.key, n.sent))
		}
	}

	// Handled events, and the newest mark, made now.
	for id, at := range map[string]time.Time{"$old": outside(retentionWindows.Events),
		"$new": inside(retentionWindows.Events), "$now": now} {
		_, err := s.MarkHandled(ctx, id, at)
		must(err)
	}

	// Confirmations: answered or expired just outside and inside, and one
	// still open.
	pending := map[string]struct {
		resolved, expires time.Time
	}{
		"answered-old": {outside(retentionWindows.Pending), now},
		"answered-new": {inside(retentionWindows.Pending), now},
		"expired-old":  {time.Time{}, outside(retentionWindows.Pending)},
		"expired-new":  {time.Time{}, inside(retentionWindows.Pending)},
		"open":         {time.Time{}, now.Add(time.Hour)},
	}
	for key, p := range pending {
		must(s.AddPending(ctx, core.Pending{Key: key, Kind: "tripwire", RoomID: "!r", Requester: "@a",
			CreatedAt: start, ExpiresAt: p.expires}))
		if !p.resolved.IsZero() {
			_, err := s.ResolvePending(ctx, key, core.Confirmed, p.resolved)
			must(err)
		}
	}

	// Link codes: one expired a moment ago, one expires in a moment.
	must(s.AddLinkCode(ctx, core.LinkCode{Code: "expired", From: "@telegram_1:x", Network: "telegram", ExpiresAt: now.Add(-time.Millisecond)}))
	must(s.AddLinkCode(ctx, core.LinkCode{Code: "valid", From: "@telegram_2:x", Network: "telegram", ExpiresAt: now.Add(time.Millisecond)}))
	// Wrong codes an account sent: one too old to count towards a lock,
	// one that still counts.
	must(s.AddLinkFailure(ctx, "@telegram_3:x", now.Add(-core.LinkCodeTTL-time.Millisecond)))
	must(s.AddLinkFailure(ctx, "@telegram_3:x", now.Add(-core.LinkCodeTTL+time.Millisecond)))

	// Agent journals: EVE has an old cycle and a current one; ADA's only
	// cycle is far older than the window but is its current one.
	entry := func(agent, cycle, id string, at time.Time) fleet.AgentJournalEntry {
		return fleet.AgentJournalEntry{Agent: agent, Cycle: cycle, EntryID: id, Title: id, Content: id,
			ContentSignature: fleet.ContentSignature(id), Timestamp: at, ReceivedAt: at}
	}
	for _, e := range []fleet.AgentJournalEntry{
		entry("EVE", "C-1", "eve-old", outside(retentionWindows.Journal)),
		entry("EVE", "C-1", "eve-new", inside(retentionWindows.Journal)),
		entry("EVE", "C-2", "eve-current", now),
		entry("ADA", "C-9", "ada-current", outside(10*retentionWindows.Journal)),
	} {
		must(s.AgentJournal().AppendJournal(ctx, e))
	}

	// Source history: the first pass read GI long ago; two more readings
	// come just inside history.retention and an hour ago. The first goes,
	// the second becomes a bucket, the third stays as read.
	for _, at := range []time.Time{inside(historyWindow.Retention), now.Add(-time.Hour)} {
		must(s.Tripwires().ApplyTick(ctx, tripwire.TickWrites{Readings: []history.Reading{{Source: core.SourceRef{Kind: "integrity.gi"}, At: at, Value: 0.5}}}))
	}

	f.Clock.Set(now)
	r := services.Wiring{Store: s, Clock: f.Clock}.Retention(retentionWindows, func(d *retention.Deps) { d.History = historyWindow }).Pass(ctx)
	if r.Err != nil {
		t.Fatalf("Pass() error = %v", r.Err)
	}
	want := retention.Report{At: now, Notices: 1, Events: 1, Pending: 2, LinkCodes: 2, Journal: 1, Tripwires: 1, Downsampled: 2, History: 1}
	if r != want {
		t.Errorf("Pass() = %+v, want %+v", r, want)
	}

	t.Run("source history", func(t *testing.T) {
		points, err := s.Points(ctx, core.SourceRef{Kind: "integrity.gi"}, start, now)
		if err != nil {
			t.Fatal(err)
		}
		if len(points) != 2 || !points[0].Bucket || points[1].Bucket || !points[1].At.Equal(now.Add(-time.Hour)) {
			t.Errorf("history of integrity.gi = %+v, want a bucket, then the reading of an hour ago", points)
		}
	})
	t.Run("sent notices", func(t *testing.T) {
		for key, wantKept := range map[string]bool{"old": false, "new": true, "root": true, "reply": true, "waited": true, "edit": true} {
			_, err := out.Get(ctx, key)
			if kept := err == nil; kept != wantKept || (err != nil && !errors.Is(err, core.ErrNotFound)) {
				t.Errorf("notice %s: Get() error = %v, want kept %v", key, err, wantKept)
			}
		}
	})
	t.Run("handled events", func(t *testing.T) {
		for id, wantKept := range map[string]bool{"$old": false, "$new": true, "$now": true} {
			// A mark that went lets the event be handled again.
			first, err := s.MarkHandled(ctx, id, now)
			if err != nil || first == wantKept {
				t.Errorf("event %s: MarkHandled() = %v, %v; want kept %v", id, first, err, wantKept)
			}
		}
	})
	t.Run("confirmations", func(t *testing.T) {
		for key := range pending {
			wantKept := key == "answered-new" || key == "expired-new" || key == "open"
			_, err := s.GetPending(ctx, key)
			if kept := err == nil; kept != wantKept || (err != nil && !errors.Is(err, core.ErrNotFound)) {
				t.Errorf("confirmation %s: GetPending() error = %v, want kept %v", key, err, wantKept)
			}
		}
	})
	t.Run("link codes", func(t *testing.T) {
		if _, err := s.TakeLinkCode(ctx, "expired"); !errors.Is(err, core.ErrNotFound) {
			t.Errorf("expired code: TakeLinkCode() error = %v, want ErrNotFound", err)
		}
		if _, err := s.TakeLinkCode(ctx, "valid"); err != nil {
			t.Errorf("valid code: TakeLinkCode() error = %v", err)
		}
		if n, err := s.LinkFailures(ctx, "@telegram_3:x", time.Time{}); err != nil || n != 1 {
			t.Errorf("wrong codes left: %d (%v), want the 1 that still counts", n, err)
		}
	})
	t.Run("agent journal", func(t *testing.T) {
		for _, c := range []struct {
			agent, cycle string
			want         []string
		}{
			{"EVE", "C-1", []string{"eve-new"}},
			{"EVE", "C-2", []string{"eve-current"}},
			{"ADA", "C-9", []string{"ada-current"}},
		} {
			entries, err := s.AgentJournal().JournalEntries(ctx, c.agent, c.cycle)
			var got []string
			for _, e := range entries {
				got = append(got, e.EntryID)
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("%s %s: JournalEntries() = %v, %v; want %v", c.agent, c.cycle, got, err, c.want)
			}
		}
	})
	t.Run("deleted tripwires", func(t *testing.T) {
		for _, id := range []string{gone.ID, kept.ID} {
			if _, err := s.Tripwires().Tripwire(ctx, "@alice:example.org", id); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("deleted tripwire %s: Tripwire() error = %v, want ErrNotFound", id, err)
			}
		}
		if got := f.Get("@alice:example.org", live.ID); got.Label != "live" {
			t.Errorf("live tripwire = %+v", got)
		}
		// The pruned tripwire's trip outlives it: a deleted tripwire's
		// history is kept.
		if h := f.History("@alice:example.org", gone.ID); len(h) != 1 || h[0].TripwireID != gone.ID {
			t.Errorf("history of the pruned tripwire = %+v, want its one trip", h)
		}
		// The evaluator, which last looked before the deletions, neither
		// resets nor fires the pruned tripwire again; the live one fires.
		f.Set("integrity.gi", 0.9)
		f.Tick()
		f.Set("integrity.gi", 0.5)
		f.Tick()
		if h := f.History("@alice:example.org", gone.ID); len(h) != 1 {
			t.Errorf("after two more passes, the pruned tripwire has %d trips, want 1", len(h))
		}
		if h := f.History("@alice:example.org", live.ID); len(h) != 1 {
			t.Errorf("the live tripwire has %d trips, want 1", len(h))
		}
	})
}

// TestRetentionHandledEventsAfterALongStop checks that a Jarvis stopped for
// longer than retention.events keeps the marks of the events it handled
// last: a replay of its last sync response must still find them.
func TestRetentionHandledEventsAfterALongStop(t *testing.T) {
	f := newTWFixture(t, testconfig.Tripwires())
	ctx, s := f.Ctx, f.Store
	stopped := f.Clock.Now()
	window := retentionWindows.Events
	for id, at := range map[string]time.Time{"$last": stopped, "$near": stopped.Add(-window + time.Millisecond),
		"$far": stopped.Add(-window - time.Millisecond)} {
		if _, err := s.MarkHandled(ctx, id, at); err != nil {
			t.Fatal(err)
		}
	}
	f.Clock.Set(stopped.Add(10 * window))
	r := services.Wiring{Store: s, Clock: f.Clock}.Retention(retentionWindows).Pass(ctx)
	if r.Err != nil || r.Events != 1 {
		t.Fatalf("Pass() = %+v, want one handled event removed", r)
	}
	for id, wantKept := range map[string]bool{"$last": true, "$near": true, "$far": false} {
		if first, err := s.MarkHandled(ctx, id, f.Clock.Now()); err != nil || first == wantKept {
			t.Errorf("event %s: MarkHandled() = %v, %v; want kept %v", id, first, err, wantKept)
		}
	}
}

// TestRetentionBatches checks that a backlog larger than one batch goes
// whole in one pass, a batch at a time.
func TestRetentionBatches(t *testing.T) {
	f := newTWFixture(t, testconfig.Tripwires())
	ctx, s := f.Ctx, f.Store
	now := f.Clock.Now()
	backlog := 2*retention.Batch + 1
	err := s.InTx(ctx, func(ctx context.Context) error {
		for i := range backlog {
			if err := s.AddLinkCode(ctx, core.LinkCode{Code: fmt.Sprintf("c%d", i), From: "@telegram_1:x", Network: "telegram",
				ExpiresAt: now.Add(-time.Minute)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	r := services.Wiring{Store: s, Clock: f.Clock}.Retention(retentionWindows).Pass(ctx)
	if r.Err != nil || r.LinkCodes != backlog {
		t.Fatalf("Pass() = %+v, want %d link codes removed", r, backlog)
	}
	if _, err := s.TakeLinkCode(ctx, "c0"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("TakeLinkCode(c0) after the pass: %v, want ErrNotFound", err)
	}
}
