// Package api is Jarvis's HTTP API for agents and tools, plus /healthz and
// /metrics. Handlers validate and authenticate, then call core services.
package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
	"golang.org/x/net/netutil"
	"golang.org/x/sync/errgroup"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// Config is the API's part of the configuration. config.example.yaml gives
// the defaults; in a Config built in code (as tests build it), a zero
// timeout, size or cap is net/http's (none, except 10s for the headers)
// and a zero rate sets no limit.
type Config struct {
	// Listen is host:port; empty turns the API off.
	Listen string
	// ReadTimeout bounds reading one request, headers and body.
	ReadTimeout time.Duration
	// WriteTimeout bounds handling a request and writing the answer.
	WriteTimeout time.Duration
	// IdleTimeout is how long a kept-alive connection may wait for its
	// next request.
	IdleTimeout time.Duration
	// MaxHeaderBytes bounds the size of a request's headers.
	MaxHeaderBytes int
	// MaxConnections caps the connections open at once on each listener;
	// more wait until one closes.
	MaxConnections int
	// RateLimit bounds how many requests each caller may make.
	RateLimit RateLimitConfig
	// Intake bounds agents' writes handled at once.
	Intake IntakeConfig
	// MetricsListen is host:port of a listener of its own for /metrics;
	// without MetricsToken it must be a loopback address.
	MetricsListen string
	// MetricsToken, when set, is the bearer token /metrics asks for, on
	// MetricsListen or, when that is empty, on Listen. Without it and
	// without MetricsListen, /metrics is not served at all.
	MetricsToken string
	// Profiling serves Go's profiles (/debug/pprof/) beside /metrics, on
	// its listener and behind its token; it needs MetricsToken.
	Profiling bool
}

// RateLimitConfig sets the token buckets of the callers: one per valid
// credential, and one per remote address (an IPv6 address by its /64) for
// requests without a valid credential.
type RateLimitConfig struct {
	Credential Rate
	Address    Rate
}

