package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core/credential"
	contractcheck "github.com/jarvis-hmi/jarvis/internal/testkit/contract"
)

// TestUnknownFieldsLoggedOnce: a body with fields this Jarvis does not
// know is taken, each unknown field logged once per token however often
// it comes; a caller sending ever new names fills at most
// maxLoggedUnknown entries.
func TestUnknownFieldsLoggedOnce(t *testing.T) {
	var logs bytes.Buffer
	s := New(Config{}, zerolog.New(&logs), func(context.Context) (Health, error) { return Health{}, nil }, testAuth)
	s.HandleRole("POST /api/agents/heartbeat", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, map[string]any{"ok": true, "received_at": "2026-04-17T00:00:00Z",
			"next_expected_by": "2026-04-18T00:00:00Z", "breaker_state": "closed"})
	}), credential.Agent)
	h := contractcheck.Handler(t, OpenAPI(), s.Handler())
	for range 3 {
		req := httptest.NewRequest("POST", "/api/agents/heartbeat", strings.NewReader(`{"mii": 0.5, "mood": "fine", "spend": {"tip": 1}}`))
		req.Header.Set("Authorization", "Bearer agent-token-0123456789")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			t.Fatalf("heartbeat with unknown fields: %d %s", rec.Code, rec.Body)
		}
	}
	for _, field := range []string{`"field":"mood"`, `"field":"spend.tip"`} {
		if n := strings.Count(logs.String(), field); n != 1 {
			t.Errorf("%s logged %d times, want once:\n%s", field, n, logs.String())
		}
	}
	var u unknownFields
	for i := range maxLoggedUnknown + 10 {
		u.first(fmt.Sprintf("cred_a f%d", i))
	}
	if len(u.seen) != maxLoggedUnknown {
		t.Errorf("%d unknown fields remembered, want at most %d", len(u.seen), maxLoggedUnknown)
	}
}

// checkedHandler is the server's handler with every request and answer
// checked against the OpenAPI document.
func checkedHandler(t testing.TB, s *Server) http.Handler {
	return contractcheck.Handler(t, OpenAPI(), s.Handler())
}
