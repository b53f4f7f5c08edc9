package oncall_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// sweepFixture raises alerts and runs a sweep, returning the notices it
// caused.
type sweepFixture struct {
	t     *testing.T
	st    *store.Store
	clock *coretest.Clock
	svc   *oncall.Service
}

func newSweepFixture(t *testing.T, cfg oncall.Config, admins []string) *sweepFixture {
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC))
	return &sweepFixture{t: t, st: st, clock: clock,
		svc: services.Wiring{Store: st, Clock: clock, Admins: admins}.Oncall(cfg)}
}

func (f *sweepFixture) raise(id string) {
	f.t.Helper()
	err := f.st.InTx(context.Background(), func(ctx context.Context) error {
		return f.svc.Raise(ctx, id, "offline", "EVE", core.Notice{Key: "alert:" + id, RoomID: "!room:x", Kind: core.NoticeMessage, Body: "🔴 " + id + " is offline\n\nIt missed 3 heartbeats."})
	})
	if err != nil {
		f.t.Fatal(err)
	}
}

// sweep runs one sweep and returns how many it acted on and what it sent.
func (f *sweepFixture) sweep(run func(context.Context) (int, error)) (int, []core.OutboxEntry) {
	f.t.Helper()
	ctx := context.Background()
	before, _ := f.st.Outbox().Waiting(ctx, 1000)
	n, err := run(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	after, _ := f.st.Outbox().Waiting(ctx, 1000)
	return n, after[len(before):]
}

// TestEscalationTiers: an alert nobody claims calls the admins after
// escalate_after, then each tier of oncall.escalation as long again after
// the last, once each: people are mentioned in the alert's thread, a room
// gets a message of its own naming the alert. A claim stops the calls.
func TestEscalationTiers(t *testing.T) {
	cfg := oncall.Config{EscalateAfter: 15 * time.Minute, Escalation: [][]string{{"@dave:x"}, {"!ops:x", "@erin:x"}}}
	f := newSweepFixture(t, cfg, []string{"@alice:x"})
	f.raise("eve")
	f.raise("hal")
	type call struct {
		key, room, body string
		thread          bool
		mentions        int
	}
	want := [][]call{
		{{"escalated:eve", "!room:x", "@alice:x: Nobody has claimed this alert in 15m. Tap 👀 on it or reply `mine` to take it.", true, 1},
			{"escalated:hal", "!room:x", "@alice:x: Nobody has claimed this alert in 15m. Tap 👀 on it or reply `mine` to take it.", true, 1}},
		{{"escalated:eve:tier1", "!room:x", "@dave:x: Nobody has claimed this alert in 30m. Tap 👀 on it or reply `mine` to take it.", true, 1}},
		{{"escalated:eve:tier2", "!room:x", "@erin:x: Nobody has claimed this alert in 45m. Tap 👀 on it or reply `mine` to take it.", true, 1},
			{"escalated:eve:tier2:!ops:x", "!ops:x", "🔔 An alert in Jarvis's room has waited 45m for someone to claim it: 🔴 eve is offline\n\nClaim it there: tap 👀 on it or reply `mine`.", false, 0}},
		nil,
	}
	for tier, calls := range want {
		f.clock.Advance(14 * time.Minute)
		if n, caused := f.sweep(f.svc.Escalate); n != 0 || len(caused) != 0 {
			t.Fatalf("tier %d, a minute early: %d called, %+v", tier, n, caused)
		}
		f.clock.Advance(time.Minute)
		_, caused := f.sweep(f.svc.Escalate)
		if len(caused) != len(calls) {
			t.Fatalf("tier %d: sent %+v, want %d notices", tier, caused, len(calls))
		}
		for i, c := range calls {
			e := caused[i]
			if e.Key != c.key || e.RoomID != c.room || e.Body != c.body || e.Thread != c.thread || len(e.Mentions) != c.mentions {
				t.Errorf("tier %d notice %d = %+v, want %+v", tier, i, e, c)
			}
		}
		if tier == 0 {
			// hal is claimed after the admins were called: no further tier.
			if _, first, err := f.svc.Claim(context.Background(), "hal", "@bob:x"); err != nil || !first {
				t.Fatalf("claim hal: %v, %v", first, err)
			}
		}
	}
}

// TestReminders: the owner of a claimed alert that stays open is reminded
// in its thread every remind_every, mentioning them; a resolved one is
// not, and remind_every 0 reminds nobody.
func TestReminders(t *testing.T) {
	f := newSweepFixture(t, oncall.Config{EscalateAfter: 15 * time.Minute, RemindEvery: time.Hour, ClaimHold: 3 * time.Hour}, nil)
	ctx := context.Background()
	f.raise("eve")
	f.raise("hal")
	f.clock.Advance(10 * time.Minute)
	for _, id := range []string{"eve", "hal"} {
		if _, _, err := f.svc.Claim(ctx, id, "@bob:x"); err != nil {
			t.Fatal(err)
		}
	}
	f.clock.Advance(59 * time.Minute)
	if n, caused := f.sweep(f.svc.Remind); n != 0 || len(caused) != 0 {
		t.Fatalf("a minute early: %d reminded, %+v", n, caused)
	}
	if err := f.svc.Resolve(ctx, "hal", "✅ HAL is back."); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Minute)
	for _, want := range []string{"1h", "2h"} {
		n, caused := f.sweep(f.svc.Remind)
		body := "@bob:x: this alert is still open; you have had it for " + want + ", since Dec 1 09:10 UTC. It closes by itself when what it reported resolves. " +
			"Reply `mine` to keep it: otherwise your claim lapses at Dec 1 12:10 UTC and it is escalated again."
		if n != 1 || len(caused) != 1 || caused[0].Body != body || !caused[0].Thread || caused[0].Target != "alert:eve" ||
			len(caused[0].Mentions) != 1 || caused[0].Mentions[0] != "@bob:x" {
			t.Fatalf("after %s: %d reminded, %+v; want %q in the thread of alert:eve", want, n, caused, body)
		}
		if n, _ := f.sweep(f.svc.Remind); n != 0 {
			t.Fatalf("the same sweep again reminded %d", n)
		}
		f.clock.Advance(time.Hour)
	}

	off := newSweepFixture(t, oncall.Config{EscalateAfter: 15 * time.Minute}, nil)
	off.raise("eve")
	if _, _, err := off.svc.Claim(ctx, "eve", "@bob:x"); err != nil {
		t.Fatal(err)
	}
	off.clock.Advance(24 * time.Hour)
	if n, caused := off.sweep(off.svc.Remind); n != 0 || len(caused) != 0 {
		t.Errorf("remind_every 0 reminded %d: %+v", n, caused)
	}
}

