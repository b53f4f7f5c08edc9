package commands

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// harness is a processor on a real SQLite store with a settable clock.
type harness struct {
	proc  *Processor
	store *store.Store
	clock *coretest.Clock
	seq   int
}

func newHarness(t *testing.T, handlers ...*Handler) *harness {
	t.Helper()
	return newHarnessWith(t, Config{Prefix: "!", Admins: []string{"@admin:x"}}, handlers...)
}

// newHarnessWith is newHarness on a processor configured by cfg.
func newHarnessWith(t *testing.T, cfg Config, handlers ...*Handler) *harness {
	t.Helper()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	p := NewProcessor(cfg,
		Deps{Tx: st, Outbox: st.Outbox(), Handled: st, Notices: st.Outbox(), Pending: st, Excerpts: st, Clock: clock})
	p.Register(handlers...)
	return &harness{proc: p, store: st, clock: clock}
}

// say handles a message and returns the replies Jarvis queued for it.
func (h *harness) say(t *testing.T, sender, body string) []string {
	t.Helper()
	h.seq++
	evt := "$e" + strings.Repeat("x", h.seq)
	return h.sayAs(t, evt, sender, body)
}

func (h *harness) sayAs(t *testing.T, eventID, sender, body string) []string {
	t.Helper()
	return h.handle(t, Message{RoomID: "!room:x", EventID: eventID, Sender: sender, Body: body, Sent: h.clock.Now().Add(-42 * time.Millisecond)})
}

// handle handles a message and returns the replies Jarvis queued for it.
func (h *harness) handle(t *testing.T, msg Message) []string {
	t.Helper()
	eventID := msg.EventID
	h.proc.Handle(context.Background(), msg)
	return h.repliesTo(t, eventID)
}

// repliesTo returns the replies Jarvis queued to the event.
func (h *harness) repliesTo(t *testing.T, eventID string) []string {
	t.Helper()
	waiting, err := h.store.Outbox().Waiting(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var replies []string
	for _, e := range waiting {
		if e.TargetEvent == eventID {
			replies = append(replies, e.Body)
		}
	}
	return replies
}

func TestBuiltinCommands(t *testing.T) {
	secret := &Handler{Name: "secret", Help: "Admins' business.", Admin: true, Func: func(e *Event) error { e.Reply("the secret"); return nil }}
	group := &Handler{Name: "tw", Help: "Tripwires.", Subcommands: []*Handler{
		{Name: "list", Aliases: []string{"ls"}, Help: "List them.", Func: func(e *Event) error { e.Reply("listed %v", e.Args); return nil }},
	}}
	tests := []struct {
		name, sender, body string
		want               []string // substrings of the one reply
		none               bool
	}{
		{name: "ping answers pong with the time it took", body: "!ping", want: []string{"pong", "42ms"}},
		{name: "help lists commands from the table", body: "!help", want: []string{"!ping", "!help", "!tw …"}},
		{name: "help hides admin commands from others", body: "!help", want: []string{"!ping"}},
		{name: "help for one command", body: "!help ping", want: []string{"!ping", "Check that Jarvis is listening"}},
		{name: "help for a group lists its verbs", body: "!help tw", want: []string{"!tw list", "List them."}},
		{name: "help for an unknown command", body: "!help nope", want: []string{"There is no command", "!help"}},
		{name: "unknown command", body: "!nope", want: []string{"Unknown command `!nope`", "!help"}},
		{name: "admin command refused to others", body: "!secret", want: []string{"admins only"}},
		{name: "admin command for an admin", sender: "@admin:x", body: "!secret", want: []string{"the secret"}},
		{name: "sub-command by alias with arguments", body: "!tw ls a b", want: []string{"listed [a b]"}},
		{name: "a group alone answers its help", body: "!tw", want: []string{"!tw list"}},
		{name: "commands are case-insensitive", body: "!PING", want: []string{"pong"}},
		{name: "plain chat is not a command", body: "hello there", none: true},
		{name: "a lone prefix is not a command", body: "!", none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, secret, group)
			sender := tt.sender
			if sender == "" {
				sender = "@alice:x"
			}
			replies := h.say(t, sender, tt.body)
			if tt.none {
				if len(replies) != 0 {
					t.Fatalf("replies = %q, want none", replies)
				}
				return
			}
			if len(replies) != 1 {
				t.Fatalf("replies = %q, want exactly one", replies)
			}
			for _, w := range tt.want {
				if !strings.Contains(replies[0], w) {
					t.Errorf("reply %q lacks %q", replies[0], w)
				}
			}
			if strings.Contains(tt.name, "hides") && strings.Contains(replies[0], "!secret") {
				t.Errorf("help shows an admin command to a non-admin: %q", replies[0])
			}
		})
	}
}

