package app

import (
	"context"
	"time"
)

// trigger asks a loop for one more round. However many asks come while a
// round runs, they come to one more round after it; an ask made after a
// round started is never lost, since the round took the earlier ask
// before it started.
type trigger chan struct{}

func newTrigger() trigger { return make(trigger, 1) }

// ask asks for a round, or leaves one asked already as it is.
func (t trigger) ask() {
	select {
	case t <- struct{}{}:
	default:
	}
}

// rounds runs fn once for each round t asks for, and at each tick (nil:
// none), one round at a time, until ctx ends.
func rounds(ctx context.Context, t trigger, tick <-chan time.Time, fn func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
		case <-t:
		}
		fn()
	}
}

// spaced runs fn and then waits gap (or until ctx ends), so that rounds of
// fn run at least gap apart however often they are asked for.
func spaced(ctx context.Context, gap time.Duration, fn func()) func() {
	return func() {
		fn()
		select {
		case <-ctx.Done():
		case <-time.After(gap):
		}
	}
}