// Rate is a token bucket: PerSecond requests a second on average, Burst at
// once.
type Rate struct {
	PerSecond float64
	Burst     int
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Listen == "" {
		if c.MetricsListen != "" {
			return core.Invalid("api.metrics_listen", "needs api.listen: /metrics is part of the API")
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return core.Invalid("api.listen", "must be host:port: %v", err)
	}
	for _, d := range []struct {
		key string
		d   time.Duration
	}{{"api.read_timeout", c.ReadTimeout}, {"api.write_timeout", c.WriteTimeout}, {"api.idle_timeout", c.IdleTimeout}} {
		if d.d <= 0 {
			return core.Invalid(d.key, "must be more than 0s, got %s", d.d)
		}
	}
	switch {
	case c.MaxHeaderBytes < 1024:
		return core.Invalid("api.max_header_bytes", "must be at least 1024, got %d", c.MaxHeaderBytes)
	case c.MaxConnections < 1:
		return core.Invalid("api.max_connections", "must be at least 1, got %d", c.MaxConnections)
	}
	if err := c.Intake.validate(); err != nil {
		return err
	}
	for _, r := range []struct {
		key  string
		rate Rate
	}{{"api.rate_limit.credential", c.RateLimit.Credential}, {"api.rate_limit.address", c.RateLimit.Address}} {
		switch {
		case r.rate.PerSecond <= 0:
			return core.Invalid(r.key+".per_second", "must be more than 0, got %g", r.rate.PerSecond)
		case r.rate.Burst < 1:
			return core.Invalid(r.key+".burst", "must be at least 1, got %d", r.rate.Burst)
		}
	}
	if c.MetricsListen != "" {
		host, _, err := net.SplitHostPort(c.MetricsListen)
		if err != nil {
			return core.Invalid("api.metrics_listen", "must be host:port: %v", err)
		}
		if c.MetricsListen == c.Listen {
			return core.Invalid("api.metrics_listen", "must differ from api.listen (set api.metrics_token to serve /metrics there)")
		}
		if c.MetricsToken == "" && !isLoopback(host) {
			return core.Invalid("api.metrics_listen", "must be a loopback address such as 127.0.0.1:9464 without api.metrics_token, got %q", c.MetricsListen)
		}
	}
	if c.MetricsToken != "" && len(c.MetricsToken) < 16 {
		return core.Invalid("api.metrics_token", "must be at least 16 characters when set")
	}
	if c.Profiling && c.MetricsToken == "" {
		return core.Invalid("api.profiling", "needs api.metrics_token: the profiles are never served without a token")
	}
	return nil
}

// isLoopback reports whether host (of a host:port) names the loopback
// interface alone: localhost, 127.0.0.0/8 or ::1.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Health is the body of /healthz for a caller with a valid credential. The
// fields are in the order of their JSON names, as the body has always had
// them.
type Health struct {
	DeviceID   string `json:"device_id"`
	Encryption bool   `json:"encryption"`
	// LastSync is when the last Matrix sync succeeded; absent before the
	// first.
	LastSync time.Time `json:"last_sync,omitzero"`
	// Leader says whether this Jarvis holds the workspace lease.
	Leader bool `json:"leader"`
	// OK is true whenever the state could be read (status 200).
	OK          bool   `json:"ok"`
	OutboxDepth int    `json:"outbox_depth"`
	RoomID      string `json:"room_id"`
	// Status is "ok", or "degraded" when the state could not be read;
	// it is all that a caller without a credential sees.
	Status string `json:"status"`
	// SyncError is why syncing fails; absent while it works.
	SyncError string `json:"sync_error,omitempty"`
	Synced    bool   `json:"synced"`
	UserID    string `json:"user_id"`
}

// HealthFunc reports the state /healthz shows; an error makes it 503.
type HealthFunc func(ctx context.Context) (Health, error)

// Server is the HTTP API.
type Server struct {
	cfg    Config
	log    zerolog.Logger
	clock  core.Clock
	mux    *http.ServeMux
	health HealthFunc
	auth   Authenticator
	limits limits
	// intake admits agents' writes (see IntakeConfig).
	intake  *intake
	srv     *http.Server
	metrics *http.Server // nil unless api.metrics_listen is set
	// standby: see RefuseWritesWhen.
	standby func(ctx context.Context) error
	// intakeEverywhere: see ServeIntakeEverywhere.
	intakeEverywhere bool
	// unknown remembers the unknown fields already logged.
	unknown unknownFields
	// routes are the patterns registered, in order.
	routes []string
	// bearers name the holders of tokens that are no agent credential
	// (a person's personal or feed token, the metrics token), each for a
	// rate-limit bucket of its own; see limit.
	bearers []BearerBucket
	// bodyLimits are the routes whose bodies may be larger, or must be
	// smaller, than MaxBodyBytes (SetBodyLimit).
	bodyLimits map[string]int64
}

// BearerBucket names the rate-limit bucket of a bearer token that is not
// an agent credential: ok is false for a token it does not know.
type BearerBucket func(ctx context.Context, token string) (bucket string, ok bool)

// LimitBearers gives the holders of the tokens bucket knows a rate-limit
// bucket each, as the agents' credentials have (api.rate_limit.credential),
// so that they do not spend the bucket of their remote address, which
// health checks, metrics and everyone behind the same proxy share.
func (s *Server) LimitBearers(bucket BearerBucket) { s.bearers = append(s.bearers, bucket) }

// New builds the server with /healthz and /metrics; the owners of other
// routes add them with Handle or HandleRole before Run. auth checks the
// bearer tokens of the routes HandleRole registers.
func New(cfg Config, log zerolog.Logger, health HealthFunc, auth Authenticator) *Server {
	s := &Server{cfg: cfg, log: log.With().Str("component", "api").Logger(), clock: core.SystemClock{},
		mux: http.NewServeMux(), health: health, auth: auth, intake: newIntake(cfg.Intake)}
	s.limits = limits{credential: newLimiter(cfg.RateLimit.Credential), address: newLimiter(cfg.RateLimit.Address)}
	s.Handle("GET /healthz", http.HandlerFunc(s.getHealth))
	s.Handle("GET /api/openapi.json", http.HandlerFunc(getOpenAPI))
	// Open to anyone who reaches api.listen, the metrics would tell them
	// the fleet's load and the store's health, and the profiles the
	// program's internals: /metrics is served behind its token or on a
	// loopback listener of its own, else not at all, and the profiles
	// only behind the token.
	observe := map[string]http.Handler{}
	if cfg.MetricsToken != "" {
		s.LimitBearers(func(_ context.Context, token string) (string, bool) {
			return "metrics", subtle.ConstantTimeCompare([]byte(token), []byte(cfg.MetricsToken)) == 1
		})
	}
	if cfg.MetricsToken != "" || cfg.MetricsListen != "" {
		observe["GET /metrics"] = promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{})
	}
	if cfg.Profiling && cfg.MetricsToken != "" {
		observe["GET /debug/pprof/"] = http.HandlerFunc(pprof.Index)
		observe["GET /debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		observe["GET /debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	var own *http.ServeMux // metrics_listen's
	if cfg.MetricsListen != "" {
		own = http.NewServeMux()
		s.metrics = s.httpServer(cfg.MetricsListen, s.limit(own))
	}
	for pattern, h := range observe {
		if cfg.MetricsToken != "" {
			h = requireBearer(cfg.MetricsToken, "jarvis metrics", h)
		}
		if own != nil {
			own.Handle(pattern, h)
		} else {
			s.Handle(pattern, h)
		}
	}
	s.srv = s.httpServer(cfg.Listen, s.limit(http.HandlerFunc(s.serveRoutes)))
	return s
}

// serveRoutes serves a request by the mux, answering one that no route takes
// (404) or no route takes with its method (405, with Allow) as problem
// details.
func (s *Server) serveRoutes(w http.ResponseWriter, r *http.Request) {
	h, pattern := s.mux.Handler(r)
	if pattern != "" {
		s.mux.ServeHTTP(w, r)
		return
	}
	unrouted := &headerRecorder{header: http.Header{}}
	h.ServeHTTP(unrouted, r)
	switch unrouted.code {
	case http.StatusNotFound:
		writeProblem(w, r, http.StatusNotFound, "not-found", "no route "+r.URL.Path+"; the routes are in /api/openapi.json", map[string]any{})
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", unrouted.header.Get("Allow"))
		writeProblem(w, r, http.StatusMethodNotAllowed, "method-not-allowed",
			r.URL.Path+" takes "+unrouted.header.Get("Allow")+", not "+r.Method, map[string]any{})
	default: // a redirect to the clean path
		for k, v := range unrouted.header {
			w.Header()[k] = v
		}
		w.WriteHeader(unrouted.code)
	}
}

// headerRecorder keeps the status and headers the mux answers a request
// without a route with, and drops its plain-text body.
type headerRecorder struct {
	header http.Header
	code   int
}

func (h *headerRecorder) Header() http.Header         { return h.header }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil }
func (h *headerRecorder) WriteHeader(code int)        { h.code = code }

// httpServer is an http.Server with the configured timeouts and header
// limit.
func (s *Server) httpServer(addr string, h http.Handler) *http.Server {
	headerTimeout := s.cfg.ReadTimeout
	if headerTimeout == 0 {
		headerTimeout = 10 * time.Second
	}
	return &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: headerTimeout, ReadTimeout: s.cfg.ReadTimeout,
		WriteTimeout: s.cfg.WriteTimeout, IdleTimeout: s.cfg.IdleTimeout, MaxHeaderBytes: s.cfg.MaxHeaderBytes}
}