func TestSameEventHandledOnce(t *testing.T) {
	calls := 0
	h := newHarness(t, &Handler{Name: "count", Help: "Count.", Func: func(e *Event) error { calls++; e.Reply("counted"); return nil }})
	h.sayAs(t, "$same", "@alice:x", "!count")
	replies := h.sayAs(t, "$same", "@alice:x", "!count")
	if calls != 1 || len(replies) != 1 {
		t.Errorf("a redelivered event ran %d times with %d replies, want once", calls, len(replies))
	}
}

func TestPanicIsRecoveredAndAnswered(t *testing.T) {
	h := newHarness(t, &Handler{Name: "boom", Help: "Explode.", Func: func(e *Event) error {
		if err := h2(e); err != nil {
			panic(err)
		}
		panic("kaboom")
	}})
	replies := h.say(t, "@alice:x", "!boom")
	if len(replies) != 1 || !strings.Contains(replies[0], "`boom` failed") {
		t.Fatalf("replies after a panic = %q, want one saying it failed", replies)
	}
	// The processor still works afterwards.
	if replies := h.say(t, "@alice:x", "!ping"); len(replies) != 1 {
		t.Errorf("after a panic, !ping got %q", replies)
	}
}

// h2 lets the panicking handler write before it panics: that write must
// roll back with the rest of the command.
func h2(e *Event) error {
	e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, Body: "half-done work", TargetEvent: e.EventID})
	return nil
}

func TestFailedHandlerRollsBack(t *testing.T) {
	h := newHarness(t, &Handler{Name: "boom", Help: "Explode.", Func: func(e *Event) error {
		if err := h2(e); err != nil {
			return err
		}
		panic("kaboom")
	}})
	replies := h.say(t, "@alice:x", "!boom")
	for _, r := range replies {
		if strings.Contains(r, "half-done") {
			t.Errorf("the failed command's own notice was kept: %q", replies)
		}
	}
}

// TestReturnedErrors: an error a handler returns fails the command, its
// changes rolled back and the sender told that it failed; a refusal it
// returns is answered in the command's own transaction, what the command
// did kept, and the message counts as refused.
func TestReturnedErrors(t *testing.T) {
	tests := []struct {
		name    string
		err     error
		want    Outcome
		replies []string
	}{
		{name: "nil answers", want: Answered, replies: []string{"half-done work"}},
		{name: "an error fails and rolls back", err: errors.New("disk on fire"), want: Failed,
			replies: []string{"Sorry, `try` failed on my side. It changed nothing; try again, or ask an admin to check `!sys logs`."}},
		{name: "a refusal is answered and keeps what was done", err: refuse("Not now: %s.", "it is late"), want: Refused,
			replies: []string{"half-done work", "Not now: it is late."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, &Handler{Name: "try", Help: "Try.", Func: func(e *Event) error {
				if err := h2(e); err != nil {
					return err
				}
				return tt.err
			}})
			msg := Message{RoomID: "!room:x", EventID: "$try", Sender: "@alice:x", Body: "!try", Sent: h.clock.Now()}
			if got := h.proc.Handle(context.Background(), msg); got != tt.want {
				t.Errorf("outcome = %s, want %s", got, tt.want)
			}
			if got := h.repliesTo(t, "$try"); !slices.Equal(got, tt.replies) {
				t.Errorf("replies = %q, want %q", got, tt.replies)
			}
		})
	}
}

