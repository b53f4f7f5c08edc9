package api

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
)

// ServeLoopback serves s on a loopback port until the test ends and
// returns its host:port. (Exported for the api_test package.)
func ServeLoopback(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestRateLimit, over real HTTP: once a caller's burst is spent it gets
// 429 with a Retry-After saying when to come back, and its request does
// nothing; a valid credential draws from its own bucket, and a wrong token
// from its address's, so that trying tokens gets no fresh bucket.
func TestRateLimit(t *testing.T) {
	const token = "agent-token-0123456789"
	s := New(Config{Listen: "127.0.0.1:0", RateLimit: RateLimitConfig{
		Credential: Rate{PerSecond: 0.5, Burst: 3},
		Address:    Rate{PerSecond: 0.25, Burst: 2},
	}}, zerolog.Nop(), func(context.Context) (Health, error) { return Health{}, nil }, tokenAuth{token: agentEVE})
	clock := coretest.NewClock(time.Date(2026, 4, 17, 0, 0, 0, 0, time.UTC))
	s.clock = clock
	var handled atomic.Int32
	s.HandleRole("POST /api/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	}))
	base := "http://" + ServeLoopback(t, s)
	call := func(method, path, token string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(`{}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body struct {
			Error    string
			LimitKey string `json:"limit_key"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), body.Error + " [" + body.LimitKey + "]"
	}
	steps := []struct {
		name, method, path, token string
		advance                   time.Duration
		code                      int
		retryAfter                string
	}{
		{name: "anonymous 1", method: "GET", path: "/healthz", code: 200},
		{name: "anonymous 2", method: "GET", path: "/healthz", code: 200},
		{name: "anonymous, burst spent", method: "GET", path: "/healthz", code: 429, retryAfter: "4"},
		{name: "a wrong token draws from the address", method: "POST", path: "/api/echo", token: "agent-token-0123456788", code: 429, retryAfter: "4"},
		{name: "agent 1", method: "POST", path: "/api/echo", token: token, code: 200},
		{name: "agent 2", method: "POST", path: "/api/echo", token: token, code: 200},
		{name: "agent 3", method: "POST", path: "/api/echo", token: token, code: 200},
		{name: "agent, burst spent", method: "POST", path: "/api/echo", token: token, code: 429, retryAfter: "2"},
		{name: "agent, one second on", method: "POST", path: "/api/echo", token: token, advance: time.Second, code: 429, retryAfter: "1"},
		{name: "agent, after Retry-After", method: "POST", path: "/api/echo", token: token, advance: time.Second, code: 200},
		{name: "anonymous, after Retry-After", method: "GET", path: "/healthz", advance: 2 * time.Second, code: 200},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		code, retry, msg := call(st.method, st.path, st.token)
		if code != st.code || retry != st.retryAfter {
			t.Fatalf("%s: %d Retry-After %q (%s), want %d Retry-After %q", st.name, code, retry, msg, st.code, st.retryAfter)
		}
		kind := "address"
		if st.token == token {
			kind = "credential"
		}
		if code == 429 && (!strings.Contains(msg, "rate limited") || !strings.Contains(msg, "[api.rate_limit."+kind+"]")) {
			t.Errorf("%s: 429 says %q, want it to say rate limited and name api.rate_limit.%s", st.name, msg, kind)
		}
	}
	if n := handled.Load(); n != 4 {
		t.Errorf("the handler ran %d times, want 4: never for a request refused with 429", n)
	}
}

// TestLimiterForgetsFullBuckets: a caller seen once does not stay in
// memory once its bucket has filled up again.
func TestLimiterForgetsFullBuckets(t *testing.T) {
	l := newLimiter(Rate{PerSecond: 0.1, Burst: 10})
	start := time.Date(2026, 4, 17, 0, 0, 0, 0, time.UTC)
	l.take("a", start)
	l.take("b", start.Add(sweepEvery))
	for range 9 {
		l.take("b", start.Add(sweepEvery))
	}
	l.take("c", start.Add(2*sweepEvery))
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.buckets["a"]; ok {
		t.Error("a's bucket, full again for a minute, is still kept")
	}
	if _, ok := l.buckets["b"]; !ok {
		t.Error("b's bucket, not full again yet, was forgotten")
	}
}

func TestAddressKey(t *testing.T) {
	for _, tt := range []struct{ remote, want string }{
		{"192.0.2.7:4711", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:4711", "192.0.2.7"},
		{"[2001:db8:1:2:aaaa::1]:4711", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:80", "2001:db8:1:2::/64"},
	} {
		if got := addressKey(tt.remote); got != tt.want {
			t.Errorf("addressKey(%s) = %s, want %s", tt.remote, got, tt.want)
		}
	}
}

// tokenAuth is an Authenticator of fixed tokens, for the server's own tests.
type tokenAuth map[string]credential.Principal

func (a tokenAuth) Authenticate(_ context.Context, token string) (credential.Principal, error) {
	if p, ok := a[token]; ok {
		return p, nil
	}
	return credential.Principal{}, core.ErrUnauthorized
}

// agentEVE is an agent credential for EVE.
var agentEVE = credential.Principal{Credential: credential.Credential{ID: "cred_eve", Role: credential.Agent, Agent: "EVE"}}

// countingAuth counts the questions put to an Authenticator.
type countingAuth struct {
	Authenticator
	calls atomic.Int32
}

func (a *countingAuth) Authenticate(ctx context.Context, token string) (credential.Principal, error) {
	a.calls.Add(1)
	return a.Authenticator.Authenticate(ctx, token)
}

// TestOneAuthenticationPerRequest: the rate limiter and the route's role
// check share one answer from the authenticator, for a valid token and
// for a wrong one alike.
func TestOneAuthenticationPerRequest(t *testing.T) {
	const token = "agent-token-0123456789"
	auth := &countingAuth{Authenticator: tokenAuth{token: agentEVE}}
	s := New(Config{Listen: "127.0.0.1:0", RateLimit: RateLimitConfig{
		Credential: Rate{PerSecond: 100, Burst: 100},
		Address:    Rate{PerSecond: 100, Burst: 100},
	}}, zerolog.Nop(), func(context.Context) (Health, error) { return Health{}, nil }, auth)
	s.HandleRole("POST /api/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true})
	}))
	for _, tt := range []struct {
		token string
		code  int
	}{{token, http.StatusOK}, {"wrong-token-0123456789", http.StatusUnauthorized}} {
		auth.calls.Store(0)
		req := httptest.NewRequest(http.MethodPost, "/api/echo", strings.NewReader(`{}`))
		req.Header.Set("Authorization", "Bearer "+tt.token)
		rec := httptest.NewRecorder()
		checkedHandler(t, s).ServeHTTP(rec, req)
		if rec.Code != tt.code || auth.calls.Load() != 1 {
			t.Errorf("token %q: status %d after %d authentications, want %d after 1", tt.token, rec.Code, auth.calls.Load(), tt.code)
		}
	}
}