// TestConfig: the section's errors name the key at fault.
func TestConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  oncall.Config
		want string
	}{
		{"tiers of people and rooms", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour, Escalation: [][]string{{"@a:x", "@b:x"}, {"!ops:x"}, {"#ops:x"}}, RemindEvery: time.Hour}, ""},
		{"no reminders", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour}, ""},
		{"a name that is no ID", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour, Escalation: [][]string{{"@a:x"}, {"bob"}}},
			`oncall.escalation[1]: "bob" is not a Matrix user ID or room (@user:server, !room:server or #alias:server)`},
		{"an empty tier", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour, Escalation: [][]string{{}}}, "oncall.escalation[0]: is empty: give Matrix user IDs or a room"},
		{"a user without a server", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour, Escalation: [][]string{{"@bob"}}},
			`oncall.escalation[0]: "@bob" is not a Matrix user ID or room (@user:server, !room:server or #alias:server)`},
		{"reminders too often", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour, ClaimHold: time.Hour, RemindEvery: time.Millisecond},
			"oncall.remind_every: must be 0 (no reminders) or at least 1s, got 1ms"},
		{"a claim that holds for no time", oncall.Config{EscalateAfter: time.Minute, SnoozeDefault: time.Hour}, "oncall.claim_hold: must be at least 1s, got 0s"},
		{"no snooze", oncall.Config{EscalateAfter: time.Minute, ClaimHold: time.Hour}, "oncall.snooze_default: must be between 1s and 7d, got 0s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if got := errText(err); got != tc.want {
				t.Errorf("Validate() = %q, want %q", got, tc.want)
			}
		})
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestSweepsFollowTheAlertThatStandsNow: an alert replaced between a
// sweep's listing and its transaction (EVE's missed heartbeats, then its
// going offline) is called, and its owner reminded, in the thread of the
// alert that stands when the call is made.
func TestSweepsFollowTheAlertThatStandsNow(t *testing.T) {
	cfg := oncall.Config{EscalateAfter: 15 * time.Minute, RemindEvery: time.Hour, ClaimHold: 3 * time.Hour}
	f := newSweepFixture(t, cfg, []string{"@alice:x"})
	tx := &coretest.BeforeTx{Transactor: f.st}
	svc := services.Wiring{Store: f.st, Clock: f.clock, Admins: []string{"@alice:x"}}.Oncall(cfg, func(d *oncall.Deps) { d.Tx = tx })
	replaced := 0
	replace := func() {
		replaced++
		key := fmt.Sprintf("alert:eve:%d", replaced)
		err := f.st.InTx(context.Background(), func(ctx context.Context) error {
			return f.svc.Raise(ctx, "eve", "offline", "EVE", core.Notice{Key: key, RoomID: "!room:x", Kind: core.NoticeMessage, Body: "🔴 eve is offline"})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	f.raise("eve")
	f.clock.Advance(15 * time.Minute)
	// What a sweep sent, less the replaced alert and its reactions.
	sent := func(run func(context.Context) (int, error), prefix string) []core.OutboxEntry {
		_, caused := f.sweep(run)
		return slices.DeleteFunc(caused, func(e core.OutboxEntry) bool { return !strings.HasPrefix(e.Key, prefix) })
	}
	tx.Hook = replace
	if calls := sent(svc.Escalate, "escalated:"); len(calls) != 1 || calls[0].Target != "alert:eve:1" {
		t.Fatalf("the admins' call: %+v, want it in the thread of alert:eve:1, the alert that stands", calls)
	}

	if _, _, err := svc.Claim(context.Background(), "eve", "@bob:x"); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	tx.Hook = replace
	if reminders := sent(svc.Remind, "reminded:"); len(reminders) != 1 || reminders[0].Target != "alert:eve:2" {
		t.Fatalf("bob's reminder: %+v, want it in the thread of alert:eve:2, the alert that stands", reminders)
	}
}