// Handler returns the server's routes behind its rate limits, for tests
// with httptest.
func (s *Server) Handler() http.Handler { return s.srv.Handler }

// RefuseWritesWhen makes every request that may write (any method but GET
// and HEAD) ask standby first. Jarvis wires it to "another Jarvis holds
// the workspace lease" (a *lease.HeldError): such a request is answered
// 503 with Retry-After and, to a caller whose token is valid, the holder,
// so that the agent or a load balancer sends it there; reads are served,
// and so are the intake routes where ServeIntakeEverywhere says so.
// Call it before Run.
func (s *Server) RefuseWritesWhen(standby func(ctx context.Context) error) { s.standby = standby }

// ServeIntakeEverywhere makes the intake routes (IntakeRoutes) skip the
// standby check: every Jarvis stores agents' reports, lease or not, and
// the store holds back what they would send for the holder. Jarvis calls
// it on PostgreSQL, which several Jarvis processes share; on SQLite only
// the holder serves writes. Call it before Run.
func (s *Server) ServeIntakeEverywhere() { s.intakeEverywhere = true }

// IntakeRoutes are the routes by which agents report (heartbeats, pings,
// journal entries, attestations and their subjects, card sets, sign-offs,
// approval requests, a supervisor's breach and observations) and
// Alertmanager notifies: what they store is intake, stored exactly once
// by whichever Jarvis receives it (idempotency keys and the database's
// constraints), and their requests' contexts are marked core.Intake.
var IntakeRoutes = map[string]bool{
	"POST /api/agents/heartbeat":             true,
	"POST /api/ping":                         true,
	"POST /api/ping/start":                   true,
	"POST /api/ping/fail":                    true,
	"POST /api/ping/{exit_status}":           true,
	"POST /api/agents/journal":               true,
	"POST /api/attestations":                 true,
	"POST /api/vault/seal/attest":            true,
	"POST /api/attestations/subjects":        true,
	"POST /api/cardsets":                     true,
	"POST /api/cards/{id}/signoffs":          true,
	"POST /api/approvals":                    true,
	"POST /api/breaker/{agent}/open":         true,
	"POST /api/breaker/{agent}/observations": true,
	"POST /api/alertmanager":                 true,
}

