package fleet

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// errBatchAborted is what the callers of a batch whose commit never
// finished (it panicked) are told; nothing of it was acknowledged.
var errBatchAborted = errors.New("heartbeat batch aborted")

// batchMax bounds how many heartbeats one transaction carries.
const batchMax = 256

// batcher groups concurrent heartbeats into one transaction (group
// commit). There is no writer goroutine: the first caller to find the
// batcher idle becomes the leader, commits everything waiting, and hands
// leadership to the first heartbeat that queued meanwhile. Every caller
// returns only after the transaction holding its heartbeat has committed,
// so nothing acknowledged is lost.
type batcher struct {
	commit func(ctx context.Context, beats []queuedBeat) error
	// breakers, when set, reads the breaker states of the agents whose
	// heartbeats a batch committed, once for the batch, for their answers.
	breakers func(ctx context.Context, agents []string) (map[string]string, error)

	mu    sync.Mutex
	busy  bool
	queue []*beatRequest
}

type beatRequest struct {
	beat queuedBeat
	err  error
	// breaker is the state of the agent's breaker once beat committed.
	breaker string
	// lead is set when done is closed to hand this request leadership
	// rather than its result.
	lead bool
	done chan struct{}
}

// do commits beat, alone or with others, and returns its outcome and the
// state of its agent's breaker ("" when the batcher reads none).
func (b *batcher) do(ctx context.Context, beat queuedBeat) (string, error) {
	r := &beatRequest{beat: beat, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, r)
	if b.busy {
		b.mu.Unlock()
		<-r.done
		if !r.lead {
			return r.breaker, r.err
		}
		b.mu.Lock()
	}
	b.busy = true
	// Let handlers that are already runnable queue their heartbeats first:
	// bigger batches mean fewer commits for the same work.
	b.mu.Unlock()
	runtime.Gosched()
	b.mu.Lock()
	n := min(len(b.queue), batchMax)
	batch := append([]*beatRequest(nil), b.queue[:n]...)
	b.queue = append(b.queue[:0:0], b.queue[n:]...)
	b.mu.Unlock()

	// Even if the commit panics, answer the batch and pass leadership on,
	// or every later heartbeat would wait forever.
	defer b.finish(r, batch)
	// The batch belongs to every caller in it, so the leader's
	// cancellation must not abort it.
	b.run(context.WithoutCancel(ctx), batch)
	return r.breaker, r.err
}

// finish answers the batch's other callers and hands leadership to the
// first request that queued meanwhile, or leaves the batcher idle.
func (b *batcher) finish(leader *beatRequest, batch []*beatRequest) {
	for _, other := range batch {
		if other != leader {
			close(other.done)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.busy = false
		return
	}
	next := b.queue[0]
	next.lead = true
	close(next.done)
}

// run commits the batch in one transaction; when that fails, each heartbeat
// is retried alone so that one bad write does not fail the others. Then it
// reads the breakers of the committed heartbeats' agents, in one read.
func (b *batcher) run(ctx context.Context, batch []*beatRequest) {
	beats := make([]queuedBeat, len(batch))
	for i, r := range batch {
		beats[i] = r.beat
		r.err = errBatchAborted
	}
	err := b.commit(ctx, beats)
	if err == nil || len(batch) == 1 {
		for _, r := range batch {
			r.err = err
		}
	} else {
		for _, r := range batch {
			r.err = b.commit(ctx, []queuedBeat{r.beat})
		}
	}
	b.readBreakers(ctx, batch)
}

// readBreakers gives each committed heartbeat of batch its agent's breaker
// state; when they cannot be read, the heartbeats stay committed but are
// answered with the error, as an answer must say the state.
func (b *batcher) readBreakers(ctx context.Context, batch []*beatRequest) {
	if b.breakers == nil {
		return
	}
	var agents []string
	for _, r := range batch {
		if r.err == nil && !slices.Contains(agents, r.beat.hb.Agent) {
			agents = append(agents, r.beat.hb.Agent)
		}
	}
	if len(agents) == 0 {
		return
	}
	states, err := b.breakers(ctx, agents)
	for _, r := range batch {
		switch {
		case r.err != nil:
		case err != nil:
			r.err = fmt.Errorf("read the breakers: %w", err)
		default:
			r.breaker = states[r.beat.hb.Agent]
		}
	}
}
