package store_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestIncidents: an incident is read back as written; the first claim
// wins, a second and a claim on a resolved incident change nothing; only
// the open, unclaimed one is listed for escalation, and escalated once
// per tier, each tier's wait counted from the last; only the open, claimed
// one is listed for a reminder, and reminded once per last reminder.
func TestIncidents(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Incidents()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			if _, err := q.Incident(ctx, "silence:EVE:1"); !errors.Is(err, core.ErrNotFound) {
				t.Fatalf("Incident() of none = %v, want ErrNotFound", err)
			}
			for _, id := range []string{"silence:EVE:1", "silence:HAL:1", "silence:ZEUS:1"} {
				inc := oncall.Incident{ID: id, NoticeKey: "fleet:alert:" + id, RoomID: "!room:x", Body: "⚠️ silent", Kind: "alert", Subject: "EVE", OpenedAt: at}
				if err := q.PutIncident(ctx, inc); err != nil {
					t.Fatal(err)
				}
			}
			claim := func(id, who string) bool {
				t.Helper()
				ok, err := q.ClaimIncident(ctx, id, who, at.Add(time.Minute))
				if err != nil {
					t.Fatal(err)
				}
				return ok
			}
			if !claim("silence:EVE:1", "@bob:x") || claim("silence:EVE:1", "@alice:x") {
				t.Error("the first claim did not win alone")
			}
			inc, err := q.Incident(ctx, "silence:EVE:1")
			if err != nil || inc.Owner != "@bob:x" || !inc.ClaimedAt.Equal(at.Add(time.Minute)) || !inc.OpenedAt.Equal(at) ||
				!inc.ResolvedAt.IsZero() || inc.NoticeKey != "fleet:alert:silence:EVE:1" || inc.Body != "⚠️ silent" || inc.RoomID != "!room:x" {
				t.Errorf("read back %+v, %v", inc, err)
			}
			hal, _ := q.Incident(ctx, "silence:HAL:1")
			hal.ResolvedAt = at.Add(2 * time.Minute)
			if err := q.PutIncident(ctx, hal); err != nil {
				t.Fatal(err)
			}
			if claim("silence:HAL:1", "@bob:x") {
				t.Error("a resolved incident was claimed")
			}
			if got, _ := q.Incident(ctx, "silence:HAL:1"); got.Owner != "" || !got.ResolvedAt.Equal(hal.ResolvedAt) {
				t.Errorf("resolved incident read back %+v", got)
			}
			if due, err := q.Unclaimed(ctx, at.Add(-time.Second), 2); err != nil || len(due) != 0 {
				t.Errorf("Unclaimed() before any opened = %+v, %v", due, err)
			}
			due, err := q.Unclaimed(ctx, at, 2)
			if err != nil || len(due) != 1 || due[0].ID != "silence:ZEUS:1" || due[0].Tier != 0 {
				t.Fatalf("Unclaimed() = %+v, %v; want ZEUS alone, at tier 0", due, err)
			}
			for i, want := range []bool{true, false} {
				if ok, err := q.EscalateIncident(ctx, "silence:ZEUS:1", 0, at.Add(time.Hour)); err != nil || ok != want {
					t.Errorf("EscalateIncident() #%d = %v, %v; want %v", i+1, ok, err, want)
				}
			}
			if due, err := q.Unclaimed(ctx, at.Add(time.Hour-time.Second), 2); err != nil || len(due) != 0 {
				t.Errorf("Unclaimed() before the next tier's wait = %+v, %v", due, err)
			}
			if due, err := q.Unclaimed(ctx, at.Add(time.Hour), 2); err != nil || len(due) != 1 || due[0].Tier != 1 || !due[0].EscalatedAt.Equal(at.Add(time.Hour)) {
				t.Errorf("Unclaimed() after the first tier = %+v, %v; want ZEUS at tier 1", due, err)
			}
			if due, err := q.Unclaimed(ctx, at.Add(time.Hour), 1); err != nil || len(due) != 0 {
				t.Errorf("Unclaimed() with one tier, after it = %+v, %v", due, err)
			}
			if due, err := q.Unreminded(ctx, at); err != nil || len(due) != 0 {
				t.Errorf("Unreminded() before the claim = %+v, %v", due, err)
			}
			due, err = q.Unreminded(ctx, at.Add(time.Minute))
			if err != nil || len(due) != 1 || due[0].ID != "silence:EVE:1" {
				t.Fatalf("Unreminded() = %+v, %v; want EVE alone", due, err)
			}
			for i, want := range []bool{true, false} {
				if ok, err := q.RemindIncident(ctx, "silence:EVE:1", time.Time{}, at.Add(time.Hour)); err != nil || ok != want {
					t.Errorf("RemindIncident() #%d = %v, %v; want %v", i+1, ok, err, want)
				}
			}
			if due, err := q.Unreminded(ctx, at.Add(time.Hour-time.Second)); err != nil || len(due) != 0 {
				t.Errorf("Unreminded() before the next reminder = %+v, %v", due, err)
			}
			if due, err := q.Unreminded(ctx, at.Add(time.Hour)); err != nil || len(due) != 1 || !due[0].RemindedAt.Equal(at.Add(time.Hour)) {
				t.Errorf("Unreminded() an hour on = %+v, %v", due, err)
			}
		})
	}
}

