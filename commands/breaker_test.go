package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// breakerHarness is a processor with the `!breaker` verbs, and the halt
// event set up as the case asks: "" (nothing halted), "open", "half-open"
// or "overruled".
type breakerHarness struct {
	*harness
	breakers *breaker.Service
	eventID  string
}

func newBreakerHarness(t *testing.T, state breaker.State, overruled bool) *breakerHarness {
	t.Helper()
	h := newHarness(t)
	b := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{"@admin:x"}}.Breakers(testconfig.Breaker())
	h.proc.AddFeatures(Features{Breakers: b})
	bh := &breakerHarness{harness: h, breakers: b}
	if state == "" && !overruled {
		return bh
	}
	ctx := context.Background()
	ev, err := b.Open(ctx, "eve", breaker.OpenInput{Severity: breaker.SeveritySafety,
		Reason: "tried to delete the workspace", Evidence: []string{"tool call: rm -rf /srv/workspace"}})
	if err != nil {
		t.Fatal(err)
	}
	bh.eventID = ev.ID
	h.clock.Advance(time.Minute)
	if state == breaker.HalfOpen {
		if _, err := b.Resume(ctx, ev.ID, "@admin:x"); err != nil {
			t.Fatal(err)
		}
	}
	if overruled {
		if _, err := b.Reset(ctx, ev.ID, "@admin:x"); err != nil {
			t.Fatal(err)
		}
	}
	h.clock.Advance(time.Minute)
	return bh
}