func TestRegisterRejectsDuplicates(t *testing.T) {
	tests := []struct {
		name     string
		handlers []*Handler
	}{
		{"same name as a built-in", []*Handler{{Name: "ping", Help: "again"}}},
		{"alias clashes with a name", []*Handler{{Name: "pong", Aliases: []string{"help"}, Help: "x"}}},
		{"two sub-handlers with one name", []*Handler{{Name: "tw", Help: "x", Subcommands: []*Handler{{Name: "list", Help: "a"}, {Name: "list", Help: "b"}}}}},
		{"upper-case name", []*Handler{{Name: "Ping2", Help: "x"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			newHarness(t, tt.handlers...)
		})
	}
}

func TestAddFeaturesTwicePanics(t *testing.T) {
	h := newHarness(t)
	h.proc.AddFeatures(Features{Identities: h.store})
	defer func() {
		if recover() == nil {
			t.Error("adding !link and !ratify twice did not panic")
		}
	}()
	h.proc.AddFeatures(Features{Identities: h.store})
}

// TestFeaturesFindEachOther: features added by separate calls of
// AddFeatures, in either order, are wired to the features they act on: a
// link moves what reminders and the notebook keep, and a task with a date
// reminds through reminders.
func TestFeaturesFindEachOther(t *testing.T) {
	for _, order := range []string{"identities first", "identities last"} {
		t.Run(order, func(t *testing.T) {
			h := newHarness(t)
			adds := []Features{
				{Identities: h.store},
				{Reminders: reminder.NewService(reminder.Deps{Store: h.store.Reminders(), Tx: h.store, Outbox: h.store.Outbox(), Clock: h.clock}),
					People: h.store.Reminders()},
				{Notebook: notebook.NewService(h.store.Notebook(), h.clock)},
			}
			if order == "identities last" {
				adds = append(adds[1:], adds[0])
			}
			for _, f := range adds {
				h.proc.AddFeatures(f)
			}
			f := h.proc.features
			if f.links.reminders != f.reminders || f.links.notebook != f.notebook || f.notebook.reminders != f.reminders {
				t.Errorf("features not wired to one another: link %+v, notebook %+v", *f.links, *f.notebook)
			}
		})
	}
}

func TestAdminFlagReachesSubcommands(t *testing.T) {
	h := newHarness(t, &Handler{Name: "sys", Help: "Admin verbs.", Admin: true, Subcommands: []*Handler{
		{Name: "status", Help: "Status.", Func: func(e *Event) error { e.Reply("all good"); return nil }},
	}})
	if replies := h.say(t, "@alice:x", "!sys status"); len(replies) != 1 || !strings.Contains(replies[0], "admins only") {
		t.Errorf("non-admin !sys status got %q", replies)
	}
	if replies := h.say(t, "@admin:x", "!sys status"); len(replies) != 1 || replies[0] != "all good" {
		t.Errorf("admin !sys status got %q", replies)
	}
}

// TestNotHandledWithoutTheLease: a command this Jarvis may not act on
// because the store's fence refuses it (another Jarvis took the lease)
// writes and answers nothing, and the delivery it came in learns that it
// was not handled, so that the event is delivered again rather than
// passed over; once the fence lets it through, it is answered once.
func TestNotHandledWithoutTheLease(t *testing.T) {
	h := newHarness(t)
	held := false
	h.store.SetFence(func(context.Context) error {
		if !held {
			return core.ErrStaleEpoch
		}
		return nil
	})
	msg := Message{RoomID: "!room:x", EventID: "$ping", Sender: "@alice:x", Body: "!ping", Sent: h.clock.Now()}
	ctx, notHandled := core.TrackNotHandled(context.Background())
	h.proc.Handle(ctx, msg)
	if err := notHandled(); !errors.Is(err, core.ErrStaleEpoch) {
		t.Errorf("the delivery learnt %v, want %v", err, core.ErrStaleEpoch)
	}
	if got := h.handle(t, msg); len(got) != 0 {
		t.Errorf("replies without the lease: %q", got)
	}
	held = true
	if got := h.handle(t, msg); len(got) != 1 {
		t.Errorf("replies once the lease is held: %q, want one", got)
	}
}
