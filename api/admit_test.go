package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// TestAdmission: no more than the cap of agent reports run at once; one
// whose caller gives up while it waits never runs, and the next one runs
// as soon as a running one ends.
func TestAdmission(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	var running, most, ran atomic.Int32
	h := (&admission{limit: 2}).admit(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		ran.Add(1)
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		entered <- struct{}{}
		<-release
		running.Add(-1)
	}))
	serve := func(ctx context.Context) chan struct{} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			r := httptest.NewRequest(http.MethodPost, "/api/agents/heartbeat", nil).WithContext(ctx)
			h.ServeHTTP(httptest.NewRecorder(), r)
		}()
		return done
	}
	for range 2 {
		serve(context.Background())
		<-entered
	}
	ctx, cancel := context.WithCancel(context.Background())
	gaveUp := serve(ctx)
	cancel()
	<-gaveUp
	if got := ran.Load(); got != 2 {
		t.Fatalf("%d reports ran, want 2: the one whose caller gave up ran", got)
	}
	last := serve(context.Background())
	release <- struct{}{} // the first ends; the last may start
	<-entered
	release <- struct{}{}
	release <- struct{}{}
	<-last
	if got := most.Load(); got != 2 {
		t.Errorf("at most %d reports ran at once, want 2", got)
	}
	if got := ran.Load(); got != 3 {
		t.Errorf("%d reports ran, want 3", got)
	}
}

// TestAdmissionLimitRaised: a report waiting for a slot runs as soon as the
// limit is raised, before the running one ends.
func TestAdmissionLimitRaised(t *testing.T) {
	a := &admission{limit: 1}
	entered, release := make(chan int), make(chan struct{})
	h := a.admit(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		entered <- len(r.URL.Query().Get("n"))
		<-release
	}))
	for _, n := range []string{"a", "bb"} {
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/?n="+n, nil))
	}
	first := <-entered
	a.setLimit(2)
	if second := <-entered; second == first {
		t.Fatalf("the same report entered twice")
	}
	close(release)
}