// Handle registers an unauthenticated route; pattern is a ServeMux pattern
// such as "GET /healthz". A request body the OpenAPI document describes is
// validated before h sees it.
func (s *Server) Handle(pattern string, h http.Handler) { s.register(pattern, s.validated(pattern, h)) }

// SetBodyLimit bounds the body of the route pattern, registered after,
// at limit bytes instead of MaxBodyBytes.
func (s *Server) SetBodyLimit(pattern string, limit int64) {
	if s.bodyLimits == nil {
		s.bodyLimits = map[string]int64{}
	}
	s.bodyLimits[pattern] = limit
}

// maxBody is how large a body the route pattern reads.
func (s *Server) maxBody(pattern string) int64 {
	if limit, ok := s.bodyLimits[pattern]; ok {
		return limit
	}
	return MaxBodyBytes
}

// Routes returns the patterns of the routes registered, in the order they
// were.
func (s *Server) Routes() []string { return slices.Clone(s.routes) }

// register adds a route behind the standby check, with its logger and
// request count.
func (s *Server) register(pattern string, h http.Handler) {
	s.routes = append(s.routes, pattern)
	route := pattern
	// The route's logger is the same for every request to it.
	log := s.log.With().Str("route", route).Logger()
	intake := IntakeRoutes[pattern]
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		ctx := log.WithContext(r.Context())
		if intake {
			ctx = core.Intake(ctx)
		}
		r = r.WithContext(ctx)
		if err := s.writable(r, intake); err != nil {
			WriteError(rec, r, err)
		} else {
			h.ServeHTTP(rec, r)
		}
		metrics.HTTPRequests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
	}))
}

// writable asks RefuseWritesWhen's standby about a request that may write.
func (s *Server) writable(r *http.Request, intake bool) error {
	if s.standby == nil || r.Method == http.MethodGet || r.Method == http.MethodHead || intake && s.intakeEverywhere {
		return nil
	}
	return s.standby(r.Context())
}

// authenticatedIn reports whether the request's bearer token was found
// valid (by the rate limiter, which sees every request first).
func authenticatedIn(r *http.Request) bool {
	a, ok := r.Context().Value(authenticatedKey{}).(authenticated)
	return ok && a.err == nil
}

