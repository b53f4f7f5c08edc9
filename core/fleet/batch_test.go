package fleet

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// batchRecorder is a commit function that records what it committed and
// can hold the first commit until enough heartbeats queue behind it.
type batchRecorder struct {
	mu        sync.Mutex
	committed map[string]bool
	batches   []int
	hold      chan struct{}
	fail      func(beats []queuedBeat) error
	// entered is closed when the first commit starts.
	entered chan struct{}
	once    sync.Once
}

func newBatchRecorder(hold bool) *batchRecorder {
	br := &batchRecorder{committed: map[string]bool{}, entered: make(chan struct{})}
	if hold {
		br.hold = make(chan struct{})
	}
	return br
}

func (br *batchRecorder) commit(_ context.Context, beats []queuedBeat) error {
	br.once.Do(func() { close(br.entered) })
	if br.hold != nil {
		<-br.hold
	}
	if br.fail != nil {
		if err := br.fail(beats); err != nil {
			return err
		}
	}
	br.mu.Lock()
	defer br.mu.Unlock()
	for _, b := range beats {
		br.committed[b.hb.Cycle] = true
	}
	br.batches = append(br.batches, len(beats))
	return nil
}

func (br *batchRecorder) isCommitted(cycle string) bool {
	br.mu.Lock()
	defer br.mu.Unlock()
	return br.committed[cycle]
}

// queued waits until n requests wait in the batcher's queue.
func queued(t *testing.T, b *batcher, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		l := len(b.queue)
		b.mu.Unlock()
		if l >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d requests queued, want %d", l, n)
		}
		runtime.Gosched()
	}
}

// failOn fails every commit that holds a heartbeat for cycle with err.
func failOn(cycle string, err error) func(beats []queuedBeat) error {
	return func(beats []queuedBeat) error {
		if slices.ContainsFunc(beats, func(b queuedBeat) bool { return b.hb.Cycle == cycle }) {
			return err
		}
		return nil
	}
}

func beat(cycle string) queuedBeat { return queuedBeat{hb: Heartbeat{Agent: "EVE", Cycle: cycle}} }

func TestFleetBatcherGroupsAndAcknowledgesAfterCommit(t *testing.T) {
	br := newBatchRecorder(true)
	b := &batcher{commit: br.commit}
	var wg sync.WaitGroup
	// The first heartbeat leads and is held; the next ten queue behind it.
	do := func(cycle string) {
		defer wg.Done()
		if _, err := b.do(context.Background(), beat(cycle)); err != nil {
			t.Errorf("do(%s) = %v", cycle, err)
		}
		if !br.isCommitted(cycle) {
			t.Errorf("do(%s) returned before its commit", cycle)
		}
	}
	wg.Add(1)
	go do("C-0")
	<-br.entered
	for i := 1; i <= 10; i++ {
		wg.Add(1)
		go do(fmt.Sprintf("C-%d", i))
	}
	queued(t, b, 10)
	close(br.hold)
	wg.Wait()
	if !slices.Equal(br.batches, []int{1, 10}) {
		t.Errorf("batches = %v, want the held one alone, then the ten that queued in one", br.batches)
	}
	if b.busy || len(b.queue) != 0 {
		t.Errorf("batcher busy %v with %d queued, want idle", b.busy, len(b.queue))
	}
}

func TestFleetBatcherIsolatesAFailingHeartbeat(t *testing.T) {
	bad := errors.New("bad row")
	br := newBatchRecorder(true)
	br.fail = failOn("C-bad", bad)
	b := &batcher{commit: br.commit}
	var wg sync.WaitGroup
	errs := map[string]error{}
	var mu sync.Mutex
	do := func(cycle string) {
		defer wg.Done()
		_, err := b.do(context.Background(), beat(cycle))
		mu.Lock()
		errs[cycle] = err
		mu.Unlock()
	}
	wg.Add(1)
	go do("C-first")
	<-br.entered
	for _, c := range []string{"C-1", "C-bad", "C-2"} {
		wg.Add(1)
		go do(c)
	}
	queued(t, b, 3)
	close(br.hold)
	wg.Wait()
	for cycle, err := range errs {
		want := error(nil)
		if cycle == "C-bad" {
			want = bad
		}
		if !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("do(%s) = %v, want %v", cycle, err, want)
		}
		if committed := br.isCommitted(cycle); committed != (want == nil) {
			t.Errorf("%s committed = %v, want %v", cycle, committed, want == nil)
		}
	}
}

