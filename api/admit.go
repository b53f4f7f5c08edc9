package api

import (
	"context"
	"net/http"
	"slices"
	"sync"
)

// admission lets at most limit agent reports (heartbeats and journal
// entries) be handled at once; the others wait in turn, until a slot is
// free or their caller gives up. Agents that report as fast as they are
// answered would otherwise keep every core busy with their reports, and a
// person's chat command would queue behind them for the CPU. A limit of 0
// lets everything through.
type admission struct {
	mu      sync.Mutex
	limit   int
	running int
	queue   []chan struct{}
}

// setLimit changes the limit; reports already running finish.
func (a *admission) setLimit(n int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.limit = n
	a.handOn()
}

// admit wraps an agent report's handler.
func (a *admission) admit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := a.acquire(r.Context()); err != nil {
			return // the caller is gone
		}
		defer a.release()
		next.ServeHTTP(w, r)
	})
}

func (a *admission) acquire(ctx context.Context) error {
	a.mu.Lock()
	if a.free() {
		a.running++
		a.mu.Unlock()
		return nil
	}
	turn := make(chan struct{})
	a.queue = append(a.queue, turn)
	a.mu.Unlock()
	select {
	case <-turn:
		return nil
	case <-ctx.Done():
		a.mu.Lock()
		defer a.mu.Unlock()
		select {
		case <-turn:
			// Handed a slot as ctx ended: pass it on.
			a.running--
			a.handOn()
		default:
			a.queue = slices.DeleteFunc(a.queue, func(c chan struct{}) bool { return c == turn })
		}
		return ctx.Err()
	}
}

func (a *admission) release() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.running--
	a.handOn()
}

func (a *admission) free() bool { return a.limit == 0 || a.running < a.limit }

// handOn gives free slots to the longest waiting. a.mu is held.
func (a *admission) handOn() {
	for len(a.queue) > 0 && a.free() {
		a.running++
		close(a.queue[0])
		a.queue = a.queue[1:]
	}
}
