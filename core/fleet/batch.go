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
	// awaited, when set, reads the subjects awaiting those agents'
	// attestations, once for the batch, for their answers.
	awaited func(ctx context.Context, now time.Time, agents []string) (map[string][]string, error)

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
	// awaited are the subjects awaiting its agent's attestation.
	awaited []string
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
// reads what the answers say of the committed heartbeats' agents, each in one read.
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
	// What each answer says besides the receipt, read once for the batch:
	// the breaker's state, the cards the agent works, the subjects
	// awaiting its attestation.
	if b.breakers != nil {
		readForAgents(ctx, batch, "the breakers", func(ctx context.Context, agents []string, _ time.Time) (map[string]string, error) {
			return b.breakers(ctx, agents)
		}, func(r *beatRequest, state string) { r.breaker = state })
	}
	if b.work != nil {
		readForAgents(ctx, batch, "the cards worked", func(ctx context.Context, agents []string, at time.Time) (map[string][]WorkCard, error) {
			return b.work(ctx, agents, at.Add(-WorkWindow))
		}, func(r *beatRequest, cards []WorkCard) { r.work = cards })
	}
	if b.awaited != nil {
		readForAgents(ctx, batch, "the attestations awaited", func(ctx context.Context, agents []string, at time.Time) (map[string][]string, error) {
			return b.awaited(ctx, at, agents)
		}, func(r *beatRequest, ids []string) { r.awaited = ids })
	}
}

// readForAgents reads, once for the batch, what each committed heartbeat's
// answer says of its agent: read gets the agents and when the last of
// their heartbeats came, give hands each request its agent's part. When
// the read fails the heartbeats stay committed but are answered with the
// error, as an answer must say it.
func readForAgents[T any](ctx context.Context, batch []*beatRequest, what string,
	read func(ctx context.Context, agents []string, at time.Time) (map[string]T, error), give func(r *beatRequest, v T)) {
	var agents []string
	var at time.Time
	for _, r := range batch {
		if r.err == nil && !slices.Contains(agents, r.beat.hb.Agent) {
			agents = append(agents, r.beat.hb.Agent)
			at = r.beat.hb.ReceivedAt
		}
	}
	if len(agents) == 0 {
		return
	}
	got, err := read(ctx, agents, at)
	for _, r := range batch {
		switch {
		case r.err != nil:
		case err != nil:
			r.err = fmt.Errorf("read %s: %w", what, err)
		default:
			give(r, got[r.beat.hb.Agent])
		}
	}
}