// state is the breaker of eve as the API would report it.
func (bh *breakerHarness) state(t *testing.T) breaker.Status {
	t.Helper()
	st, err := bh.breakers.Status(context.Background(), "eve")
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// lastAction is the newest row of the halt's audit trail.
func (bh *breakerHarness) lastAction(t *testing.T) breaker.Transition {
	t.Helper()
	history, err := bh.breakers.History(context.Background(), bh.eventID)
	if err != nil || len(history) == 0 {
		t.Fatalf("history: %v, %d rows", err, len(history))
	}
	return history[len(history)-1]
}

func TestBreakerCommands(t *testing.T) {
	const (
		open     = breaker.Open
		halfOpen = breaker.HalfOpen
		closed   = breaker.Closed
	)
	tests := []struct {
		name      string
		state     breaker.State // eve's breaker before the command; "" is never halted
		overruled bool          // the halt was overruled before the command
		sender    string
		say       string // {id} stands for the halt's event ID
		want      []string
		forbid    []string
		wantState breaker.State
		wantLast  breaker.Action // the newest audit row afterwards
	}{
		{name: "help lists the verbs", say: "!help breaker",
			want: []string{"!breaker status [agent]", "!breaker events [agent] [N]", "!breaker review <event>", "!breaker resume <event>", "!breaker reset <event>", "!breaker keep <event>"}},
		{name: "status with nothing halted", say: "!breaker status",
			want: []string{"No agent has been halted", "every circuit breaker is closed"}},
		{name: "status lists the halted agent", state: open, say: "!breaker status",
			want: []string{"**Circuit breakers**", "🛑 **eve** halted since Nov 30 09:00 UTC", "`{id}` (safety): tried to delete the workspace", "!breaker status <agent>"}, wantState: open},
		{name: "status of a halted agent says what to do", state: open, say: "!breaker status eve",
			want: []string{"**eve** is halted", "Reason: tried to delete the workspace", "Evidence: 1 item", "Reviewing: nobody yet",
				"`!breaker review {id}`", "`!breaker resume {id}`", "`!breaker reset {id}`"}, wantState: open},
		{name: "status of an agent on trial", state: halfOpen, say: "!breaker status eve",
			want: []string{"**eve** is on a half-open trial", "supervisor's verification", "`!breaker reset {id}`"}, wantState: halfOpen},
		{name: "status of an agent never halted", say: "!breaker status gi",
			want: []string{"**gi** runs", "never been halted"}},
		{name: "status after an overrule names the last halt", overruled: true, say: "!breaker status eve",
			want: []string{"**eve** runs", "Last halt: `{id}`", "overruled by @admin:x", "`!breaker events eve`"}, wantState: closed},
		{name: "status of a bad agent name", say: "!breaker status a/b",
			want: []string{"not an agent name", "1 to 64 letters"}},
		{name: "events of the agent", state: open, say: "!breaker events eve",
			want: []string{"**Halts of eve**", "`{id}`", "safety: tried to delete the workspace", "Open, the agent is halted", "!breaker review <event>"}, wantState: open},
		{name: "events of all agents", overruled: true, say: "!breaker events 3",
			want: []string{"**Latest halts**", "`{id}`", "**eve**", "Overruled by @admin:x"}, wantState: closed},
		{name: "events of an agent never halted", say: "!breaker events gi",
			want: []string{"**gi** has never been halted"}},
		{name: "events with too many", say: "!breaker events eve 500",
			want: []string{"between 1 and 25"}},
		{name: "review shows evidence and history and records the reviewer", state: open, sender: "@alice:x", say: "!breaker review {id}",
			want: []string{"You are reviewing the halt of **eve**", "tool call: rm -rf /srv/workspace", "**History:**", "halted by supervisor",
				"@alice:x took the review", "`!breaker resume {id}`"}, wantState: open, wantLast: breaker.ActReview},
		{name: "review by the agent's name", state: open, sender: "@alice:x", say: "!breaker review eve",
			want: []string{"You are reviewing the halt of **eve**"}, wantState: open, wantLast: breaker.ActReview},
		{name: "review of a halt that is over still shows it", overruled: true, say: "!breaker review {id}",
			want:      []string{"Event `{id}` is over", "overruled by @admin:x", "nothing to review", "**History:**", "@admin:x overruled it"},
			wantState: closed, wantLast: breaker.ActOverrule},
		{name: "review of an unknown halt", state: open, say: "!breaker review brk_00000000",
			want: []string{"There is no halt brk\\_00000000", "!breaker status"}, wantState: open, wantLast: breaker.ActOpen},
		{name: "review without an event", state: open, say: "!breaker review",
			want: []string{"Which halt?", "!breaker review <event>"}, wantState: open, wantLast: breaker.ActOpen},
		{name: "keep leaves it halted and is logged", state: open, sender: "@alice:x", say: "!breaker keep {id}",
			want: []string{"stays halted", "`!breaker resume {id}`"}, wantState: open, wantLast: breaker.ActKeep},
		{name: "resume is for admins", state: open, sender: "@alice:x", say: "!breaker resume {id}",
			want: []string{"admins only"}, forbid: []string{"Resumed"}, wantState: open, wantLast: breaker.ActOpen},
		{name: "an admin resumes into a half-open trial", state: open, sender: "@admin:x", say: "!breaker resume {id}",
			want:      []string{"Resumed **eve** into a half-open trial", "supervisor's verification", "`!breaker reset {id}`"},
			wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "resume twice says it is on trial already", state: halfOpen, sender: "@admin:x", say: "!breaker resume {id}",
			want: []string{"already on a half-open trial", "`!breaker reset {id}`"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "reset is for admins", state: open, sender: "@alice:x", say: "!breaker reset {id}",
			want: []string{"admins only"}, wantState: open, wantLast: breaker.ActOpen},
		{name: "an admin overrules an open breaker", state: open, sender: "@admin:x", say: "!breaker reset {id}",
			want: []string{"Overruled", "closed without verification", "`!breaker events eve`"}, wantState: closed, wantLast: breaker.ActOverrule},
		{name: "an admin overrules a half-open trial", state: halfOpen, sender: "@admin:x", say: "!breaker reset eve",
			want: []string{"Overruled"}, wantState: closed, wantLast: breaker.ActOverrule},
		{name: "reset of a halt that is over", overruled: true, sender: "@admin:x", say: "!breaker reset {id}",
			want: []string{"Event `{id}` is over", "nothing to reset"}, wantState: closed, wantLast: breaker.ActOverrule},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bh := newBreakerHarness(t, tt.state, tt.overruled)
			sender := tt.sender
			if sender == "" {
				sender = "@alice:x"
			}
			fill := func(s string) string { return strings.ReplaceAll(s, "{id}", bh.eventID) }
			replies := bh.say(t, sender, fill(tt.say))
			if len(replies) != 1 {
				t.Fatalf("replies = %q, want one", replies)
			}
			for _, w := range tt.want {
				if !strings.Contains(replies[0], fill(w)) {
					t.Errorf("reply lacks %q:\n%s", fill(w), replies[0])
				}
			}
			for _, f := range tt.forbid {
				if strings.Contains(replies[0], f) {
					t.Errorf("reply shows %q:\n%s", f, replies[0])
				}
			}
			if bh.eventID == "" {
				return
			}
			if st := bh.state(t); st.State != tt.wantState {
				t.Errorf("breaker of eve is %s afterwards, want %s", st.State, tt.wantState)
			}
			if tt.wantLast != "" {
				if last := bh.lastAction(t); last.Action != tt.wantLast {
					t.Errorf("last audit row is %s by %s, want %s", last.Action, last.Actor, tt.wantLast)
				}
			}
		})
	}
}

