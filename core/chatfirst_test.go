package core_test

import (
	"context"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// TestChatFirst: intake yields while a person waits, until the last wait
// ends or the pause runs out; with nobody waiting, or no ChatFirst, it
// does not wait at all.
func TestChatFirst(t *testing.T) {
	ctx := context.Background()
	var nobody *core.ChatFirst
	nobody.Begin()()
	if err := nobody.Yield(ctx, time.Hour); err != nil || nobody.Waiting() {
		t.Fatalf("a nil ChatFirst: %v, waiting %t", err, nobody.Waiting())
	}

	var c core.ChatFirst
	if err := c.Yield(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	first, second := c.Begin(), c.Begin()
	yielded := make(chan error, 1)
	go func() { yielded <- c.Yield(ctx, time.Hour) }()
	first()
	first() // a second call changes nothing
	if !c.Waiting() {
		t.Fatal("one of two waits ended, and nobody is said to wait")
	}
	second()
	if err := <-yielded; err != nil {
		t.Fatal(err)
	}
	if c.Waiting() {
		t.Fatal("both waits ended, and someone is said to wait")
	}

	end := c.Begin()
	defer end()
	if err := c.Yield(ctx, time.Millisecond); err != nil {
		t.Fatalf("the pause ran out: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := c.Yield(cancelled, time.Hour); err == nil {
		t.Fatal("a yield whose context ended returned no error")
	}
}

// TestDeferral: background work steps aside at each of its points while
// a person waits, and for its pause in all: once that is spent it goes on
// however long the wait lasts; with nobody waiting it never waits.
func TestDeferral(t *testing.T) {
	ctx := context.Background()
	var c core.ChatFirst
	d := c.Deferring(30 * time.Millisecond)
	if err := d.Yield(ctx); err != nil {
		t.Fatal(err)
	}
	end := c.Begin()
	defer end()
	start := time.Now()
	for range 10 {
		if err := d.Yield(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Ten yields while the wait lasts: the first waits out the whole
	// pause, the others return at once.
	if waited := time.Since(start); waited < 30*time.Millisecond || waited > 10*time.Second {
		t.Errorf("ten yields took %s, want the pause (30ms) once", waited)
	}
	var nobody *core.ChatFirst
	if err := nobody.Deferring(time.Hour).Yield(ctx); err != nil {
		t.Fatal(err)
	}
}
