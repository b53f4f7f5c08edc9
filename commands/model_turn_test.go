package commands

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestModelTurnSurvivesACrash: a model turn is recorded with its message
// marked handled and runs off the loop; a turn a crash cut short is
// resumed by the next lease holder and answered once, even when the
// model was called twice; one older than the bound is answered by the
// grammar saying the model's answer was cut off, without calling it; a
// message read again after a reconnect starts no second turn.
func TestModelTurnSurvivesACrash(t *testing.T) {
	ctx := context.Background()
	m := &scriptedModel{text: "The backups ran fine last night."}
	th := modelHarness(t, m)
	th.proc.deps.Turns = th.store
	var queued []func()
	th.proc.RunModelTurnsWith(func(fn func()) { queued = append(queued, fn) })
	run := func() {
		fns := queued
		queued = nil
		for _, fn := range fns {
			fn()
		}
	}
	msg := Message{RoomID: "!room:x", EventID: "$worry", Sender: alice, Network: "matrix", Body: "how did the backups go?", Addressed: true, Sent: th.clock.Now()}
	if out := th.proc.Handle(ctx, msg); out != Answered || len(queued) != 1 {
		t.Fatalf("outcome %s, %d turns started", out, len(queued))
	}
	// The crash: the turn in flight never ends. The message is read again
	// after the reconnect: no second turn, no model call.
	inFlight := queued[0]
	queued = nil
	if out := th.proc.Handle(ctx, msg); out != Ignored || len(queued) != 0 || len(m.asked) != 0 {
		t.Fatalf("read again: outcome %s, %d turns started, %d model calls", out, len(queued), len(m.asked))
	}
	turns, err := th.store.ModelTurns(ctx)
	if err != nil || len(turns) != 1 || turns[0].EventID != "$worry" {
		t.Fatalf("recorded turns %+v (%v)", turns, err)
	}
	th.clock.Advance(time.Second)
	if err := th.proc.ResumeTurns(ctx, time.Minute); err != nil || len(queued) != 1 {
		t.Fatalf("resume: %v, %d turns", err, len(queued))
	}
	run()
	got := th.repliesTo(t, "$worry")
	if len(got) != 1 || !strings.HasPrefix(got[0], "The backups ran") || len(m.asked) != 1 {
		t.Fatalf("after the resume: replies %q, %d model calls", got, len(m.asked))
	}
	// The turn that was in flight ends too: the model was called twice,
	// the person is answered once.
	inFlight()
	if got := th.repliesTo(t, "$worry"); len(got) != 1 || len(m.asked) != 2 {
		t.Errorf("after both runs: replies %q, %d model calls", got, len(m.asked))
	}
	if turns, _ := th.store.ModelTurns(ctx); len(turns) != 0 {
		t.Errorf("turns left recorded: %+v", turns)
	}

	// A turn older than the bound: the grammar answers, saying why.
	late := Message{RoomID: "!room:x", EventID: "$late", Sender: alice, Network: "matrix", Body: "what is the weather", Addressed: true, Sent: th.clock.Now()}
	th.proc.Handle(ctx, late)
	queued = nil
	th.clock.Advance(10 * time.Minute)
	if err := th.proc.ResumeTurns(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	run()
	got = th.repliesTo(t, "$late")
	if len(got) != 2 || !strings.Contains(got[1], "its answer was cut off by a restart") || len(m.asked) != 2 {
		t.Errorf("a late turn: replies %q, %d model calls", got, len(m.asked))
	}
}
