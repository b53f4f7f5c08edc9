package store

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestWriteGate: a writer waiting with an urgent context is let in before
// the ones that waited longer without; a waiter whose context ends leaves
// the queue without taking the gate from anyone.
func TestWriteGate(t *testing.T) {
	ctx := context.Background()
	g := &writeGate{}
	if err := g.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	queued := func(urgent, normal int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			g.mu.Lock()
			u, n := len(g.urgent), len(g.normal)
			g.mu.Unlock()
			if u == urgent && n == normal {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d urgent and %d other writers wait, want %d and %d", u, n, urgent, normal)
			}
			time.Sleep(time.Millisecond)
		}
	}
	order := make(chan string, 3)
	wait := func(name string, urgent bool) {
		go func() {
			if err := g.acquire(ctx, urgent); err != nil {
				order <- "error: " + err.Error()
				return
			}
			order <- name
		}()
	}
	wait("heartbeats", false)
	queued(0, 1)
	gone, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error, 1)
	go func() { gaveUp <- g.acquire(gone, false) }()
	queued(0, 2)
	wait("chat", true)
	queued(1, 2)
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("a waiter whose context ended got %v", err)
	}
	queued(1, 1)
	for _, want := range []string{"chat", "heartbeats"} {
		g.release()
		if got := <-order; got != want {
			t.Fatalf("the gate went to %q, want %q", got, want)
		}
	}
	g.release()
	if g.held {
		t.Error("the gate is held after every writer left")
	}
}
