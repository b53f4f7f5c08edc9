package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/client"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// balancer is a load balancer in front of the APIs of several Jarvis
// processes, as an operator puts one in front of two hosts: a reverse
// proxy that sends each request to the next backend in turn (round
// robin), and to the one after when a backend cannot be reached at all
// (a killed process), as a load balancer's passive health check does. A
// backend's answer, whatever it is, goes back to the caller. It counts
// each backend's answers to the agents' reports (api.IntakeRoutes).
type balancer struct {
	mu       sync.Mutex
	backends []string
	next     int
	// answers counts, by backend (host:port) and status, the answers to
	// POSTs of the agents' reports.
	answers map[string]map[int]int
	proxy   *httputil.ReverseProxy
	base    http.RoundTripper
}

// newBalancer starts a balancer on a free loopback address, stopped when
// t ends, and returns it with its base URL.
func newBalancer(t testing.TB, backends ...string) (*balancer, string) {
	t.Helper()
	addr := cardAPIListen(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	b, stop := serveBalancer(ln, backends...)
	t.Cleanup(stop)
	return b, "http://" + addr
}

// serveBalancer starts a balancer on ln; stop closes it. A load generator
// process (loadSpec.Backends) runs one without a test around it.
func serveBalancer(ln net.Listener, backends ...string) (b *balancer, stop func()) {
	b = &balancer{answers: map[string]map[int]int{}, base: &http.Transport{MaxIdleConnsPerHost: 128}}
	b.set(backends...)
	b.proxy = &httputil.ReverseProxy{
		// The transport picks the backend; this host is only a placeholder.
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(&url.URL{Scheme: "http", Host: "balanced"}) },
		Transport: b,
	}
	srv := &http.Server{Handler: b.proxy}
	go func() { _ = srv.Serve(ln) }()
	return b, func() { srv.Close() }
}

// set replaces the backends.
func (b *balancer) set(backends ...string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.backends = append([]string(nil), backends...)
}

// turn returns the backends in the order this request tries them: from
// the next one round.
func (b *balancer) turn() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	n := len(b.backends)
	out := make([]string, 0, n)
	for i := range n {
		out = append(out, b.backends[(b.next+i)%n])
	}
	b.next++
	return out
}

// RoundTrip sends req to the backends in turn until one can be reached.
func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	intake := req.Method == http.MethodPost && isIntakePath(req.URL.Path)
	err := errors.New("no backend")
	for _, host := range b.turn() {
		out := req.Clone(req.Context())
		out.URL.Host, out.Host = host, host
		out.Body = io.NopCloser(bytes.NewReader(body))
		resp, rerr := b.base.RoundTrip(out)
		if rerr == nil {
			if intake {
				b.count(host, resp.StatusCode)
			}
			return resp, nil
		}
		err = rerr
		var op *net.OpError
		if !errors.As(rerr, &op) || op.Op != "dial" {
			return nil, rerr
		}
	}
	return nil, err
}

func (b *balancer) count(host string, status int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.answers[host] == nil {
		b.answers[host] = map[int]int{}
	}
	b.answers[host][status]++
}

// answered returns a copy of the answers counted so far.
func (b *balancer) answered() map[string]map[int]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := map[string]map[int]int{}
	for host, by := range b.answers {
		out[host] = map[int]int{}
		for status, n := range by {
			out[host][status] = n
		}
	}
	return out
}

// isIntakePath says whether path is one of the agents' reports: a route
// of api.IntakeRoutes, matched as the API's mux matches it.
func isIntakePath(path string) bool {
	intakeMuxOnce.Do(func() {
		intakeMux = http.NewServeMux()
		for pattern := range api.IntakeRoutes {
			intakeMux.Handle(pattern, http.NotFoundHandler())
		}
	})
	_, pattern := intakeMux.Handler(&http.Request{Method: http.MethodPost, URL: &url.URL{Path: path}})
	return pattern != ""
}

var (
	intakeMuxOnce sync.Once
	intakeMux     *http.ServeMux
)

// balancedAgents are agents reporting through a load balancer in
// front of both Jarvis processes' APIs (TestTwoHostsFailover): apis are
// the holder's and the standby's, host:port; pinger is one more agent,
// which pings the standby alone.
type balancedAgents struct {
	apis   [2]string
	agents []string
	pinger string
}

// agentLoad is balancedAgents running: each agent heartbeats ten times a
// second, a cycle of its own each time, until stop; acked are the heartbeats answered 200.
type agentLoad struct {
	tokens workload.Tokens
	lb     *balancer
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	acked  []workload.AgentCycle
	failed int
}

// start starts the agents on tokens behind a new balancer.
func (b *balancedAgents) start(t testing.TB, tokens workload.Tokens) *agentLoad {
	lb, base := newBalancer(t, b.apis[0], b.apis[1])
	ctx, cancel := context.WithCancel(context.Background())
	l := &agentLoad{tokens: tokens, lb: lb, cancel: cancel}
	for _, agent := range b.agents {
		c := client.New(base, tokens.Agents[agent])
		c.HTTP = &http.Client{Timeout: 10 * time.Second}
		l.wg.Go(func() {
			mii := 0.9
			// Within the API's rate limit of one credential (ten a second
			// on each Jarvis).
			pace := time.NewTicker(100 * time.Millisecond)
			defer pace.Stop()
			for n := 0; ctx.Err() == nil; n++ {
				select {
				case <-ctx.Done():
					return
				case <-pace.C:
				}
				cycle := fmt.Sprintf("B-%d", n)
				_, err := c.Heartbeat(ctx, client.Heartbeat{Cycle: cycle, MII: &mii, Mode: "green"})
				l.mu.Lock()
				if err == nil {
					l.acked = append(l.acked, workload.AgentCycle{Agent: agent, Cycle: cycle})
				} else if ctx.Err() == nil {
					l.failed++
				}
				l.mu.Unlock()
			}
		})
	}
	return l
}

// stop ends the agents and checks that every heartbeat acknowledged is
// in st, once, and that both Jarvis processes acknowledged some.
func (l *agentLoad) stop(t testing.TB, st *store.Store, apis [2]string) {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	ctx := context.Background()
	for _, k := range l.acked {
		var n int
		if err := st.DB.QueryRow(ctx, `SELECT COUNT(*) FROM agent_heartbeat WHERE agent = $1 AND cycle = $2`, k.Agent, k.Cycle).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("acknowledged heartbeat of %s in cycle %s is stored %d times, want once", k.Agent, k.Cycle, n)
		}
	}
	answered := l.lb.answered()
	for _, api := range apis {
		if answered[api][http.StatusOK] == 0 {
			t.Errorf("the Jarvis at %s acknowledged no heartbeat through the load balancer: %v", api, answered[api])
		}
	}
	t.Logf("%d heartbeats acknowledged through the load balancer, each stored once; %d without an answer or refused; by Jarvis and status: %v",
		len(l.acked), l.failed, answered)
}
