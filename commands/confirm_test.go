package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// answer delivers a reaction or reply to the notice with key, as Matrix
// would once the notice was sent, and returns the notices it caused.
func (h *harness) answer(t *testing.T, key, sender, answer string) []core.OutboxEntry {
	t.Helper()
	return h.answerAs(t, key, Message{Sender: sender, Network: "matrix"}, answer)
}

// answerAs is answer from a sender described by msg (a puppet, a relay).
func (h *harness) answerAs(t *testing.T, key string, from Message, answer string) []core.OutboxEntry {
	t.Helper()
	ctx := context.Background()
	o := h.store.Outbox()
	if n, err := o.Get(ctx, key); err != nil {
		t.Fatal(err)
	} else if n.EventID == "" {
		if err := o.MarkSent(ctx, []string{key}, "$sent-"+key, h.clock.Now()); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := o.Waiting(ctx, 1000)
	h.seq++
	evt := "$answer" + strings.Repeat("y", h.seq)
	from.RoomID, from.EventID, from.Body, from.Sent = "!room:x", evt, answer, h.clock.Now()
	h.proc.HandleAnswer(ctx, from, "$sent-"+key)
	after, _ := o.Waiting(ctx, 1000)
	return after[len(before):]
}

func TestConfirmations(t *testing.T) {
	launched := 0
	kind := ConfirmKind{Kind: "launch", TTL: time.Hour, OnConfirm: func(e *Event, p core.Pending) (string, error) {
		launched++
		return "Launched " + p.Payload + ".", nil
	}}
	ask := &Handler{Name: "launch", Help: "Launch.", Func: func(e *Event) error {
		return e.AskConfirm("launch", "the rocket", "Launch the rocket? React ✅ to confirm, ❌ to dismiss.")
	}}
	setup := func(t *testing.T) (*harness, string) {
		h := newHarness(t, ask)
		h.proc.RegisterConfirm(kind)
		launched = 0
		h.sayAs(t, "$ask", "@alice:x", "!launch")
		return h, "confirm:launch:$ask"
	}

	t.Run("the question comes with both reactions", func(t *testing.T) {
		h, key := setup(t)
		waiting, _ := h.store.Outbox().Waiting(context.Background(), 10)
		var reactions []string
		for _, n := range waiting {
			if n.Kind == core.NoticeReaction && n.Target == key {
				reactions = append(reactions, n.Body)
			}
		}
		if len(reactions) != 2 || reactions[0] != YesReaction || reactions[1] != NoReaction {
			t.Errorf("reactions on the question = %q, want ✅ ❌", reactions)
		}
	})
	t.Run("the requester's tap confirms once", func(t *testing.T) {
		h, key := setup(t)
		caused := h.answer(t, key, "@alice:x", YesReaction)
		if launched != 1 || len(caused) != 1 || caused[0].Kind != core.NoticeEdit || caused[0].Body != "Launched the rocket." {
			t.Fatalf("after ✅: launched=%d notices=%+v", launched, caused)
		}
		if again := h.answer(t, key, "@alice:x", YesReaction); launched != 1 || len(again) != 0 {
			t.Errorf("a second ✅ launched again (%d) or said something (%d notices)", launched, len(again))
		}
	})
	t.Run("someone else's tap does nothing and says nothing", func(t *testing.T) {
		h, key := setup(t)
		if caused := h.answer(t, key, "@mallory:x", YesReaction); launched != 0 || len(caused) != 0 {
			t.Errorf("a stranger's ✅: launched=%d notices=%d", launched, len(caused))
		}
		if caused := h.answer(t, key, "@alice:x", "yes"); launched != 1 || len(caused) != 1 {
			t.Errorf("the requester's reply after a stranger's tap: launched=%d", launched)
		}
	})
	t.Run("a reply with the word works like the tap", func(t *testing.T) {
		h, key := setup(t)
		if h.answer(t, key, "@alice:x", "Arm"); launched != 1 {
			t.Errorf("reply 'Arm' did not confirm")
		}
	})
	t.Run("dismiss", func(t *testing.T) {
		h, key := setup(t)
		caused := h.answer(t, key, "@alice:x", NoReaction)
		if launched != 0 || len(caused) != 1 || !strings.Contains(caused[0].Body, "Dismissed") {
			t.Errorf("after ❌: launched=%d notices=%+v", launched, caused)
		}
		if h.answer(t, key, "@alice:x", YesReaction); launched != 0 {
			t.Error("✅ after ❌ launched anyway")
		}
	})
	t.Run("a late tap is told it expired", func(t *testing.T) {
		h, key := setup(t)
		h.clock.Advance(time.Hour + time.Second)
		caused := h.answer(t, key, "@alice:x", YesReaction)
		if launched != 0 || len(caused) != 1 || !strings.Contains(caused[0].Body, "expired") {
			t.Errorf("late ✅: launched=%d notices=%+v", launched, caused)
		}
	})
	t.Run("other words are not answers", func(t *testing.T) {
		h, key := setup(t)
		if caused := h.answer(t, key, "@alice:x", "hmm, not sure"); launched != 0 || len(caused) != 0 {
			t.Errorf("an unrelated reply acted: launched=%d", launched)
		}
	})
}
