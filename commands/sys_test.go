package commands

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

func TestSysVerbs(t *testing.T) {
	var asked []string
	sys := &System{
		Version: "v1.2.3",
		Logs: func(n int, level zerolog.Level) []string {
			asked = append(asked, fmt.Sprintf("%d %s", n, level))
			switch level {
			case zerolog.ErrorLevel:
				return nil
			case zerolog.FatalLevel:
				return []string{"12:00:02 FATAL x error=```\n**Jarvis says** [click](https://evil.example)"}
			}
			return []string{"12:00:00 INFO one", "12:00:01 WARN two"}
		},
		Sections: []StatusSection{
			{Title: "Matrix", Lines: func(context.Context) ([]string, error) { return []string{"synced"}, nil }},
			{Title: "Broken", Lines: func(context.Context) ([]string, error) {
				return nil, errors.New("disk on fire **now** [see](https://evil.example)")
			}},
			{Title: "Lease", Verb: "lease", Help: "Who holds the lease.", Lines: func(context.Context) ([]string, error) { return []string{"epoch 7"}, nil }},
		},
	}
	tests := []struct {
		name, sender, body string
		want               []string
		asked              string
	}{
		{name: "status for an admin", sender: "@admin:x", body: "!sys status", want: []string{"Jarvis v1.2.3", "Matrix", "synced", "unavailable: `disk on fire **now** [see](https://evil.example)`"}},
		{name: "a section's own verb", sender: "@admin:x", body: "!sys lease", want: []string{"Lease", "epoch 7"}},
		{name: "sys help lists the verbs", sender: "@admin:x", body: "!sys help", want: []string{"!sys status", "!sys lease", "!sys restart"}},
		{name: "status refused to others", sender: "@alice:x", body: "!sys status", want: []string{"admins only"}},
		{name: "logs default", sender: "@admin:x", body: "!sys logs", want: []string{"```", "INFO one", "WARN two"}, asked: "20 trace"},
		{name: "logs with count and level", sender: "@admin:x", body: "!sys logs 5 warn", want: []string{"WARN two"}, asked: "5 warn"},
		{name: "logs too many", sender: "@admin:x", body: "!sys logs 500", want: []string{"between 1 and 200"}},
		{name: "logs bad level", sender: "@admin:x", body: "!sys logs loud", want: []string{"neither a number"}},
		{name: "logs nothing at level", sender: "@admin:x", body: "!sys logs error", want: []string{"No log lines at error"}, asked: "20 error"},
		{name: "a logged field cannot close the block", sender: "@admin:x", body: "!sys logs fatal",
			want: []string{"````\n12:00:02 FATAL x error=```\n**Jarvis says** [click](https://evil.example)\n````"}, asked: "20 fatal"},
		{name: "logs refused to others", sender: "@alice:x", body: "!sys logs", want: []string{"admins only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked = nil
			h := newHarness(t)
			h.proc.AddFeatures(Features{System: sys})
			replies := h.say(t, tt.sender, tt.body)
			if len(replies) != 1 {
				t.Fatalf("replies = %q, want one", replies)
			}
			for _, w := range tt.want {
				if !strings.Contains(replies[0], w) {
					t.Errorf("reply %q lacks %q", replies[0], w)
				}
			}
			if tt.asked != "" && (len(asked) != 1 || asked[0] != tt.asked) {
				t.Errorf("logs asked for %q, want %q", asked, tt.asked)
			}
			if tt.asked == "" && len(asked) != 0 {
				t.Errorf("logs were read (%q) when they should not be", asked)
			}
		})
	}
}

