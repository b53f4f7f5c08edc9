package app

import (
	"context"
	"testing"
)

// TestTriggerCoalesces floods the loop behind the tripwire re-evaluation
// and the wake router while a round is blocked: 10,000 asks come to
// exactly one more round, and an ask made after a round started always
// comes to one more (no lost wake-up). Nothing here waits on time: each
// step waits for the round itself to start.
func TestTriggerCoalesces(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	trig := newTrigger()
	started := make(chan int)      // a round's number, as it starts
	release := make(chan struct{}) // lets the running round end
	done := make(chan struct{})
	n := 0
	go func() {
		defer close(done)
		rounds(ctx, trig, nil, func() {
			n++
			started <- n
			<-release
		})
	}()

	trig.ask()
	if got := <-started; got != 1 {
		t.Fatalf("first round is number %d", got)
	}
	for range 10_000 {
		trig.ask()
	}
	if len(trig) != 1 {
		t.Fatalf("%d rounds queued behind the running one after a flood, want 1", len(trig))
	}
	release <- struct{}{}
	if got := <-started; got != 2 {
		t.Fatalf("after the flood, round %d started, want 2", got)
	}
	// Round 2 took the flood's one ask: nothing more is queued.
	if len(trig) != 0 {
		t.Fatalf("%d rounds still queued after the flood's round started, want 0", len(trig))
	}

	// An ask after round 2 started is not lost.
	trig.ask()
	release <- struct{}{}
	if got := <-started; got != 3 {
		t.Fatalf("after an ask during round 2, round %d started, want 3", got)
	}
	if len(trig) != 0 {
		t.Fatalf("%d rounds queued with no ask, want 0", len(trig))
	}

	cancel()
	release <- struct{}{}
	<-done
	if n != 3 {
		t.Errorf("%d rounds ran, want 3", n)
	}
}
