package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestIncidentSnoozes: a snooze is read back with who set it and until
// when; a resolved incident is not snoozed; only an open incident whose
// snooze ended is listed to wake, and woken once (a second snooze set
// meanwhile is not woken by the first's end).
func TestIncidentSnoozes(t *testing.T) {
	ctx := context.Background()
	q := testdb.OpenStore(t, testEngine).Incidents()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	for _, id := range []string{"silence:EVE:1", "silence:HAL:1"} {
		if err := q.PutIncident(ctx, oncall.Incident{ID: id, NoticeKey: "fleet:alert:" + id, RoomID: "!room:x", Body: "⚠️ silent", Kind: "alert", OpenedAt: at}); err != nil {
			t.Fatal(err)
		}
	}
	snooze := func(id string, until time.Time) bool {
		t.Helper()
		ok, err := q.SnoozeIncident(ctx, id, "@bob:x", at, until)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !snooze("silence:EVE:1", at.Add(time.Hour)) {
		t.Fatal("an open incident was not snoozed")
	}
	inc, err := q.Incident(ctx, "silence:EVE:1")
	if err != nil || inc.SnoozedBy != "@bob:x" || !inc.SnoozedAt.Equal(at) || !inc.SnoozedUntil.Equal(at.Add(time.Hour)) || !inc.Snoozed(at.Add(59*time.Minute)) {
		t.Errorf("read back %+v, %v", inc, err)
	}
	hal, _ := q.Incident(ctx, "silence:HAL:1")
	hal.ResolvedAt = at
	if err := q.PutIncident(ctx, hal); err != nil {
		t.Fatal(err)
	}
	if snooze("silence:HAL:1", at.Add(time.Hour)) {
		t.Error("a resolved incident was snoozed")
	}
	if due, err := q.SnoozesEnded(ctx, at.Add(59*time.Minute)); err != nil || len(due) != 0 {
		t.Errorf("SnoozesEnded() before the end = %+v, %v", due, err)
	}
	due, err := q.SnoozesEnded(ctx, at.Add(time.Hour))
	if err != nil || len(due) != 1 || due[0].ID != "silence:EVE:1" {
		t.Fatalf("SnoozesEnded() at the end = %+v, %v; want EVE's", due, err)
	}
	snooze("silence:EVE:1", at.Add(2*time.Hour))
	if ok, err := q.WakeIncident(ctx, "silence:EVE:1", at.Add(time.Hour)); err != nil || ok {
		t.Errorf("the first snooze's end woke the second: %v, %v", ok, err)
	}
	if ok, err := q.WakeIncident(ctx, "silence:EVE:1", at.Add(2*time.Hour)); err != nil || !ok {
		t.Errorf("WakeIncident() = %v, %v; want woken", ok, err)
	}
	if ok, _ := q.WakeIncident(ctx, "silence:EVE:1", at.Add(2*time.Hour)); ok {
		t.Error("woken twice")
	}
	if inc, _ := q.Incident(ctx, "silence:EVE:1"); inc.SnoozedBy != "" || !inc.SnoozedUntil.IsZero() {
		t.Errorf("after waking %+v", inc)
	}
	if due, _ := q.SnoozesEnded(ctx, at.Add(3*time.Hour)); len(due) != 0 {
		t.Errorf("SnoozesEnded() after waking = %+v", due)
	}
}

// TestSilences: a silence is read back as written; it counts what it
// holds and keeps the first lines only; it ends once, and an ended one
// is no longer active.
func TestSilences(t *testing.T) {
	ctx := context.Background()
	q := testdb.OpenStore(t, testEngine).Incidents()
	at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	if _, err := q.Silence(ctx, 1); !errors.Is(err, core.ErrNotFound) {
		t.Fatalf("Silence() of none = %v, want ErrNotFound", err)
	}
	s, err := q.AddSilence(ctx, oncall.Silence{Scope: "@alice:x", Target: "integrity.gi", Reason: "deploy *now*", By: "@alice:x", RoomID: "!dm:x",
		StartedAt: at, EndsAt: at.Add(2 * time.Hour), UntilResolved: true})
	if err != nil || s.ID == 0 {
		t.Fatalf("AddSilence() = %+v, %v", s, err)
	}
	for i, what := range []string{"first", "second\nline", "third"} {
		if err := q.HoldInSilence(ctx, s.ID, i == 0, what, 2); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.HoldInSilence(ctx, s.ID+1, true, "none", 2); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("holding in no silence: %v, want ErrNotFound", err)
	}
	got, err := q.Silence(ctx, s.ID)
	if err != nil || got.Scope != "@alice:x" || got.Target != "integrity.gi" || got.Reason != "deploy *now*" || got.RoomID != "!dm:x" ||
		!got.StartedAt.Equal(at) || !got.EndsAt.Equal(at.Add(2*time.Hour)) || !got.UntilResolved || !got.EndedAt.IsZero() ||
		got.HeldAlerts != 1 || got.HeldTrips != 2 || len(got.Held) != 2 || got.Held[0] != "first" || got.Held[1] != "second line" {
		t.Errorf("read back %+v, %v", got, err)
	}
	if active, err := q.ActiveSilences(ctx); err != nil || len(active) != 1 || active[0].ID != s.ID {
		t.Errorf("ActiveSilences() = %+v, %v", active, err)
	}
	if ok, err := q.EndSilence(ctx, s.ID, at.Add(time.Hour)); err != nil || !ok {
		t.Errorf("EndSilence() = %v, %v", ok, err)
	}
	if ok, _ := q.EndSilence(ctx, s.ID, at.Add(2*time.Hour)); ok {
		t.Error("ended twice")
	}
	if active, err := q.ActiveSilences(ctx); err != nil || len(active) != 0 {
		t.Errorf("ActiveSilences() after the end = %+v, %v", active, err)
	}
	if got, _ := q.Silence(ctx, s.ID); !got.EndedAt.Equal(at.Add(time.Hour)) {
		t.Errorf("ended at %v", got.EndedAt)
	}
}