func TestSysClearAndRestartAskFirst(t *testing.T) {
	restarts := 0
	h := newHarness(t)
	// What another connection sees when the restart begins: it drains the
	// outbox and ends the process, so the confirmation must be committed.
	var roomAtRestart string
	var repliesAtRestart []core.OutboxEntry
	sys := &System{State: h.store, Restart: func() {
		restarts++
		roomAtRestart, _ = h.store.State(context.Background(), StateRestartRoom)
		repliesAtRestart, _ = h.store.Outbox().Waiting(context.Background(), 100)
	},
		Clearers: []func(context.Context, string) (string, error){
			func(context.Context, string) (string, error) { return "1 draft card set", nil },
		}}
	h.proc.AddFeatures(Features{System: sys})
	ctx := context.Background()

	// Something pending in the room that clear must drop.
	h.proc.RegisterConfirm(ConfirmKind{Kind: "tripwire", TTL: time.Hour, OnConfirm: func(*Event, core.Pending) (string, error) { return "armed", nil }})
	h.proc.Register(&Handler{Name: "propose", Help: "x", Func: func(e *Event) error { return e.AskConfirm("tripwire", "", "Arm it?") }})
	h.sayAs(t, "$proposal", "@alice:x", "!propose")

	h.sayAs(t, "$clear", "@admin:x", "!sys clear")
	if caused := h.answer(t, "confirm:sys-clear:$clear", "@alice:x", YesReaction); len(caused) != 0 {
		t.Fatalf("a non-admin's tap on the admin's clear acted: %+v", caused)
	}
	caused := h.answer(t, "confirm:sys-clear:$clear", "@admin:x", YesReaction)
	if len(caused) != 1 || !strings.Contains(caused[0].Body, "1 pending tripwire") || !strings.Contains(caused[0].Body, "1 draft card set") {
		t.Fatalf("clear said %+v", caused)
	}
	if caused := h.answer(t, "confirm:tripwire:$proposal", "@alice:x", YesReaction); len(caused) != 0 {
		t.Errorf("a cleared proposal could still be armed: %+v", caused)
	}

	h.sayAs(t, "$restart", "@admin:x", "!sys restart")
	if restarts != 0 {
		t.Fatal("restarted before the ✅")
	}
	h.answer(t, "confirm:sys-restart:$restart", "@admin:x", YesReaction)
	if restarts != 1 {
		t.Errorf("restarts after ✅ = %d, want 1", restarts)
	}
	if room, _ := h.store.State(ctx, StateRestartRoom); room != "!room:x" {
		t.Errorf("restart room kept = %q", room)
	}
	if roomAtRestart != "!room:x" {
		t.Errorf("when the restart began, the restart room read %q: the confirmation was not committed", roomAtRestart)
	}
	if !slices.ContainsFunc(repliesAtRestart, func(e core.OutboxEntry) bool { return strings.HasPrefix(e.Body, "Restarting, as @admin:x asked") }) {
		t.Errorf("when the restart began, the outbox held no reply to the ✅ (%d notices)", len(repliesAtRestart))
	}
}

// TestSysConfirmOnlyFromNativeAdmin: the admin's own puppet, linked to the
// admin, answers the admin's `!sys restart` and `!sys clear` prompts with
// ✅ and "yes": refused, nothing runs, and the prompt stays open for the
// admin's Matrix account.
func TestSysConfirmOnlyFromNativeAdmin(t *testing.T) {
	restarts, clears := 0, 0
	h := newHarness(t)
	sys := &System{State: h.store, Restart: func() { restarts++ },
		Clearers: []func(context.Context, string) (string, error){
			func(context.Context, string) (string, error) { clears++; return "nothing", nil },
		}}
	h.proc.AddFeatures(Features{System: sys})
	linkedPuppet := Message{Sender: "@admin:x", Puppet: "@telegram_9:x", Network: "telegram", Trust: core.TrustLinked}

	h.sayAs(t, "$restart", "@admin:x", "!sys restart")
	h.sayAs(t, "$clear", "@admin:x", "!sys clear")
	for _, answer := range []string{YesReaction, "yes"} {
		for _, key := range []string{"confirm:sys-restart:$restart", "confirm:sys-clear:$clear"} {
			caused := h.answerAs(t, key, linkedPuppet, answer)
			if len(caused) != 1 || !strings.Contains(caused[0].Body, "Nothing was done") {
				t.Errorf("the linked puppet's %q on %s caused %+v, want one refusal", answer, key, caused)
			}
		}
	}
	if restarts != 0 || clears != 0 {
		t.Fatalf("after the puppet's answers: restarts %d, clears %d, want none", restarts, clears)
	}
	h.answer(t, "confirm:sys-restart:$restart", "@admin:x", YesReaction)
	if restarts != 1 {
		t.Errorf("restarts after the admin's own ✅ = %d, want 1", restarts)
	}
}

