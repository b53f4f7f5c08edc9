package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/lease"
)

// fakeAuth knows tokens by their plaintext.
type fakeAuth map[string]credential.Principal

func (f fakeAuth) Authenticate(_ context.Context, token string) (credential.Principal, error) {
	p, ok := f[token]
	if !ok {
		return p, core.ErrUnauthorized
	}
	return p, nil
}

// testAuth holds the echo route's tokens: an agent's and a supervisor's.
var testAuth = fakeAuth{
	"agent-token-0123456789":      {Credential: credential.Credential{ID: "cred_a", Role: credential.Agent, Agent: "EVE"}},
	"supervisor-token-0123456789": {Credential: credential.Credential{ID: "cred_s", Role: credential.Supervisor}},
}

func newTestServer(health HealthFunc) *Server {
	auth := fakeAuth{}
	for k, v := range testAuth {
		auth[k] = v
	}
	s := New(Config{Listen: "127.0.0.1:0"}, zerolog.Nop(), health, auth)
	s.HandleRole("POST /api/echo", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Say string `json:"say"`
		}
		if err := DecodeJSON(w, r, &body); err != nil {
			WriteError(w, r, err)
			return
		}
		WriteJSON(w, http.StatusOK, body)
	}), credential.Agent)
	return s
}

func do(t testing.TB, s *Server, method, path, token, body string) (int, map[string]any) {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	checkedHandler(t, s).ServeHTTP(rec, req)
	var out map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &out)
	return rec.Code, out
}

// TestHealthz: anyone sees the status alone; the details (who Jarvis is,
// where, how its sync fares) go only to a caller with a valid credential.
func TestHealthz(t *testing.T) {
	ok := newTestServer(func(context.Context) (Health, error) {
		return Health{Synced: true, UserID: "@jarvis:x", RoomID: "!room:x", DeviceID: "JARVISDEV", SyncError: "dial tcp 10.0.0.7:8008"}, nil
	})
	down := newTestServer(func(context.Context) (Health, error) { return Health{}, errors.New("database locked") })
	tests := []struct {
		name   string
		server *Server
		token  string
		code   int
		want   string // the whole body, when it is the status alone
		check  func(body map[string]any) bool
	}{
		{name: "healthy, no token", server: ok, code: 200, want: `{"status":"ok"}`},
		{name: "healthy, wrong token", server: ok, token: "agent-token-0123456788", code: 200, want: `{"status":"ok"}`},
		{name: "healthy, agent token", server: ok, token: "agent-token-0123456789", code: 200,
			check: func(b map[string]any) bool {
				return b["status"] == "ok" && b["ok"] == true && b["synced"] == true && b["user_id"] == "@jarvis:x"
			}},
		{name: "unhealthy, no token", server: down, code: 503, want: `{"status":"degraded"}`},
		{name: "unhealthy, agent token", server: down, token: "agent-token-0123456789", code: 503,
			check: func(b map[string]any) bool {
				return b["status"] == "degraded" && b["ok"] == false && b["error"] == "database locked"
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/healthz", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			checkedHandler(t, tt.server).ServeHTTP(rec, req)
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			switch got := strings.TrimSpace(rec.Body.String()); {
			case rec.Code != tt.code:
				t.Errorf("/healthz = %d %s, want %d", rec.Code, got, tt.code)
			case tt.want != "" && got != tt.want:
				t.Errorf("/healthz body %s, want only %s", got, tt.want)
			case tt.check != nil && !tt.check(body):
				t.Errorf("/healthz body %s lacks the details", got)
			}
		})
	}
}

