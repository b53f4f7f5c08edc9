package oncall_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// backupWindow holds EVE's alerts and Alertmanager's BackupRunning group
// on weekdays from 02:00 to 04:00 in Berlin.
var backupWindow = oncall.MuteTiming{Name: "nightly-backup", Targets: []string{"EVE", "alertname=BackupRunning"},
	Weekdays: []string{"monday:friday"}, Times: []oncall.TimeRange{{StartTime: "02:00", EndTime: "04:00"}}, Location: "Europe/Berlin"}

// TestMuteTimingHoldsInsideItsWindow: inside the window a fleet alert and
// an Alertmanager group named by a label are held; at its end both, still
// open, are posted after the summary; on a Saturday at the same hour
// nothing is held; a window that held nothing ends without a word.
func TestMuteTimingHoldsInsideItsWindow(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			st := testdb.OpenStore(t, engine)
			berlin, _ := time.LoadLocation("Europe/Berlin")
			// Tuesday Dec 1 2026, 02:30 in Berlin.
			clock := coretest.NewClock(time.Date(2026, 12, 1, 2, 30, 0, 0, berlin))
			svc := services.Wiring{Store: st, Clock: clock, Room: "!ops:x", Admins: []string{"@alice:x"}}.
				Oncall(oncall.Config{EscalateAfter: 15 * time.Minute, MuteTimings: []oncall.MuteTiming{backupWindow}})
			seen := 0
			caused := func() []core.OutboxEntry {
				t.Helper()
				all, err := st.Outbox().Waiting(ctx, 1000)
				if err != nil {
					t.Fatal(err)
				}
				out := all[seen:]
				seen = len(all)
				return out
			}
			raise := func(id, kind, subject string, names []string) {
				t.Helper()
				err := st.InTx(ctx, func(ctx context.Context) error {
					return svc.RaiseNamed(ctx, id, kind, subject, names, core.Notice{Key: id, RoomID: "!ops:x", Kind: core.NoticeMessage, Body: "🔴 " + id})
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			if n, err := svc.Mute(ctx); err != nil || n != 2 {
				t.Fatalf("Mute() inside the window = %d, %v; want a silence per target", n, err)
			}
			if n, err := svc.Mute(ctx); err != nil || n != 0 {
				t.Errorf("Mute() again = %d, %v; want none", n, err)
			}
			raise("eve-offline", "offline", "EVE", nil)
			raise("alertmanager:backup", "alertmanager", "alertmanager:backup", []string{"alertname=BackupRunning", "severity=info"})
			raise("alertmanager:disk", "alertmanager", "alertmanager:disk", []string{"alertname=DiskFull"})
			if got := caused(); len(got) != 3 || got[0].Key != "alertmanager:disk" {
				t.Fatalf("inside the window the room got %+v; want DiskFull alone, with 👀 and 💤", got)
			}
			clock.Advance(90 * time.Minute) // 04:00
			if n, err := svc.EndSilences(ctx); err != nil || n != 2 {
				t.Fatalf("EndSilences() at the window's end = %d, %v", n, err)
			}
			got := caused()
			var posted []string
			for _, n := range got {
				if n.Kind == core.NoticeMessage && !strings.Contains(n.Body, "ended") {
					posted = append(posted, n.Key)
				}
			}
			slices.Sort(posted)
			if strings.Join(posted, ",") != "alertmanager:backup,eve-offline" {
				t.Errorf("at the window's end the room got %v; want both held alerts", posted)
			}

			// Saturday Dec 5, 02:30: nothing is held, nothing is said.
			clock.Set(time.Date(2026, 12, 5, 2, 30, 0, 0, berlin))
			if n, err := svc.Mute(ctx); err != nil || n != 0 {
				t.Errorf("Mute() on a Saturday = %d, %v; want none", n, err)
			}
			raise("eve-late", "late", "EVE", nil)
			if got := caused(); len(got) != 3 || got[0].Key != "eve-late" {
				t.Errorf("on a Saturday the room got %+v; want EVE's alert", got)
			}

			// Monday Dec 7, 02:00 to 04:00 holds nothing: its end says nothing.
			clock.Set(time.Date(2026, 12, 7, 2, 0, 0, 0, berlin))
			if n, err := svc.Mute(ctx); err != nil || n != 2 {
				t.Fatalf("Mute() on Monday = %d, %v", n, err)
			}
			clock.Set(time.Date(2026, 12, 7, 4, 0, 0, 0, berlin))
			if _, err := svc.EndSilences(ctx); err != nil {
				t.Fatal(err)
			}
			if got := caused(); len(got) != 0 {
				t.Errorf("a window that held nothing said %+v", got)
			}
		})
	}
}

// TestMuteTimingChecked: a window without a name, targets or times, with
// a bad weekday, time or zone is refused naming its key.
func TestMuteTimingChecked(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*oncall.MuteTiming)
		key  string
	}{
		{"no name", func(m *oncall.MuteTiming) { m.Name = "" }, "oncall.mute_timings[0].name"},
		{"no targets", func(m *oncall.MuteTiming) { m.Targets = nil }, "oncall.mute_timings[0].targets"},
		{"a bad weekday", func(m *oncall.MuteTiming) { m.Weekdays = []string{"funday"} }, "oncall.mute_timings[0].weekdays"},
		{"an end before the start", func(m *oncall.MuteTiming) { m.Times[0].EndTime = "01:00" }, "oncall.mute_timings[0].times[0]"},
		{"a bad zone", func(m *oncall.MuteTiming) { m.Location = "Mars/Olympus" }, "oncall.mute_timings[0].location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := backupWindow
			m.Times = []oncall.TimeRange{backupWindow.Times[0]}
			c.edit(&m)
			err := oncall.Config{EscalateAfter: time.Minute, ClaimHold: time.Hour, SnoozeDefault: time.Hour, MuteTimings: []oncall.MuteTiming{m}}.Validate()
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != c.key {
				t.Errorf("Validate() = %v, want an error naming %s", err, c.key)
			}
		})
	}
}