// authenticated is the answer the authenticator gave for a request's
// bearer token, kept in the request's context.
type authenticated struct {
	principal credential.Principal
	err       error
}

type authenticatedKey struct{}

// authenticate returns who the request's bearer token acts as; a missing
// or invalid token is core.ErrUnauthorized. It is the one check behind the
// rate-limit bucket a request draws from, the details of /healthz and the
// routes of HandleRole, and it asks the authenticator once per request:
// the rate limiter, which sees every request first, keeps the answer in
// the request's context for the handlers behind it.
func (s *Server) authenticate(r *http.Request) (credential.Principal, error) {
	if a, ok := r.Context().Value(authenticatedKey{}).(authenticated); ok {
		return a.principal, a.err
	}
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" || s.auth == nil {
		return credential.Principal{}, core.ErrUnauthorized
	}
	return s.auth.Authenticate(r.Context(), token)
}

// withAuthenticated returns r carrying the authenticator's answer.
func withAuthenticated(r *http.Request, p credential.Principal, err error) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), authenticatedKey{}, authenticated{principal: p, err: err}))
}

// bearerIs reports whether the request carries "Authorization: Bearer
// want", compared in constant time; an empty want matches nothing.
func bearerIs(r *http.Request, want string) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// requireBearer answers 401 to a request without "Authorization: Bearer
// token".
func requireBearer(token, realm string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearerIs(r, token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
			WriteError(w, r, core.ErrUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// getHealth answers anyone with the status alone, and a caller with a
// valid credential with the details (who Jarvis is, where, how its sync
// and outbox fare), which `!sys status` shows in the room.
func (s *Server) getHealth(w http.ResponseWriter, r *http.Request) {
	state, err := s.health(r.Context())
	_, authErr := s.authenticate(r)
	detailed := authErr == nil
	switch {
	case err != nil && detailed:
		WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"status": "degraded", "ok": false, "error": err.Error()})
	case err != nil:
		WriteJSON(w, http.StatusServiceUnavailable, publicHealth{Status: "degraded"})
	case detailed:
		state.OK, state.Status = true, "ok"
		WriteJSON(w, http.StatusOK, state)
	default:
		WriteJSON(w, http.StatusOK, publicHealth{Status: "ok"})
	}
}

// publicHealth is /healthz for a caller without a credential.
type publicHealth struct {
	Status string `json:"status"`
}

// Run listens on api.listen, and on api.metrics_listen when it is set,
// and serves until ctx ends.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return err
	}
	if s.metrics == nil {
		return s.Serve(ctx, ln)
	}
	mln, err := net.Listen("tcp", s.metrics.Addr)
	if err != nil {
		ln.Close()
		return fmt.Errorf("metrics: %w", err)
	}
	return s.serve(ctx, ln, mln)
}

// Serve serves the API on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error { return s.serve(ctx, ln, nil) }

// serve serves the API on ln and, when metricsLn is not nil, /metrics on
// metricsLn, until ctx ends or either fails.
func (s *Server) serve(ctx context.Context, ln, metricsLn net.Listener) error {
	g, ctx := errgroup.WithContext(ctx)
	g.Go(func() error { return s.serveOn(ctx, s.srv, ln, "API") })
	if metricsLn != nil {
		g.Go(func() error { return s.serveOn(ctx, s.metrics, metricsLn, "Metrics") })
	}
	return g.Wait()
}

// serveOn serves srv on ln, at most api.max_connections at once, until ctx
// ends, then shuts it down gracefully.
func (s *Server) serveOn(ctx context.Context, srv *http.Server, ln net.Listener, what string) error {
	if s.cfg.MaxConnections > 0 {
		ln = netutil.LimitListener(ln, s.cfg.MaxConnections)
	}
	s.log.Info().Str("listen", ln.Addr().String()).Msg(what + " listening")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(shutCtx); err != nil {
			return err
		}
		if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

type statusRecorder struct {
	http.ResponseWriter
	code int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.code = code
	r.ResponseWriter.WriteHeader(code)
}
