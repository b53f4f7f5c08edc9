// Package api is Jarvis's HTTP API for agents and tools, plus /healthz and
// /metrics. Handlers validate and authenticate, then call core services.
package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// Config is the API's part of the configuration.
type Config struct {
	// Listen is host:port; empty turns the API off.
	Listen string
}

// Validate checks the config.
func (c Config) Validate() error {
	if c.Listen == "" {
		return nil
	}
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return core.Invalid("api.listen", "must be host:port: %v", err)
	}
	return nil
}

// Health is the body of /healthz. The fields are in the order of their JSON
// names, as the body has always had them.
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
	// SyncError is why syncing fails; absent while it works.
	SyncError string `json:"sync_error,omitempty"`
	Synced    bool   `json:"synced"`
	UserID    string `json:"user_id"`
}

// HealthFunc reports the state /healthz shows; an error makes it 503.
type HealthFunc func(ctx context.Context) (Health, error)

// Server is the HTTP API.
type Server struct {
	log    zerolog.Logger
	mux    *http.ServeMux
	health HealthFunc
	auth   Authenticator
	srv    *http.Server
}

// New builds the server with /healthz and /metrics; the owners of other
// routes add them with Handle or HandleRole before Run. auth checks the
// bearer tokens of the routes HandleRole registers.
func New(cfg Config, log zerolog.Logger, health HealthFunc, auth Authenticator) *Server {
	s := &Server{log: log.With().Str("component", "api").Logger(), mux: http.NewServeMux(), health: health, auth: auth}
	s.Handle("GET /healthz", http.HandlerFunc(s.getHealth))
	s.Handle("GET /metrics", promhttp.HandlerFor(metrics.Registry, promhttp.HandlerOpts{}))
	s.srv = &http.Server{Addr: cfg.Listen, Handler: s.mux, ReadHeaderTimeout: 10 * time.Second}
	return s
}

// Handler returns the server's routes, for tests with httptest.
func (s *Server) Handler() http.Handler { return s.mux }

// Handle registers an unauthenticated route; pattern is a ServeMux pattern
// such as "GET /healthz".
func (s *Server) Handle(pattern string, h http.Handler) {
	route := pattern
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
		ctx := s.log.With().Str("route", route).Logger().WithContext(r.Context())
		h.ServeHTTP(rec, r.WithContext(ctx))
		metrics.HTTPRequests.WithLabelValues(route, strconv.Itoa(rec.code)).Inc()
	}))
}

func (s *Server) getHealth(w http.ResponseWriter, r *http.Request) {
	state, err := s.health(r.Context())
	if err != nil {
		WriteJSON(w, http.StatusServiceUnavailable, map[string]any{"ok": false, "error": err.Error()})
		return
	}
	state.OK = true
	WriteJSON(w, http.StatusOK, state)
}

// Run serves until ctx ends, then shuts down gracefully.
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.srv.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	s.log.Info().Str("listen", ln.Addr().String()).Msg("API listening")
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.srv.Shutdown(shutCtx); err != nil {
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
