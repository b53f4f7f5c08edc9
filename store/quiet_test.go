package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
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
			if set, err := q.QuietSettings(ctx, alice); err != nil || set != (quiet.Settings{Digest: quiet.NoDigest}) {
				t.Fatalf("nobody's settings = %+v, %v", set, err)
			}
			if err := people.SetTimeZone(ctx, puppet, "Europe/Berlin"); err != nil {
				t.Fatal(err)
			}
			night := quiet.Hours{Set: true, From: 22 * 60, To: 7 * 60}
			if err := q.SetQuietHours(ctx, puppet, night); err != nil {
				t.Fatal(err)
			}
			if err := q.SetDigest(ctx, puppet, 9*60); err != nil {
				t.Fatal(err)
			}
			want := quiet.Settings{Hours: night, Digest: 9 * 60, Zone: "Europe/Berlin"}
			if set, err := q.QuietSettings(ctx, puppet); err != nil || set != want {
				t.Fatalf("settings = %+v, %v", set, err)
			}
			// An evaluator pass reads everyone's settings at once.
			all, err := q.QuietSettingsOf(ctx, []string{puppet, alice, puppet})
			if err != nil || len(all) != 2 || all[puppet] != want || all[alice] != (quiet.Settings{Digest: quiet.NoDigest}) {
				t.Fatalf("settings of the puppet and of nobody = %+v, %v", all, err)
			}
			at := time.Date(2026, 12, 1, 22, 30, 0, 0, time.UTC)
			var pushes []quiet.Held
			for i, label := range []string{"first", "second"} {
				pushes = append(pushes, quiet.Held{Owner: puppet, Kind: quiet.Quiet, TripwireID: "tw_1", Trip: int64(i + 1), Label: label, Summary: "gi is 0.5", At: at.Add(time.Duration(i) * time.Hour)})
			}
			if err := q.HoldPush(ctx, pushes...); err != nil {
				t.Fatal(err)
			}
			if err := q.HoldPush(ctx, quiet.Held{Owner: "@bob:x", Kind: quiet.Quiet, TripwireID: "tw_2", Trip: 1, Label: "Bob's", At: at}); err != nil {
				t.Fatal(err)
			}
			if err := q.HoldPush(ctx, quiet.Held{Owner: puppet, Kind: quiet.Daily, TripwireID: "tw_3", Trip: 1, Label: "journaled", At: at}); err != nil {
				t.Fatal(err)
			}

			// Linking moves the hours (with the person row) and what they hold.
			if _, err := people.MoveReminders(ctx, puppet, alice); err != nil {
				t.Fatal(err)
			}
			if n, err := q.MoveHeld(ctx, puppet, alice); err != nil || n != 3 {
				t.Fatalf("moved %d held pushes, %v", n, err)
			}
			if set, err := q.QuietSettings(ctx, alice); err != nil || set != want {
				t.Errorf("Alice's settings after linking = %+v, %v; want the puppet's", set, err)
			}
			owners, err := q.HeldOwners(ctx, quiet.Quiet)
			if err != nil || len(owners) != 2 || owners[0] != "@alice:x" || owners[1] != "@bob:x" {
				t.Fatalf("owners = %q, %v", owners, err)
			}
			if owners, err := q.HeldOwners(ctx, quiet.Daily); err != nil || len(owners) != 1 || owners[0] != alice {
				t.Fatalf("daily owners = %q, %v", owners, err)
			}
			// Taken up to a time: what came later stays.
			held, err := q.TakeHeld(ctx, alice, quiet.Quiet, at)
			if err != nil || len(held) != 1 || held[0].Label != "first" || held[0].Kind != quiet.Quiet || !held[0].At.Equal(at) {
				t.Fatalf("took %+v, %v", held, err)
			}
			held, err = q.TakeHeld(ctx, alice, quiet.Quiet, at.Add(time.Hour))
			if err != nil || len(held) != 1 || held[0].Trip != 2 {
				t.Fatalf("took next %+v, %v", held, err)
			}
			if held, err := q.TakeHeld(ctx, alice, quiet.Quiet, at.Add(time.Hour)); err != nil || len(held) != 0 {
				t.Errorf("took again %+v, %v", held, err)
			}
			if held, err := q.TakeHeld(ctx, alice, quiet.Daily, at); err != nil || len(held) != 1 || held[0].Label != "journaled" {
				t.Errorf("took the daily %+v, %v", held, err)
			}
			if err := q.SetQuietHours(ctx, alice, quiet.Off); err != nil {
				t.Fatal(err)
			}
			if err := q.SetDigest(ctx, alice, quiet.NoDigest); err != nil {
				t.Fatal(err)
			}
			if set, err := q.QuietSettings(ctx, alice); err != nil || set != (quiet.Settings{Digest: quiet.NoDigest, Zone: "Europe/Berlin"}) {
				t.Errorf("after off = %+v, %v", set, err)
			}
		})
	}
}