// TestIncidentMembers: an incident folded into another is read back with
// its parent, listed among its members and not for escalation; the open
// incidents of a kind leave the resolved out.
func TestIncidentMembers(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Incidents()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			for i, inc := range []oncall.Incident{
				{ID: "silence:ZEUS:1", NoticeKey: "fleet:alert:ZEUS:1", Kind: "alert", Subject: "ZEUS"},
				{ID: "silence:EVE:1", Kind: "offline", Subject: "EVE", Parent: "silence:ZEUS:1"},
				{ID: "silence:JADE:1", Kind: "alert", Subject: "JADE", Parent: "silence:ZEUS:1"},
				{ID: "crash-loop:HAL:b7", NoticeKey: "crash-loop:HAL:b7", Kind: "crash-loop", Subject: "HAL", ResolvedAt: at.Add(time.Hour)},
				{ID: "crash-loop:EVE:b2", NoticeKey: "crash-loop:EVE:b2", Kind: "crash-loop", Subject: "EVE"},
			} {
				inc.RoomID, inc.Body, inc.OpenedAt = "!room:x", "silent", at.Add(time.Duration(i)*time.Second)
				if err := q.PutIncident(ctx, inc); err != nil {
					t.Fatal(err)
				}
			}
			ids := func(incs []oncall.Incident, err error) []string { return incidentIDs(t, incs, err) }
			if got := ids(q.Members(ctx, "silence:ZEUS:1")); !slices.Equal(got, []string{"silence:EVE:1", "silence:JADE:1"}) {
				t.Errorf("Members(ZEUS) = %v", got)
			}
			if got, _ := q.Incident(ctx, "silence:EVE:1"); got.Parent != "silence:ZEUS:1" {
				t.Errorf("EVE read back with parent %q", got.Parent)
			}
			if got := ids(q.Unclaimed(ctx, at.Add(time.Hour), 1)); !slices.Equal(got, []string{"silence:ZEUS:1", "crash-loop:EVE:b2"}) {
				t.Errorf("Unclaimed() = %v, want the incidents with an alert of their own", got)
			}
			if got := ids(q.OpenIncidents(ctx, "crash-loop")); !slices.Equal(got, []string{"crash-loop:EVE:b2"}) {
				t.Errorf("OpenIncidents(crash-loop) = %v, want the open one", got)
			}
		})
	}
}