// TestHealthzBody: for a caller with a credential the body keeps the
// names, order and optional fields it had as a map, and adds the status.
func TestHealthzBody(t *testing.T) {
	tests := []struct {
		name   string
		health Health
		want   string
	}{
		{name: "syncing",
			health: Health{DeviceID: "JARVISDEV", Encryption: true, LastSync: time.Date(2025, 3, 1, 12, 0, 0, 500, time.UTC),
				Leader: true, OutboxDepth: 3, RoomID: "!room:x", Synced: true, UserID: "@jarvis:x"},
			want: `{"device_id":"JARVISDEV","encryption":true,"last_sync":"2025-03-01T12:00:00.0000005Z","leader":true,"ok":true,"outbox_depth":3,"room_id":"!room:x","status":"ok","synced":true,"user_id":"@jarvis:x"}`},
		{name: "never synced, failing",
			health: Health{DeviceID: "JARVISDEV", RoomID: "!room:x", SyncError: "connection refused", UserID: "@jarvis:x"},
			want:   `{"device_id":"JARVISDEV","encryption":false,"leader":false,"ok":true,"outbox_depth":0,"room_id":"!room:x","status":"ok","sync_error":"connection refused","synced":false,"user_id":"@jarvis:x"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newTestServer(func(context.Context) (Health, error) { return tt.health, nil })
			req := httptest.NewRequest("GET", "/healthz", nil)
			req.Header.Set("Authorization", "Bearer agent-token-0123456789")
			rec := httptest.NewRecorder()
			checkedHandler(t, s).ServeHTTP(rec, req)
			if got := strings.TrimSpace(rec.Body.String()); got != tt.want {
				t.Errorf("/healthz body\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestMetricsServed(t *testing.T) {
	const metricsToken = "metrics-token-0123456789"
	s := New(Config{Listen: "127.0.0.1:0", MetricsToken: metricsToken}, zerolog.Nop(),
		func(context.Context) (Health, error) { return Health{}, nil }, nil)
	do(t, s, "GET", "/healthz", "", "")
	req := httptest.NewRequest("GET", "/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+metricsToken)
	rec := httptest.NewRecorder()
	checkedHandler(t, s).ServeHTTP(rec, req)
	for _, want := range []string{"jarvis_http_requests_total", `route="GET /healthz"`, "jarvis_notices_sent_total"} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestAgentRoutes(t *testing.T) {
	s := newTestServer(nil)
	tests := []struct {
		name, token, body string
		code              int
		field             string
	}{
		{name: "no token", body: `{"say":"hi"}`, code: 401},
		{name: "wrong token", token: "agent-token-0123456788", body: `{"say":"hi"}`, code: 401},
		{name: "another role", token: "supervisor-token-0123456789", body: `{"say":"hi"}`, code: 403},
		{name: "good", token: "agent-token-0123456789", body: `{"say":"hi"}`, code: 200},
		{name: "an unknown field is ignored", token: "agent-token-0123456789", body: `{"say":"hi","shout":1}`, code: 200},
		{name: "wrong type", token: "agent-token-0123456789", body: `{"say":3}`, code: 400, field: "say"},
		{name: "malformed", token: "agent-token-0123456789", body: `{"say":`, code: 400, field: "body"},
		{name: "empty", token: "agent-token-0123456789", body: ``, code: 400, field: "body"},
		{name: "trailing data", token: "agent-token-0123456789", body: `{"say":"a"} {}`, code: 400, field: "body"},
		{name: "too large", token: "agent-token-0123456789", body: `{"say":"` + strings.Repeat("x", MaxBodyBytes) + `"}`, code: 400, field: "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := do(t, s, "POST", "/api/echo", tt.token, tt.body)
			if code != tt.code {
				t.Fatalf("status = %d (%v), want %d", code, body, tt.code)
			}
			if tt.field != "" && body["field"] != tt.field {
				t.Errorf("field = %v, want %s (%v)", body["field"], tt.field, body["error"])
			}
		})
	}
	auth := s.auth.(fakeAuth)
	auth["rotated-token-0123456789"] = auth["agent-token-0123456789"]
	delete(auth, "agent-token-0123456789")
	if code, _ := do(t, s, "POST", "/api/echo", "agent-token-0123456789", `{"say":"hi"}`); code != 401 {
		t.Errorf("the old token still works after rotation: %d", code)
	}
	if code, _ := do(t, s, "POST", "/api/echo", "rotated-token-0123456789", `{"say":"hi"}`); code != 200 {
		t.Errorf("the rotated token is refused: %d", code)
	}
}

// TestRoleRefusalNamesTheRole: a valid credential of the wrong role gets
// 403 with the role the route needs.
func TestRoleRefusalNamesTheRole(t *testing.T) {
	s := newTestServer(nil)
	code, body := do(t, s, "POST", "/api/echo", "supervisor-token-0123456789", `{"say":"hi"}`)
	roles, _ := body["needs_role"].([]any)
	if code != 403 || len(roles) != 1 || roles[0] != "agent" || !strings.Contains(body["error"].(string), "needs an agent token") {
		t.Errorf("supervisor token on an agent route = %d %v, want 403 naming the agent role", code, body)
	}
}

func TestStatusOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		code int
	}{
		{core.Invalid("x", "bad"), 400},
		{core.ErrNotFound, 404},
		{core.ErrDuplicate, 409},
		{core.ErrGone, 410},
		{core.ErrUnprocessable, 422},
		{core.ErrRateLimited, 429},
		{core.OverLimit(core.ErrTooLarge, "fleet.journal.max_entry_bytes", "big"), 413},
		{core.ErrForbidden, 403},
		{core.ErrBreakerOpen, 423},
		{errors.New("disk"), 500},
	} {
		if got := StatusOf(tt.err); got != tt.code {
			t.Errorf("StatusOf(%v) = %d, want %d", tt.err, got, tt.code)
		}
	}
}

// TestMetricsToken: with api.metrics_token set, /metrics answers only a
// request carrying it; not even the agent token opens it.
func TestMetricsToken(t *testing.T) {
	const metricsToken = "metrics-token-0123456789"
	s := New(Config{Listen: "127.0.0.1:0", MetricsToken: metricsToken}, zerolog.Nop(),
		func(context.Context) (Health, error) { return Health{}, nil }, tokenAuth{"agent-token-0123456789": agentEVE})
	for _, tt := range []struct {
		name, token string
		code        int
	}{
		{name: "no token", code: 401},
		{name: "the agent token", token: "agent-token-0123456789", code: 401},
		{name: "the metrics token", token: metricsToken, code: 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest("GET", "/metrics", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			checkedHandler(t, s).ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("/metrics = %d, want %d", rec.Code, tt.code)
			}
			if has := strings.Contains(rec.Body.String(), "jarvis_http_requests_total"); has != (tt.code == 200) {
				t.Errorf("/metrics with %s shows the metrics: %v", tt.name, has)
			}
		})
	}
}

// TestMetricsClosedWithoutToken: with neither api.metrics_token nor
// api.metrics_listen, api.listen serves neither /metrics nor the profiles,
// whoever asks.
func TestMetricsClosedWithoutToken(t *testing.T) {
	s := New(Config{Listen: "127.0.0.1:0"}, zerolog.Nop(),
		func(context.Context) (Health, error) { return Health{}, nil }, tokenAuth{"agent-token-0123456789": agentEVE})
	for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/goroutine?debug=1"} {
		for _, token := range []string{"", "agent-token-0123456789"} {
			req := httptest.NewRequest("GET", path, nil)
			if token != "" {
				req.Header.Set("Authorization", "Bearer "+token)
			}
			rec := httptest.NewRecorder()
			s.Handler().ServeHTTP(rec, req)
			if rec.Code != http.StatusNotFound {
				t.Errorf("%s with token %q = %d, want 404", path, token, rec.Code)
			}
		}
	}
}

// TestMetricsConfig: a metrics listener without a token is loopback
// only, and profiling needs the token.
func TestMetricsConfig(t *testing.T) {
	base := Config{Listen: "127.0.0.1:8080", ReadTimeout: time.Second, WriteTimeout: time.Second, IdleTimeout: time.Second,
		MaxHeaderBytes: 4096, MaxConnections: 8,
		RateLimit: RateLimitConfig{Credential: Rate{PerSecond: 1, Burst: 1}, Address: Rate{PerSecond: 1, Burst: 1}}}
	for _, tt := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{name: "a loopback metrics listener", edit: func(c *Config) { c.MetricsListen = "127.0.0.1:9464" }},
		{name: "localhost", edit: func(c *Config) { c.MetricsListen = "localhost:9464" }},
		{name: "IPv6 loopback", edit: func(c *Config) { c.MetricsListen = "[::1]:9464" }},
		{name: "every address without a token", edit: func(c *Config) { c.MetricsListen = "0.0.0.0:9464" }, field: "api.metrics_listen"},
		{name: "every address with a token", edit: func(c *Config) {
			c.MetricsListen, c.MetricsToken = ":9464", "metrics-token-0123456789"
		}},
		{name: "profiling without a token", edit: func(c *Config) { c.MetricsListen, c.Profiling = "127.0.0.1:9464", true }, field: "api.profiling"},
		{name: "profiling with a token", edit: func(c *Config) { c.Profiling, c.MetricsToken = true, "metrics-token-0123456789" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base
			tt.edit(&cfg)
			err := cfg.Validate()
			var fe *core.FieldError
			switch {
			case tt.field == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.field != "" && (!errors.As(err, &fe) || fe.Field != tt.field):
				t.Errorf("got %v, want a refusal of %s", err, tt.field)
			}
		})
	}
}

// TestProfiling: the Go profiles are served only with api.profiling on,
// and then behind the metrics token as /metrics is.
func TestProfiling(t *testing.T) {
	const metricsToken = "metrics-token-0123456789"
	for _, tt := range []struct {
		name      string
		profiling bool
		token     string
		code      int
	}{
		{name: "off", token: metricsToken, code: 404},
		{name: "on, no token", profiling: true, code: 401},
		{name: "on, the metrics token", profiling: true, token: metricsToken, code: 200},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{Listen: "127.0.0.1:0", MetricsToken: metricsToken, Profiling: tt.profiling}, zerolog.Nop(),
				func(context.Context) (Health, error) { return Health{}, nil }, nil)
			req := httptest.NewRequest("GET", "/debug/pprof/goroutine?debug=1", nil)
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			checkedHandler(t, s).ServeHTTP(rec, req)
			if rec.Code != tt.code {
				t.Fatalf("/debug/pprof/goroutine = %d, want %d", rec.Code, tt.code)
			}
			if has := strings.Contains(rec.Body.String(), "goroutine profile:"); has != (tt.code == 200) {
				t.Errorf("the goroutine profile is shown: %v", has)
			}
		})
	}
}

// TestMetricsListen: with api.metrics_listen set, /metrics is served there
// over real HTTP, and no longer on the API's listener.
func TestMetricsListen(t *testing.T) {
	s := New(Config{Listen: "127.0.0.1:0", MetricsListen: "127.0.0.1:0"}, zerolog.Nop(),
		func(context.Context) (Health, error) { return Health{}, nil }, nil)
	var lns [2]net.Listener
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.serve(ctx, lns[0], lns[1]) }()
	defer func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	get := func(ln net.Listener, path string) (int, string) {
		t.Helper()
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	if code, body := get(lns[1], "/metrics"); code != 200 || !strings.Contains(body, "jarvis_http_requests_total") {
		t.Errorf("/metrics on metrics_listen = %d, want 200 with the metrics", code)
	}
	if code, _ := get(lns[0], "/metrics"); code != 404 {
		t.Errorf("/metrics on the API listener = %d, want 404", code)
	}
	if code, _ := get(lns[1], "/healthz"); code != 404 {
		t.Errorf("/healthz on metrics_listen = %d, want 404: only /metrics is served there", code)
	}
	if code, _ := get(lns[0], "/healthz"); code != 200 {
		t.Errorf("/healthz on the API listener = %d, want 200", code)
	}
}

// TestStandbyRefusesWrites: while another Jarvis holds the workspace
// lease, a request that may write is answered 503 with Retry-After, and
// a caller with a valid token learns the holder; reads are served. A
// write the store's fence refused on the way (the lease lost meanwhile)
// gets the same answer.
func TestStandbyRefusesWrites(t *testing.T) {
	holding := lease.Record{WorkspaceID: "ws", Holder: "host-b/42/abc", Epoch: 7}
	var standby bool
	s := newTestServer(func(context.Context) (Health, error) { return Health{Status: "ok", OK: true}, nil })
	s.RefuseWritesWhen(func(context.Context) error {
		if standby {
			return &lease.HeldError{Lease: holding}
		}
		return nil
	})
	s.HandleRole("POST /api/fenced", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteError(w, r, fmt.Errorf("write: %w", core.ErrStaleEpoch))
	}), credential.Agent)
	tests := []struct {
		name, method, path, token string
		standby                   bool
		code                      int
		wantHolder                bool
	}{
		{name: "the holder takes the write", method: "POST", path: "/api/echo", token: "agent-token-0123456789", code: 200},
		{name: "a standby refuses it and names the holder", standby: true, method: "POST", path: "/api/echo",
			token: "agent-token-0123456789", code: 503, wantHolder: true},
		{name: "but not to a caller without a token", standby: true, method: "POST", path: "/api/echo", code: 503},
		{name: "a standby serves reads", standby: true, method: "GET", path: "/healthz", code: 200},
		{name: "a write fenced on the way", method: "POST", path: "/api/fenced", token: "agent-token-0123456789", code: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			standby = tt.standby
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(`{"say":"hi"}`))
			if tt.token != "" {
				req.Header.Set("Authorization", "Bearer "+tt.token)
			}
			rec := httptest.NewRecorder()
			checkedHandler(t, s).ServeHTTP(rec, req)
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			if rec.Code != tt.code {
				t.Fatalf("status %d (%v), want %d", rec.Code, body, tt.code)
			}
			if retry := rec.Header().Get("Retry-After"); (tt.code == 503) != (retry == "5") {
				t.Errorf("Retry-After %q with status %d", retry, rec.Code)
			}
			if got := body["holder"] == holding.Holder; got != tt.wantHolder {
				t.Errorf("holder named: %v (%v), want %v", got, body, tt.wantHolder)
			}
			if tt.code == 503 && strings.Contains(rec.Body.String(), "host-b") != tt.wantHolder {
				t.Errorf("the body %s names the holder to a caller without a valid token", rec.Body.String())
			}
		})
	}
}

// TestStandbyServesIntake: where every Jarvis serves the agents
// (ServeIntakeEverywhere, on PostgreSQL), a standby takes an intake route's
// write, marked core.Intake for the store, and still refuses every other
// write with 503; where it does not (SQLite), it refuses both.
func TestStandbyServesIntake(t *testing.T) {
	for _, everywhere := range []bool{true, false} {
		t.Run(fmt.Sprintf("everywhere=%v", everywhere), func(t *testing.T) {
			s := newTestServer(func(context.Context) (Health, error) { return Health{Status: "ok", OK: true}, nil })
			s.RefuseWritesWhen(func(context.Context) error {
				return &lease.HeldError{Lease: lease.Record{WorkspaceID: "ws", Holder: "host-b/42/abc", Epoch: 7}}
			})
			if everywhere {
				s.ServeIntakeEverywhere()
			}
			var intake bool
			s.HandleRole("POST /api/ping", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				intake = core.IsIntake(r.Context())
				WriteJSON(w, http.StatusOK, map[string]any{})
			}), credential.Agent)
			for _, tt := range []struct {
				path string
				code int
			}{
				{"/api/ping", map[bool]int{true: 200, false: 503}[everywhere]},
				{"/api/echo", 503},
			} {
				req := httptest.NewRequest("POST", tt.path, strings.NewReader(`{"say":"hi"}`))
				req.Header.Set("Authorization", "Bearer agent-token-0123456789")
				rec := httptest.NewRecorder()
				s.Handler().ServeHTTP(rec, req)
				if rec.Code != tt.code {
					t.Errorf("POST %s: status %d (%s), want %d", tt.path, rec.Code, rec.Body, tt.code)
				}
			}
			if intake != everywhere {
				t.Errorf("the intake route's context marked intake: %v, want %v", intake, everywhere)
			}
		})
	}
}
