package fleet

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"
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
	// work, when set, reads the cards those agents work, once for the
	// batch, for their answers.
	work func(ctx context.Context, agents []string, since time.Time) (map[string][]WorkCard, error)

	mu    sync.Mutex
	busy  bool
	queue []*beatRequest
}

type beatRequest struct {
	beat queuedBeat
	err  error
	// breaker is the state of the agent's breaker once beat committed,
	// and work the cards it works.
	breaker string
	work    []WorkCard
	// lead is set when done is closed to hand this request leadership
	// rather than its result.
	lead bool
	done chan struct{}
}

// do commits beat, alone or with others, and returns its outcome with
// the state of its agent's breaker ("" when the batcher reads none) and
// the cards it works.
func (b *batcher) do(ctx context.Context, beat queuedBeat) (*beatRequest, error) {
	r := &beatRequest{beat: beat, done: make(chan struct{})}
	b.mu.Lock()
	b.queue = append(b.queue, r)
	if b.busy {
		b.mu.Unlock()
		<-r.done
		if !r.lead {
			return r, r.err
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
	return r, r.err
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
	b.readWork(ctx, batch)
}

// readWork gives each committed heartbeat of batch the cards its agent
// works (WorkCard), read once for the batch; when they cannot be read the
// heartbeats stay committed but are answered with the error.
func (b *batcher) readWork(ctx context.Context, batch []*beatRequest) {
	if b.work == nil {
		return
	}
	var agents []string
	var since time.Time
	for _, r := range batch {
		if r.err == nil && !slices.Contains(agents, r.beat.hb.Agent) {
			agents = append(agents, r.beat.hb.Agent)
			since = r.beat.hb.ReceivedAt.Add(-WorkWindow)
		}
	}
	if len(agents) == 0 {
		return
	}
	work, err := b.work(ctx, agents, since)
	for _, r := range batch {
		switch {
		case r.err != nil:
		case err != nil:
			r.err = fmt.Errorf("read the cards worked: %w", err)
		default:
			r.work = work[r.beat.hb.Agent]
		}
	}
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