func TestBreakerAnswers(t *testing.T) {
	const (
		open     = breaker.Open
		halfOpen = breaker.HalfOpen
		closed   = breaker.Closed
	)
	tests := []struct {
		name      string
		state     breaker.State
		onReply   bool // the answer goes to a thread reply of the halt rather than the notice
		sender    string
		answer    string
		notices   int      // how many notices the answer caused
		want      []string // substrings of those notices
		wantState breaker.State
		wantLast  breaker.Action
	}{
		{name: "👀 takes the review", state: open, sender: "@alice:x", notices: 2, answer: "👀",
			want: []string{"👀 reviewing by @alice:x", "👀 @alice:x is reviewing the halt of **eve**."}, wantState: open, wantLast: breaker.ActReview},
		{name: "replying review does the same", state: open, sender: "@alice:x", notices: 2, answer: "Review",
			want: []string{"reviewing by @alice:x", "is reviewing"}, wantState: open, wantLast: breaker.ActReview},
		{name: "a non-admin's ▶️ is refused and changes nothing", state: open, sender: "@alice:x", notices: 1, answer: "▶️",
			want: []string{"resuming a breaker is for admins", "**eve** stays halted", "React 👀", "@admin:x"}, wantState: open, wantLast: breaker.ActOpen},
		{name: "an admin's ▶️ resumes into half-open", state: open, sender: "@admin:x", notices: 2, answer: "▶️",
			want: []string{"HALF-OPEN", "resumed **eve** into a half-open trial"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "▶ without the variation selector", state: open, sender: "@admin:x", notices: 2, answer: "▶",
			want: []string{"HALF-OPEN", "half-open trial"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "replying resume", state: open, sender: "@admin:x", notices: 2, answer: "resume",
			want: []string{"HALF-OPEN", "half-open trial"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "▶️ on a thread reply of the halt", state: open, onReply: true, sender: "@admin:x", notices: 2, answer: "▶️",
			want: []string{"HALF-OPEN", "half-open trial"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "⏹️ keeps it halted and does not reset", state: open, sender: "@alice:x", notices: 2, answer: "⏹️",
			want: []string{"kept halted by @alice:x", "⏹️ @alice:x keeps **eve** halted", "!breaker resume"}, wantState: open, wantLast: breaker.ActKeep},
		{name: "an admin's ⏹️ keeps it halted too", state: open, sender: "@admin:x", notices: 2, answer: "⏹",
			want: []string{"kept halted by @admin:x", "keeps **eve** halted"}, wantState: open, wantLast: breaker.ActKeep},
		{name: "replying keep", state: open, sender: "@alice:x", notices: 2, answer: "keep",
			want: []string{"kept halted", "keeps **eve** halted"}, wantState: open, wantLast: breaker.ActKeep},
		{name: "⏹️ during the trial says why not", state: halfOpen, sender: "@alice:x", notices: 1, answer: "⏹️",
			want: []string{"half-open trial", "nothing to keep halted now", "!breaker reset"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "an admin's ▶️ on a trial says it is on trial already", state: halfOpen, sender: "@admin:x", notices: 1, answer: "▶️",
			want: []string{"already on a half-open trial"}, wantState: halfOpen, wantLast: breaker.ActResume},
		{name: "an admin replying reset overrules", state: open, sender: "@admin:x", notices: 2, answer: "reset",
			want: []string{"OVERRULED", "overruled the breaker of **eve**"}, wantState: closed, wantLast: breaker.ActOverrule},
		{name: "a non-admin replying reset is refused", state: open, sender: "@alice:x", notices: 1, answer: "reset",
			want: []string{"resetting a breaker is for admins"}, wantState: open, wantLast: breaker.ActOpen},
		{name: "other reactions are ignored", state: open, sender: "@admin:x", answer: "👍",
			wantState: open, wantLast: breaker.ActOpen},
		{name: "other replies are ignored", state: open, sender: "@admin:x", answer: "what happened here?",
			wantState: open, wantLast: breaker.ActOpen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bh := newBreakerHarness(t, tt.state, false)
			key := "breaker:" + bh.eventID
			if tt.onReply {
				// An earlier review left a reply in the halt's thread.
				if _, err := bh.breakers.Review(context.Background(), bh.eventID, "@bob:x"); err != nil {
					t.Fatal(err)
				}
				key = bh.threadReply(t)
			}
			caused := bh.answer(t, key, tt.sender, tt.answer)
			if len(caused) != tt.notices {
				t.Fatalf("the answer caused %d notices, want %d: %+v", len(caused), tt.notices, caused)
			}
			var bodies []string
			for _, n := range caused {
				bodies = append(bodies, n.Body)
			}
			all := strings.Join(bodies, "\n――\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("the notices lack %q:\n%s", w, all)
				}
			}
			for _, n := range caused {
				if n.Kind == core.NoticeMessage && (!n.Thread || n.Target != "breaker:"+bh.eventID) {
					t.Errorf("message %q is not in the halt's thread", n.Body)
				}
			}
			if strings.Contains(tt.name, "refused") && (len(caused) != 1 || len(caused[0].Mentions) != 1 || caused[0].Mentions[0] != tt.sender) {
				t.Errorf("the refusal does not mention %s: %+v", tt.sender, caused)
			}
			if st := bh.state(t); st.State != tt.wantState {
				t.Errorf("breaker of eve is %s afterwards, want %s", st.State, tt.wantState)
			}
			if last := bh.lastAction(t); last.Action != tt.wantLast {
				t.Errorf("last audit row is %s by %s, want %s", last.Action, last.Actor, tt.wantLast)
			}
		})
	}
}

// threadReply returns the key of the newest reply in the halt's thread.
func (bh *breakerHarness) threadReply(t *testing.T) string {
	t.Helper()
	waiting, err := bh.store.Outbox().Waiting(context.Background(), 100)
	if err != nil {
		t.Fatal(err)
	}
	for i := len(waiting) - 1; i >= 0; i-- {
		if waiting[i].Thread && waiting[i].Target == "breaker:"+bh.eventID {
			return waiting[i].Key
		}
	}
	t.Fatal("no reply in the halt's thread")
	return ""
}
