package api_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
)

func TestCardSignOffsAPI(t *testing.T) {
	fx := newCardsAPIFixture(t, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), card.Config{})
	id := fx.publish(t, "signoffs", twoCards)[0]
	path := "/api/cards/" + id + "/signoffs"
	worker, other := fx.tokens.agent["worker"], fx.tokens.agent["other"]

	tests := []struct {
		name  string
		token string
		body  string
		want  int
		// has is a substring of the answer.
		has string
	}{
		{"an agent signs as itself", worker, `{"revision": 1, "verdict": "changes_requested", "note": "add the VAT column"}`,
			http.StatusCreated, `"reviewer":"worker","signed_revision":1,"verdict":"changes_requested","note":"add the VAT column","current":true`},
		{"a supervisor names the reviewer", fx.tokens.supervisor, `{"reviewer": "sentinel", "revision": 1}`, http.StatusCreated, `"verdict":"approved"`},
		{"an agent signing as another", other, `{"reviewer": "worker", "revision": 1}`, http.StatusForbidden, `"token_agent":"other"`},
		{"an orchestrator", fx.tokens.orchestrator, `{"reviewer": "x", "revision": 1}`, http.StatusForbidden, `needs_role`},
		{"no revision", worker, `{}`, http.StatusBadRequest, `revision`},
		{"a revision the card is not at", worker, `{"revision": 2}`, http.StatusConflict, `is at revision 1`},
		{"an unknown verdict", worker, `{"revision": 1, "verdict": "lgtm"}`, http.StatusBadRequest, `verdict`},
		{"an over-long note", worker, `{"revision": 1, "note": "` + strings.Repeat("x", card.MaxSignOffNote+1) + `"}`, http.StatusBadRequest, `note`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := fx.sendAs(t, tt.token, "POST", path, tt.body, nil)
			if rec.Code != tt.want || !strings.Contains(rec.Body.String(), tt.has) {
				t.Errorf("= %d %s, want %d with %s", rec.Code, rec.Body, tt.want, tt.has)
			}
		})
	}
	rec := fx.send(t, "POST", "/api/cards/"+id+"/amendments", `{"kind": "clarification", "text": "Amounts in cents.", "base_revision": 1}`, nil)
	if rec.Code != http.StatusCreated {
		t.Fatalf("amend: %d %s", rec.Code, rec.Body)
	}
	rec = fx.send(t, "GET", "/api/cards/"+id, "", nil)
	if body := rec.Body.String(); strings.Count(body, `"current":false`) != 2 || strings.Contains(body, `"current":true`) {
		t.Errorf("after an amendment the sign-offs read %s, want both stale", body)
	}
}
