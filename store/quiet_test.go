package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/internal/testdb"
)

// TestQuietHours: a person's quiet hours and held pushes are kept, taken
// once, oldest first, and follow a linked puppet to its account.
func TestQuietHours(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			st := testdb.OpenStore(t, engine)
			q, people := st.Quiet(), st.Reminders()
			const puppet, alice = "@telegram_1:x", "@alice:x"
			if h, zone, err := q.QuietHours(ctx, alice); err != nil || h.Set || zone != "" {
				t.Fatalf("nobody's hours = %+v %q, %v", h, zone, err)
			}
			if err := people.SetTimeZone(ctx, puppet, "Europe/Berlin"); err != nil {
				t.Fatal(err)
			}
			night := quiet.Hours{Set: true, From: 22 * 60, To: 7 * 60}
			if err := q.SetQuietHours(ctx, puppet, night); err != nil {
				t.Fatal(err)
			}
			if h, zone, err := q.QuietHours(ctx, puppet); err != nil || h != night || zone != "Europe/Berlin" {
				t.Fatalf("hours = %+v %q, %v", h, zone, err)
			}
			at := time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC)
			for i, label := range []string{"first", "second"} {
				if err := q.HoldPush(ctx, quiet.Held{Owner: puppet, TripwireID: "tw_1", Trip: int64(i + 1), Label: label, Summary: "gi is 0.5", At: at.Add(time.Duration(i) * time.Hour)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := q.HoldPush(ctx, quiet.Held{Owner: "@bob:x", TripwireID: "tw_2", Trip: 1, Label: "Bob's", At: at}); err != nil {
				t.Fatal(err)
			}

			// Linking moves the hours (with the person row) and what they hold.
			if _, err := people.MoveReminders(ctx, puppet, alice); err != nil {
				t.Fatal(err)
			}
			if n, err := q.MoveHeld(ctx, puppet, alice); err != nil || n != 2 {
				t.Fatalf("moved %d held pushes, %v", n, err)
			}
			if h, _, err := q.QuietHours(ctx, alice); err != nil || h != night {
				t.Errorf("Alice's hours after linking = %+v, %v; want the puppet's", h, err)
			}
			owners, err := q.HeldOwners(ctx)
			if err != nil || len(owners) != 2 || owners[0] != "@alice:x" || owners[1] != "@bob:x" {
				t.Fatalf("owners = %q, %v", owners, err)
			}
			held, err := q.TakeHeld(ctx, alice)
			if err != nil || len(held) != 2 || held[0].Label != "first" || held[1].Trip != 2 || !held[1].At.Equal(at.Add(time.Hour)) {
				t.Fatalf("took %+v, %v", held, err)
			}
			if held, err := q.TakeHeld(ctx, alice); err != nil || len(held) != 0 {
				t.Errorf("took again %+v, %v", held, err)
			}
			if err := q.SetQuietHours(ctx, alice, quiet.Off); err != nil {
				t.Fatal(err)
			}
			if h, zone, err := q.QuietHours(ctx, alice); err != nil || h.Set || zone != "Europe/Berlin" {
				t.Errorf("after off = %+v %q, %v", h, zone, err)
			}
		})
	}
}
