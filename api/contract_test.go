package api_test

import (
	"net/http"
	"testing"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/internal/testkit/contract"
)

// checked is the server's handler with every request and answer checked
// against the OpenAPI document; a benchmark measures the server alone.
func checked(t testing.TB, s *api.Server) http.Handler {
	if _, bench := t.(*testing.B); bench {
		return s.Handler()
	}
	return contract.Handler(t, api.OpenAPI(), s.Handler())
}