// TestSysQuestionsAskAsTheirChannel: `!sys restart` and `!sys clear` say
// how to answer the way the channel takes answers: reactions in a Matrix
// room (✅ alone, or a reply, where a network allows one reaction), words
// where reactions do not reach Jarvis, and nothing of reactions in a
// terminal, which asks [y/N] itself.
func TestSysQuestionsAskAsTheirChannel(t *testing.T) {
	h := newHarness(t)
	h.proc.AddFeatures(Features{System: &System{State: h.store, Restart: func() {}}})
	ctx := context.Background()
	tests := []struct {
		name  string
		msg   Message
		verb  string
		want  string
		never string
	}{
		{"restart in a Matrix room", Message{RoomID: "!room:x"}, "restart", "Restart Jarvis?\n\nReact ✅ to restart, ❌ to cancel.", ""},
		{"clear in a Matrix room", Message{RoomID: "!room:x"}, "clear",
			"Armed tripwires, journals and cards stay.\n\nReact ✅ to clear, ❌ to keep.", ""},
		{"restart where one reaction goes", Message{RoomID: "!room:x", Room: bridge.Room{Network: "signal", ReactionCount: 1}}, "restart",
			"Restart Jarvis?\n\nReact ✅ to restart, or reply `no`.", "❌"},
		{"restart where reactions do not reach", Message{RoomID: "!room:x", Room: bridge.Room{Network: "telegram", NoReactions: true}}, "restart",
			"Restart Jarvis?\n\nReactions don't reach me from here: reply `yes` or `no` to this message.", "React ✅"},
		{"restart in a terminal", Message{RoomID: "console:op", Network: "console", Operator: true, Channel: typedAnswers{},
			Room: bridge.Room{NoReactions: true}}, "restart", "Restart Jarvis?", "✅"},
		{"clear in a terminal", Message{RoomID: "console:op", Network: "console", Operator: true, Channel: typedAnswers{},
			Room: bridge.Room{NoReactions: true}}, "clear", "Armed tripwires, journals and cards stay.", "✅"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.msg
			msg.EventID, msg.Sender, msg.Body, msg.Sent = fmt.Sprintf("$q%d", i), "@admin:x", "!sys "+tt.verb, h.clock.Now()
			if msg.Operator {
				msg.Sender = msg.RoomID
			}
			h.proc.Handle(ctx, msg)
			q, err := h.store.Outbox().Get(ctx, fmt.Sprintf("confirm:sys-%s:%s", tt.verb, msg.EventID))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasSuffix(q.Body, tt.want) || (tt.never != "" && strings.Contains(q.Body, tt.never)) {
				t.Errorf("the question reads\n%s\nwant it to end %q, without %q", q.Body, tt.want, tt.never)
			}
		})
	}
}

