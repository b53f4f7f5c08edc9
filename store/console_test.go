package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestConsole checks the console's tables and its part of the outbox:
// inputs wait until handled, a cursor is kept per user, the Matrix sender
// never sees a console notice, and the holder marks them delivered.
func TestConsole(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	o := s.Outbox()
	at := time.UnixMilli(time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC).UnixMilli())

	first, err := s.AddInput(ctx, core.Input{User: "alice", Body: "!ping", At: at})
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.AddInput(ctx, core.Input{User: "alice", Body: "2", Answers: "decision:c:q", At: at})
	if err != nil {
		t.Fatal(err)
	}
	waiting, err := s.WaitingInputs(ctx, 10)
	if err != nil || len(waiting) != 2 || waiting[0].Seq != first || waiting[1].Answers != "decision:c:q" {
		t.Fatalf("waiting inputs: %+v, %v", waiting, err)
	}
	if err := s.MarkInputHandled(ctx, first, "answered", at.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	in, err := s.Input(ctx, first)
	if err != nil || in.Outcome != "answered" || !in.Handled.Equal(at.Add(time.Second)) || in.EventID() != "console:in:"+itoa(first) {
		t.Fatalf("handled input: %+v, %v", in, err)
	}
	if waiting, _ := s.WaitingInputs(ctx, 10); len(waiting) != 1 || waiting[0].Seq != second {
		t.Fatalf("waiting after one was handled: %+v", waiting)
	}
	if err := s.PruneInputs(ctx, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Input(ctx, first); err == nil {
		t.Fatal("a handled input outlived the prune")
	}
	if err := s.DeleteInput(ctx, second); err != nil {
		t.Fatal(err)
	}

	if _, found, err := s.Cursor(ctx, "alice"); found || err != nil {
		t.Fatalf("cursor of a new user: found %v, %v", found, err)
	}
	for _, n := range []core.Notice{
		{Key: "reply:console:in:1:1", RoomID: "console:alice", Kind: core.NoticeMessage, Body: "Pong"},
		{Key: "halt:1", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "EVE halted"},
		{Key: "trip:tw:1", ToUser: "console:alice", Kind: core.NoticeMessage, Body: "Tripped"},
	} {
		if err := o.Enqueue(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	matrix, err := o.Waiting(ctx, 10)
	if err != nil || len(matrix) != 1 || matrix[0].Key != "halt:1" {
		t.Fatalf("the Matrix sender's notices: %+v, %v", matrix, err)
	}
	if n, err := o.DeliverConsole(ctx, at); err != nil || n != 2 {
		t.Fatalf("delivered %d console notices (%v), want 2", n, err)
	}
	if n, err := o.DeliverConsole(ctx, at); err != nil || n != 0 {
		t.Fatalf("delivered %d console notices again (%v), want none", n, err)
	}
	if depth, _ := o.Depth(ctx); depth != 1 {
		t.Fatalf("outbox depth %d after the console's were delivered, want 1", depth)
	}
	last, err := o.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all, err := o.NoticesAfter(ctx, last-3, 10)
	if err != nil || len(all) != 3 || all[0].Key != "reply:console:in:1:1" || all[0].EventID != all[0].Key {
		t.Fatalf("notices after %d: %+v, %v", last-3, all, err)
	}
	if err := s.SetCursor(ctx, "alice", last-1, at); err != nil {
		t.Fatal(err)
	}
	if seq, found, err := s.Cursor(ctx, "alice"); !found || seq != last-1 || err != nil {
		t.Fatalf("cursor: %d %v %v, want %d", seq, found, err, last-1)
	}
	if err := s.SetCursor(ctx, "alice", last, at); err != nil {
		t.Fatal(err)
	}
	if seq, _, _ := s.Cursor(ctx, "alice"); seq != last {
		t.Fatalf("cursor moved to %d, want %d", seq, last)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