// TestOpenIncidentLookups: the open incident of a kind about a subject is
// the oldest open one with an alert of its own, whatever else is open or
// resolved; the recent open incidents of a kind are those opened within
// the window with an alert of their own.
func TestOpenIncidentLookups(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Incidents()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			for i, inc := range []oncall.Incident{
				{ID: "wake:blocked:c1:1", Kind: "wake", Subject: "blocked:c1", ResolvedAt: at.Add(time.Hour)},
				{ID: "wake:blocked:c1:2", Kind: "wake", Subject: "blocked:c1"},
				{ID: "wake:blocked:c1:3", Kind: "wake", Subject: "blocked:c1"},
				{ID: "wake:blocked:c2:1", Kind: "wake", Subject: "blocked:c2"},
				{ID: "trip:tw1:1", Kind: "trip", Subject: "blocked:c3"},
				{ID: "silence:ZEUS:1", Kind: "alert", Subject: "ZEUS"},
				{ID: "silence:EVE:1", Kind: "alert", Subject: "EVE", Parent: "silence:ZEUS:1"},
				{ID: "silence:HAL:1", Kind: "alert", Subject: "HAL"},
				{ID: "silence:JADE:1", Kind: "offline", Subject: "JADE"},
			} {
				inc.NoticeKey, inc.RoomID, inc.Body, inc.OpenedAt = inc.ID, "!room:x", "alert", at.Add(time.Duration(i)*time.Minute)
				if err := q.PutIncident(ctx, inc); err != nil {
					t.Fatal(err)
				}
			}
			for _, c := range []struct {
				kind, subject, want string
			}{
				{"wake", "blocked:c1", "wake:blocked:c1:2"},
				{"wake", "blocked:c2", "wake:blocked:c2:1"},
				{"wake", "blocked:c3", ""},
				{"alert", "EVE", ""},
				{"alert", "ZEUS", "silence:ZEUS:1"},
			} {
				inc, err := q.OpenIncidentOf(ctx, c.kind, c.subject)
				switch {
				case c.want == "" && !errors.Is(err, core.ErrNotFound):
					t.Errorf("OpenIncidentOf(%s, %s) = %s, %v; want ErrNotFound", c.kind, c.subject, inc.ID, err)
				case c.want != "" && (err != nil || inc.ID != c.want):
					t.Errorf("OpenIncidentOf(%s, %s) = %s, %v; want %s", c.kind, c.subject, inc.ID, err, c.want)
				}
			}
			ids := func(incs []oncall.Incident, err error) []string { return incidentIDs(t, incs, err) }
			if got := ids(q.OpenSince(ctx, "alert", at)); !slices.Equal(got, []string{"silence:ZEUS:1", "silence:HAL:1"}) {
				t.Errorf("OpenSince(alert, 9:00) = %v, want ZEUS and HAL", got)
			}
			if got := ids(q.OpenSince(ctx, "alert", at.Add(6*time.Minute))); !slices.Equal(got, []string{"silence:HAL:1"}) {
				t.Errorf("OpenSince(alert, 9:06) = %v, want HAL alone", got)
			}
			if got := ids(q.OpenSince(ctx, "alert", at.Add(8*time.Minute))); len(got) != 0 {
				t.Errorf("OpenSince(alert, 9:08) = %v, want none", got)
			}
		})
	}
}

// TestHeldIncidents: an open incident whose alert a silence holds is
// listed with the alert's key and mentions; one posted, folded into
// another or resolved is not.
func TestHeldIncidents(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Incidents()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			for i, inc := range []oncall.Incident{
				{ID: "silence:EVE:1", HeldKey: "fleet:offline:EVE:1", HeldMentions: []string{"@alice:x", "@bob:x"}},
				{ID: "silence:HAL:1", NoticeKey: "fleet:alert:HAL:1"},
				{ID: "silence:JADE:1", HeldKey: "fleet:alert:JADE:1", Parent: "silence:EVE:1"},
				{ID: "crash-loop:EVE:b2", HeldKey: "crash-loop:EVE:b2", ResolvedAt: at.Add(time.Hour)},
				{ID: "spend:alert:EVE:2026-12-01", HeldKey: "spend:alert:EVE:2026-12-01"},
			} {
				inc.Kind, inc.Subject, inc.RoomID, inc.Body, inc.OpenedAt = "offline", "EVE", "!room:x", "held", at.Add(time.Duration(i)*time.Second)
				if err := q.PutIncident(ctx, inc); err != nil {
					t.Fatal(err)
				}
			}
			held, err := q.HeldIncidents(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(held) != 2 || held[0].ID != "silence:EVE:1" || held[1].ID != "spend:alert:EVE:2026-12-01" {
				t.Fatalf("HeldIncidents() = %+v, want EVE's silence and the budget alert", held)
			}
			if h := held[0]; h.HeldKey != "fleet:offline:EVE:1" || !slices.Equal(h.HeldMentions, []string{"@alice:x", "@bob:x"}) || h.Posted() {
				t.Errorf("EVE's held alert read back as %+v", h)
			}
			if h := held[1]; len(h.HeldMentions) != 0 {
				t.Errorf("the budget alert's mentions read back as %v, want none", h.HeldMentions)
			}
		})
	}
}

