package core

import (
	"context"
	"sync"
)

type notHandledKey struct{}

// notHandled is the first reason an event of one delivery was not acted on.
type notHandled struct {
	mu  sync.Mutex
	err error
}

// TrackNotHandled returns a context for one delivery of incoming events
// (a sync response) in which NotHandled records why one of them was not
// acted on, and reason, which gives the first such reason or nil. A
// channel whose delivery has a reason asks for the events again rather
// than moving past them; what was acted on is marked handled and is not
// acted on twice.
func TrackNotHandled(ctx context.Context) (tracked context.Context, reason func() error) {
	n := &notHandled{}
	return context.WithValue(ctx, notHandledKey{}, n), func() error {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.err
	}
}

// NotHandled records, for the delivery ctx belongs to, that an event was
// not acted on for a reason that may pass: this Jarvis lost the lease for
// a moment, the store or the homeserver was away. Outside a tracked
// delivery it does nothing.
func NotHandled(ctx context.Context, err error) {
	if n, ok := ctx.Value(notHandledKey{}).(*notHandled); ok {
		n.mu.Lock()
		if n.err == nil {
			n.err = err
		}
		n.mu.Unlock()
	}
}
