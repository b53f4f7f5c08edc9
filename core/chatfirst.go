package core

import (
	"context"
	"sync"
	"time"
)

// ChatFirst says when a person is waiting for Jarvis: from the moment a
// chat message is handled until its reply has gone out. Agents' intake
// asks it before it starts a request and, while someone waits, holds back
// for at most a short pause, so that the CPU and the database go to the
// answer first. The zero value is ready to use; a nil *ChatFirst never
// holds anything back.
type ChatFirst struct {
	mu      sync.Mutex
	waiting int
	// clear is closed when the last wait ends; nil while nobody waits.
	clear chan struct{}
}

// Begin marks a person waiting; the function it returns marks the wait
// over (calling it again does nothing).
func (c *ChatFirst) Begin() (end func()) {
	if c == nil {
		return func() {}
	}
	c.mu.Lock()
	if c.waiting == 0 {
		c.clear = make(chan struct{})
	}
	c.waiting++
	c.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.waiting--; c.waiting == 0 {
				close(c.clear)
				c.clear = nil
			}
		})
	}
}

// Waiting reports whether a person waits for an answer now.
func (c *ChatFirst) Waiting() bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.waiting > 0
}

// Yield returns once nobody waits for an answer, or after at most pause,
// or with ctx's error when ctx ends first.
func (c *ChatFirst) Yield(ctx context.Context, pause time.Duration) error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	clear := c.clear
	c.mu.Unlock()
	if clear == nil || pause <= 0 {
		return nil
	}
	timer := time.NewTimer(pause)
	defer timer.Stop()
	select {
	case <-clear:
	case <-timer.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// Deferral lets one piece of Jarvis's own background work (an evaluator
// pass) step aside for people's answers at several points, for at most a
// pause in all: work that always yields whole could be held back for as
// long as people keep talking.
type Deferral struct {
	chat *ChatFirst
	left time.Duration
}

// Deferring returns a Deferral of at most pause in all.
func (c *ChatFirst) Deferring(pause time.Duration) *Deferral {
	return &Deferral{chat: c, left: pause}
}

// Yield returns at once when nobody waits for an answer; else once nobody
// does, or when what is left of the pause is spent, or with ctx's error.
func (d *Deferral) Yield(ctx context.Context) error {
	if d.left <= 0 || !d.chat.Waiting() {
		return nil
	}
	start := time.Now()
	err := d.chat.Yield(ctx, d.left)
	d.left -= time.Since(start)
	return err
}