// incidentIDs are the IDs of incs, a listing that must not have failed.
func incidentIDs(t *testing.T, incs []oncall.Incident, err error) []string {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, inc := range incs {
		out = append(out, inc.ID)
	}
	return out
}

// TestIncidentClaimsLapseAndChangeHands: a claim is handed on only by
// its owner's name, renewed by its owner, listed once it is older than
// the hold, and lapsed once, for the claim it was (a renewal meanwhile
// keeps it); the lapse counts the admins' tier as called.
func TestIncidentClaimsLapseAndChangeHands(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Incidents()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			if err := q.PutIncident(ctx, oncall.Incident{ID: "eve", NoticeKey: "alert:eve", RoomID: "!room:x", Body: "silent", Kind: "alert",
				Subject: "EVE", OpenedAt: at}); err != nil {
				t.Fatal(err)
			}
			if ok, err := q.ReclaimIncident(ctx, "eve", "", "@mallory:x", at); err != nil || ok {
				t.Fatalf("a reclaim of an unclaimed incident = %v, %v; want nothing", ok, err)
			}
			if ok, err := q.ClaimIncident(ctx, "eve", "@bob:x", at); err != nil || !ok {
				t.Fatal(ok, err)
			}
			if ok, err := q.ReclaimIncident(ctx, "eve", "@carol:x", "@mallory:x", at); err != nil || ok {
				t.Fatalf("a reclaim in another's name = %v, %v; want nothing", ok, err)
			}
			renewed := at.Add(30 * time.Minute)
			if ok, err := q.ReclaimIncident(ctx, "eve", "@bob:x", "@bob:x", renewed); err != nil || !ok {
				t.Fatalf("the owner's renewal = %v, %v", ok, err)
			}
			if due, err := q.ClaimedBefore(ctx, renewed.Add(-time.Millisecond)); err != nil || len(due) != 0 {
				t.Fatalf("ClaimedBefore just before the renewal = %+v, %v; want none", due, err)
			}
			due, err := q.ClaimedBefore(ctx, renewed)
			if err != nil || len(due) != 1 || due[0].Owner != "@bob:x" {
				t.Fatalf("ClaimedBefore the renewal = %+v, %v; want bob's claim", due, err)
			}
			if ok, err := q.LapseClaim(ctx, "eve", "@bob:x", at, renewed); err != nil || ok {
				t.Fatalf("lapsing the claim as it was before the renewal = %v, %v; want nothing", ok, err)
			}
			lapsedAt := renewed.Add(time.Hour)
			if ok, err := q.LapseClaim(ctx, "eve", "@bob:x", renewed, lapsedAt); err != nil || !ok {
				t.Fatalf("lapse = %v, %v", ok, err)
			}
			inc, err := q.Incident(ctx, "eve")
			if err != nil || inc.Owner != "" || !inc.ClaimedAt.IsZero() || inc.Tier != 1 || !inc.EscalatedAt.Equal(lapsedAt) {
				t.Errorf("after the lapse %+v, %v; want unclaimed, the admins' tier called at the lapse", inc, err)
			}
			if ok, err := q.LapseClaim(ctx, "eve", "@bob:x", renewed, lapsedAt); err != nil || ok {
				t.Errorf("a second lapse = %v, %v; want nothing", ok, err)
			}
		})
	}
}
