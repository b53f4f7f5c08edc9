package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
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
			"next_expected_by": "2026-04-18T00:00:00Z", "breaker_state": "closed", "halted": false})
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

// limitError is a refusal that names its limit's key, as a size or count
// limit's does.
type limitError struct{ key string }

func (e limitError) Error() string { return "too many: see " + e.key }
func (e limitError) Unwrap() error { return core.ErrRateLimited }
func (e limitError) ProblemMembers() map[string]any {
	return map[string]any{"limit_key": e.key, "status": 200}
}

// TestProblemDetails: each refusal is a problem of its own type and
// status; a budget refusal is not a rate limit's 429; a refusal that names
// its limit carries the key, and cannot change the standard members.
func TestProblemDetails(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		code  int
		kind  string
		extra map[string]any
	}{
		{name: "a bad field", err: core.Invalid("mii", "must be a number between 0 and 1"), code: 400, kind: "validation",
			extra: map[string]any{"field": "mii"}},
		{name: "a budget refusal", err: fmt.Errorf("publish: %w", core.ErrBudgetExceeded), code: 402, kind: "budget-exceeded"},
		{name: "a rate limit", err: fmt.Errorf("%w: slow down", core.ErrRateLimited), code: 429, kind: "rate-limited"},
		{name: "a limit naming its key", err: limitError{key: "api.rate_limit.credential.burst"}, code: 429, kind: "rate-limited",
			extra: map[string]any{"limit_key": "api.rate_limit.credential.burst"}},
		{name: "a conflict", err: core.ErrConflict, code: 409, kind: "conflict"},
		{name: "an illegal transition", err: core.ErrIllegalTransition, code: 409, kind: "illegal-transition"},
		{name: "a halted agent", err: &HaltedError{Agent: "EVE", EventID: "brk_1"}, code: 423, kind: "breaker-open",
			extra: map[string]any{"agent": "EVE", "breaker_event": "brk_1"}},
		{name: "an internal error", err: errors.New("disk on fire"), code: 500, kind: "internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			WriteError(rec, httptest.NewRequest("POST", "/api/x", nil), tt.err)
			var body map[string]any
			_ = json.Unmarshal(rec.Body.Bytes(), &body)
			if rec.Code != tt.code || rec.Header().Get("Content-Type") != ProblemContentType ||
				body["type"] != ProblemTypePrefix+tt.kind || body["status"] != float64(tt.code) || body["instance"] != "/api/x" {
				t.Errorf("answer %d %s %v, want a %d %s problem", rec.Code, rec.Header().Get("Content-Type"), body, tt.code, tt.kind)
			}
			for k, v := range tt.extra {
				if body[k] != v {
					t.Errorf("%s = %v, want %v", k, body[k], v)
				}
			}
			if tt.code == 500 && body["detail"] != "internal error" {
				t.Errorf("an internal error shows %q", body["detail"])
			}
		})
	}
}