func TestFleetBatcherSurvivesAPanickingCommit(t *testing.T) {
	hold := make(chan struct{})
	entered := make(chan struct{})
	var calls atomic.Int32
	br := newBatchRecorder(false)
	b := &batcher{commit: func(ctx context.Context, beats []queuedBeat) error {
		switch calls.Add(1) {
		case 1:
			close(entered)
			<-hold
		case 2:
			panic("store bug")
		}
		return br.commit(ctx, beats)
	}}
	type result struct {
		err      error
		panicked any
	}
	results := map[string]chan result{}
	do := func(cycle string) {
		ch := make(chan result, 1)
		results[cycle] = ch
		go func() {
			var res result
			defer func() { res.panicked = recover(); ch <- res }()
			_, res.err = b.do(context.Background(), beat(cycle))
		}()
	}
	// C-0 commits alone (held); C-1 and C-2 queue and form the batch whose
	// commit panics; C-3 comes after.
	do("C-0")
	<-entered
	do("C-1")
	queued(t, b, 1)
	do("C-2")
	queued(t, b, 2)
	close(hold)
	if r := <-results["C-0"]; r.err != nil || r.panicked != nil {
		t.Errorf("C-0 = %+v, want committed", r)
	}
	if r := <-results["C-1"]; r.panicked == nil {
		t.Errorf("C-1 = %+v, want the panic of the batch it led", r)
	}
	if r := <-results["C-2"]; !errors.Is(r.err, errBatchAborted) {
		t.Errorf("C-2 = %+v, want %v", r, errBatchAborted)
	}
	if _, err := b.do(context.Background(), beat("C-3")); err != nil || !br.isCommitted("C-3") {
		t.Errorf("after the panic, do(C-3) = %v (committed %v), want it committed", err, br.isCommitted("C-3"))
	}
	if br.isCommitted("C-1") || br.isCommitted("C-2") {
		t.Error("the panicked batch was recorded as committed")
	}
}

// TestFleetBatcherReadsBreakersOncePerBatch: the answers of a batch say
// their agents' breaker states from one read made after the batch
// committed, of the agents whose heartbeats it committed; a heartbeat
// that failed reads nothing, and a read that fails fails the answers of
// the heartbeats it was for.
func TestFleetBatcherReadsBreakersOncePerBatch(t *testing.T) {
	bad := errors.New("bad row")
	br := newBatchRecorder(true)
	br.fail = failOn("C-bad", bad)
	var reads [][]string
	var readErr error
	b := &batcher{commit: br.commit, breakers: func(_ context.Context, agents []string) (map[string]string, error) {
		for _, agent := range agents {
			if !br.isCommitted("C-" + agent) {
				t.Errorf("the breaker of %s was read before its heartbeat committed", agent)
			}
		}
		reads = append(reads, slices.Sorted(slices.Values(agents)))
		return map[string]string{"EVE": "closed", "ZEUS": "open", "HERMES": "half-open"}, readErr
	}}
	beatOf := func(agent, cycle string) queuedBeat { return queuedBeat{hb: Heartbeat{Agent: agent, Cycle: cycle}} }
	type answer struct {
		state string
		err   error
	}
	var mu sync.Mutex
	answers := map[string]answer{}
	var wg sync.WaitGroup
	do := func(agent, cycle string) {
		defer wg.Done()
		done, err := b.do(context.Background(), beatOf(agent, cycle))
		mu.Lock()
		answers[agent+"/"+cycle] = answer{done.breaker, err}
		mu.Unlock()
	}
	// EVE leads alone (held); ZEUS twice, HERMES and a bad heartbeat of
	// APOLLO queue behind it.
	wg.Add(1)
	go do("EVE", "C-EVE")
	<-br.entered
	for _, q := range [][2]string{{"ZEUS", "C-ZEUS"}, {"ZEUS", "C-ZEUS"}, {"HERMES", "C-HERMES"}, {"APOLLO", "C-bad"}} {
		wg.Add(1)
		go do(q[0], q[1])
	}
	queued(t, b, 4)
	close(br.hold)
	wg.Wait()
	if want := [][]string{{"EVE"}, {"HERMES", "ZEUS"}}; !slices.EqualFunc(reads, want, slices.Equal) {
		t.Errorf("breaker reads %v, want one per batch of the agents it committed: %v", reads, want)
	}
	for key, want := range map[string]answer{
		"EVE/C-EVE": {state: "closed"}, "ZEUS/C-ZEUS": {state: "open"}, "HERMES/C-HERMES": {state: "half-open"},
		"APOLLO/C-bad": {err: bad},
	} {
		if got := answers[key]; got.state != want.state || !errors.Is(got.err, want.err) || (want.err == nil && got.err != nil) {
			t.Errorf("%s answered %+v, want %+v", key, got, want)
		}
	}

	readErr = errors.New("database gone")
	if done, err := b.do(context.Background(), beatOf("EVE", "C-EVE")); !errors.Is(err, readErr) || done.breaker != "" {
		t.Errorf("with the breakers unreadable: %q, %v; want %v", done.breaker, err, readErr)
	}
	if !br.isCommitted("C-EVE") {
		t.Error("the heartbeat whose breaker could not be read was not committed")
	}
}
