package store

import (
	"context"
	"sync"
)

// writeGate lets one write transaction of this process at a time into a
// SQLite database, urgent ones first: Store.tx waits for it, and the chat
// pool's connections wait for it as urgent around each transaction and
// each statement outside one (see openChatPool). Without it, writers
// wait in SQLite's busy handler, which sleeps 1, 2, 5, … up to 100 ms
// between tries: under a stream of heartbeat batches a chat command's
// transaction kept losing the lock to writers that came after it. With
// it, a waiting writer is handed the lock when the one before commits.
type writeGate struct {
	mu     sync.Mutex
	held   bool
	urgent []chan struct{}
	normal []chan struct{}
}

func (g *writeGate) acquire(ctx context.Context, urgent bool) error {
	g.mu.Lock()
	if !g.held {
		g.held = true
		g.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	if urgent {
		g.urgent = append(g.urgent, turn)
	} else {
		g.normal = append(g.normal, turn)
	}
	g.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		select {
		case <-turn:
			// Handed the gate as ctx ended: pass it on.
			g.handOn()
		default:
			g.urgent = remove(g.urgent, turn)
			g.normal = remove(g.normal, turn)
		}
		return ctx.Err()
	}
}

func (g *writeGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOn()
}

// handOn gives the gate to the first urgent waiter, else the first other
// one, else leaves it free. g.mu is held.
func (g *writeGate) handOn() {
	for _, q := range []*[]chan struct{}{&g.urgent, &g.normal} {
		if len(*q) > 0 {
			next := (*q)[0]
			*q = (*q)[1:]
			close(next)
			return
		}
	}
	g.held = false
}

func remove(q []chan struct{}, c chan struct{}) []chan struct{} {
	for i, x := range q {
		if x == c {
			return append(q[:i:i], q[i+1:]...)
		}
	}
	return q
}
