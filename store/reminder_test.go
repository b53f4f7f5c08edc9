package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestReminders(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			q := testdb.OpenStore(t, engine).Reminders()
			at := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
			add := func(owner, text string, due time.Time) int64 {
				t.Helper()
				id, err := q.InsertReminder(ctx, reminder.Reminder{Owner: owner, Text: text, Due: due, At: due, Every: reminder.Weekly,
					Zone: "Europe/Berlin", Status: reminder.Waiting, CreatedAt: at})
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			later := add("@telegram_1:x", "later", at.Add(time.Hour))
			soon := add("@telegram_1:x", "soon", at.Add(time.Minute))
			add("@bob:x", "bob's", at.Add(2*time.Minute))

			due, err := q.DueReminders(ctx, at.Add(2*time.Minute), 10)
			if err != nil || len(due) != 2 || due[0].ID != soon || due[1].Owner != "@bob:x" {
				t.Fatalf("due = %+v, %v", due, err)
			}
			if r := due[0]; r.Text != "soon" || !r.Due.Equal(at.Add(time.Minute)) || r.Every != reminder.Weekly || r.Zone != "Europe/Berlin" {
				t.Errorf("read back %+v", r)
			}
			r := due[0]
			r.Status, r.Deliveries = reminder.Sent, 1
			if err := q.UpdateReminder(ctx, r); err != nil {
				t.Fatal(err)
			}
			if got, err := q.Reminder(ctx, soon); err != nil || got.Status != reminder.Sent || got.Deliveries != 1 {
				t.Errorf("after update: %+v, %v", got, err)
			}
			if _, err := q.Reminder(ctx, 999); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("a missing reminder: %v", err)
			}

			if err := q.SetTimeZone(ctx, "@telegram_1:x", "Asia/Tokyo"); err != nil {
				t.Fatal(err)
			}
			n, err := q.MoveReminders(ctx, "@telegram_1:x", "@alice:x")
			if err != nil || n != 2 {
				t.Fatalf("moved %d, %v", n, err)
			}
			open, err := q.OpenReminders(ctx, "@alice:x")
			if err != nil || len(open) != 1 || open[0].ID != later {
				t.Errorf("Alice's open reminders = %+v, %v", open, err)
			}
			if zone, err := q.TimeZone(ctx, "@alice:x"); err != nil || zone != "Asia/Tokyo" {
				t.Errorf("Alice's zone = %q, %v; want the puppet's", zone, err)
			}
			if zone, err := q.TimeZone(ctx, "@telegram_1:x"); err != nil || zone != "" {
				t.Errorf("the puppet's zone = %q, %v; want none", zone, err)
			}
		})
	}
}
