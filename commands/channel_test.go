package commands

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// typedAnswers is a channel whose people type their answers, as in a
// terminal: a question goes as its text alone.
type typedAnswers struct{}

func (typedAnswers) Ask(q core.Question) []core.Notice {
	return []core.Notice{{Key: q.Key, RoomID: q.RoomID, Kind: core.NoticeMessage, Body: q.Text, TargetEvent: q.TargetEvent}}
}

// TestChannelAsks checks that a question is put the way the message's
// channel puts it, and that the answer, given by the notice's key, goes
// through the same confirmation path: once, by the requester only.
func TestChannelAsks(t *testing.T) {
	confirmed := 0
	h := newHarness(t, &Handler{Name: "wipe", Help: "Wipe.", Admin: true, Func: func(e *Event) error {
		return e.AskConfirm("wipe", "", "Wipe it?")
	}})
	h.proc.RegisterConfirm(ConfirmKind{Kind: "wipe", TTL: time.Hour, OnConfirm: func(*Event, core.Pending) (string, error) {
		confirmed++
		return "Wiped.", nil
	}})
	ctx := context.Background()
	op := Message{RoomID: "console:op", EventID: "console:in:1", Sender: "console:op", Network: "console",
		Operator: true, Channel: typedAnswers{}, Body: "!wipe", Sent: h.clock.Now()}
	if got := h.proc.Handle(ctx, op); got != Answered {
		t.Fatalf("the operator's !wipe: %s, want %s", got, Answered)
	}
	waiting, err := h.store.Outbox().Waiting(ctx, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != 0 {
		t.Fatalf("the question went to Matrix: %+v", waiting)
	}
	key := "confirm:wipe:console:in:1"
	q, err := h.store.Outbox().Get(ctx, key)
	if err != nil || q.Body != "Wipe it?" {
		t.Fatalf("question %q: %+v, %v", key, q, err)
	}
	if _, err := h.store.Outbox().Get(ctx, key+":yes"); err == nil {
		t.Fatal("a ✅ was seeded on a question put in a terminal")
	}
	stranger := Message{RoomID: "console:eve", EventID: "console:in:2", Sender: "console:eve", Network: "console",
		Channel: typedAnswers{}, Body: "y", Sent: h.clock.Now()}
	h.proc.HandleAnswerTo(ctx, stranger, key)
	yes := op
	yes.EventID, yes.Body = "console:in:3", "y"
	h.proc.HandleAnswerTo(ctx, yes, key)
	yes.EventID = "console:in:4"
	h.proc.HandleAnswerTo(ctx, yes, key)
	if confirmed != 1 {
		t.Fatalf("confirmed %d times, want once, by the requester", confirmed)
	}
}

// TestOutcomes checks what Handle reports, for a channel that tells its
// user (the console's exit status).
func TestOutcomes(t *testing.T) {
	h := newHarness(t, &Handler{Name: "secret", Help: "Admins' business.", Admin: true, Func: func(e *Event) error { e.Reply("the secret"); return nil }})
	tests := []struct {
		name, sender, body string
		want               Outcome
	}{
		{"answered", "@alice:x", "!ping", Answered},
		{"unknown command", "@alice:x", "!nosuch", Refused},
		{"admin verb from someone else", "@alice:x", "!secret", Refused},
		{"a sentence that asks nothing", "@alice:x", "nice weather", Ignored},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := Message{RoomID: "!room:x", EventID: "$o" + string(rune('a'+i)), Sender: tt.sender, Body: tt.body, Sent: h.clock.Now()}
			if got := h.proc.Handle(context.Background(), msg); got != tt.want {
				t.Errorf("%q: %s, want %s", tt.body, got, tt.want)
			}
			if got := h.proc.Handle(context.Background(), msg); got != Ignored {
				t.Errorf("%q again: %s, want %s", tt.body, got, Ignored)
			}
		})
	}
}