func TestRetentionLine(t *testing.T) {
	at := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		report retention.Report
		want   string
	}{
		{"nothing to remove", retention.Report{At: at},
			"retention: last pass 2026-12-01T15:00:00Z, 0 rows removed (0 sent messages, 0 handled events, 0 confirmations, 0 link codes, 0 journal entries, 0 agent boots and days of spend, 0 approval requests, 0 attestation subjects, 0 deleted tripwires, 0 heartbeats, 0 resolved incidents, 0 reminders and tasks, 0 consumed events)"},
		{"some of each", retention.Report{At: at, Notices: 500, Events: 3, Pending: 2, LinkCodes: 1, Journal: 7, Meter: 4, Approvals: 2, Attestations: 3, Tripwires: 1, Heartbeats: 3, Incidents: 4,
			Reminders: 5, Consumed: 6},
			"retention: last pass 2026-12-01T15:00:00Z, 541 rows removed (500 sent messages, 3 handled events, 2 confirmations, 1 link codes, 7 journal entries, 4 agent boots and days of spend, 2 approval requests, 3 attestation subjects, 1 deleted tripwires, 3 heartbeats, 4 resolved incidents, 5 reminders and tasks, 6 consumed events)"},
		{"failed part way", retention.Report{At: at, Notices: 1, Err: errors.New("prune handled events: disk I/O error")},
			"retention: last pass 2026-12-01T15:00:00Z, 1 row removed (1 sent messages, 0 handled events, 0 confirmations, 0 link codes, 0 journal entries, 0 agent boots and days of spend, 0 approval requests, 0 attestation subjects, 0 deleted tripwires, 0 heartbeats, 0 resolved incidents, 0 reminders and tasks, 0 consumed events), failed: prune handled events: disk I/O error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := retentionLine(tt.report); got != tt.want {
				t.Errorf("retentionLine() =\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

func TestGivenUpLine(t *testing.T) {
	last := core.OutboxEntry{Notice: core.Notice{Key: "push:tw_1:3", ToUser: "@ghost:example.org"},
		LastError: "no direct room with @ghost:example.org: M_NOT_FOUND (HTTP 404): The user does not exist",
		FailedAt:  time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)}
	want := "2 notices given up after 5 refusals in a row (kept, not retried); the latest, `push:tw_1:3` for `user:@ghost:example.org` at " +
		"2026-12-01T15:00:00Z: `no direct room with @ghost:example.org: M_NOT_FOUND (HTTP 404): The user does not exist`"
	if got := givenUpLine(2, last); got != want {
		t.Errorf("givenUpLine() =\n%s\nwant\n%s", got, want)
	}
}

// statusFigures are the figures of one Jarvis, for TestStatusSections.
type statusFigures struct{}

func (statusFigures) Current(context.Context) (lease.Record, error) {
	at := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	return lease.Record{WorkspaceID: "default", Holder: "host-a/42/abc", Epoch: 7, AcquiredAt: at, ExpiresAt: at.Add(30 * time.Second)}, nil
}
func (statusFigures) Holding() (int64, bool)                      { return 7, true }
func (statusFigures) Depth(context.Context) (int, error)          { return 3, nil }
func (statusFigures) LastError(context.Context) (string, error)   { return "M_FORBIDDEN *bold*", nil }
func (statusFigures) Size(context.Context) (string, int64, error) { return "sqlite3", 3 << 20, nil }
func (statusFigures) Agents() []fleet.AgentConfig                 { return nil }
func (statusFigures) FleetStatus(context.Context) ([]fleet.AgentReport, error) {
	return nil, errors.New("no heartbeats table")
}
func (statusFigures) RecentSubjects(context.Context, time.Time, int) ([]fleet.AttestationSubject, []fleet.Decision, error) {
	return nil, nil, nil
}
func (statusFigures) GivenUp(context.Context) (int, *core.OutboxEntry, error) { return 0, nil, nil }
func (statusFigures) TripwireStatusCounts(context.Context) (map[string]int, error) {
	return map[string]int{"armed": 4, "tripped": 1}, nil
}
func (statusFigures) StatusAll(context.Context) ([]breaker.Status, error) {
	return []breaker.Status{{Record: breaker.Record{Agent: "eve", State: breaker.Open}}, {Record: breaker.Record{Agent: "gi", State: breaker.Closed}}}, nil
}

// TestStatusSections: `!sys status` writes out the figures the wiring
// supplies, section by section; one whose figures fail says so and the
// rest still show.
func TestStatusSections(t *testing.T) {
	at := time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)
	f := statusFigures{}
	sections := StatusSections(Status{Homeserver: "https://matrix.example.org",
		Matrix: func() MatrixHealth {
			return MatrixHealth{UserID: "@jarvis:example.org", RoomID: "!room:example.org", DeviceID: "JARVIS1", Encryption: true, LastSync: at}
		},
		Lease: f, Outbox: f, Store: f, Fleet: f, Breakers: f,
		Cards: func(context.Context) (map[string]int, error) {
			return map[string]int{"needs_decision": 2, "claimed": 1}, nil
		},
		LastTick: func() *TickSummary {
			return &TickSummary{At: at, Report: tripwire.TickReport{Evaluated: 5, Sources: 2, Fired: 1}}
		},
		LastRetention: func() *retention.Report { return nil }})
	h := newHarness(t)
	h.proc.AddFeatures(Features{System: &System{Version: "v1.2.3", Sections: sections}})
	reply := onlyReply(t, h.say(t, "@admin:x", "!sys status"))
	for _, want := range []string{
		"**Matrix**\n- homeserver https://matrix.example.org as @jarvis:example.org in !room:example.org\n- device JARVIS1, end-to-end encryption on\n- last sync 2026-12-01T15:00:00Z",
		"**Lease**\n- workspace default, epoch 7, held by host-a/42/abc (this one: true) since 2026-12-01T15:00:00Z, until 2026-12-01T15:00:30Z",
		"**Outbox**\n- 3 waiting, last send error: `M_FORBIDDEN *bold*`",
		"**Database**\n- sqlite3, 3.0 MiB",
		"**Fleet**\n- unavailable: `no heartbeats table`",
		"**Tripwires, breakers, cards**\n- tripwires: 4 armed, 1 tripped, 0 quarantined, 0 disabled\n" +
			"- evaluator: last pass 2026-12-01T15:00:00Z, 5 tripwires, 2 sources, 1 fired, 0 reset\n" +
			"- breakers not closed: eve (open)\n- cards: 1 claimed, 2 needs_decision; decisions waiting: 2",
	} {
		if !strings.Contains(reply, want) {
			t.Errorf("status lacks\n%s\nin\n%s", want, reply)
		}
	}
	for verb, title := range map[string]string{"!sys lease": "**Lease**", "!sys fleet": "**Fleet**"} {
		if got := onlyReply(t, h.say(t, "@admin:x", verb)); !strings.HasPrefix(got, title) || strings.Contains(got, "**Outbox**") {
			t.Errorf("%s = %q, want its section alone", verb, got)
		}
	}
}
