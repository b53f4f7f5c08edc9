package api_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestSilenceRefusals: a silence without a reason, without an end, with
// an end passed or more than 7 days away, or on nothing, is refused with
// a 400 naming the field, and none is set; ending one that does not exist
// is a 404; an orchestrator's token is refused.
func TestSilenceRefusals(t *testing.T) {
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 4, 17, 0, 0, 1, 0, time.UTC))
	w := services.Wiring{Store: st, Clock: clock, Room: "!jarvis:example.org", Admins: []string{"@admin:example.org"}}
	svc := w.Oncall(oncall.Config{EscalateAfter: 15 * time.Minute})
	tokens := issueTokens(t, st)
	server := api.New(api.Config{}, zerolog.Nop(), func(context.Context) (api.Health, error) { return api.Health{}, nil }, tokens.creds)
	api.RegisterSilences(server, svc, w.Room, nil)
	handler := checked(t, server)
	send := func(method, path, token, body string) (int, string) {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct {
		name, body, field string
	}{
		{"no reason", `{"target": "EVE", "reason": " ", "ends_at": "2026-04-17T02:00:00Z"}`, "reason"},
		{"no end", `{"target": "EVE", "reason": "deploy"}`, "ends_at"},
		{"an end passed", `{"target": "EVE", "reason": "deploy", "ends_at": "2026-04-16T02:00:00Z"}`, "until"},
		{"more than 7 days", `{"target": "EVE", "reason": "deploy", "ends_at": "2026-04-25T02:00:00Z"}`, "until"},
		{"on nothing", `{"target": "", "reason": "deploy", "ends_at": "2026-04-17T02:00:00Z"}`, "target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, body := send(http.MethodPost, "/api/silences", tokens.receiver, c.body)
			if code != http.StatusBadRequest || !strings.Contains(body, `"field":"`+c.field+`"`) {
				t.Errorf("POST %s = %d %s, want 400 naming %s", c.body, code, body, c.field)
			}
		})
	}
	if code, _ := send(http.MethodPost, "/api/silences", tokens.orchestrator, `{"target": "EVE", "reason": "r", "ends_at": "2026-04-17T02:00:00Z"}`); code != http.StatusForbidden {
		t.Errorf("an orchestrator's silence = %d, want 403", code)
	}
	if code, _ := send(http.MethodDelete, "/api/silences/99", tokens.supervisor, ""); code != http.StatusNotFound {
		t.Errorf("ending silence 99 = %d, want 404", code)
	}
	if list, err := svc.Silences(context.Background()); err != nil || len(list) != 0 {
		t.Errorf("silences after the refusals: %+v, %v", list, err)
	}
}
