package integration

import (
	"net/http"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestCardSignOff: a reviewer agent signs off a card over the API, pinned
// to revision 1; after an amendment `!card show` says the sign-off is
// stale, and alice signs off the new revision in chat.
func TestCardSignOff(t *testing.T) {
	t.Parallel()
	w := newWakeSetup(t)
	w.api.call(http.MethodPost, "/api/cards/"+w.card+"/signoffs", nil, map[string]any{
		"revision": 1, "verdict": "approved", "note": "schema reviewed"}, http.StatusCreated, nil)
	if body := tesths.Body(w.j.ask(t, w.alice, w.room, "!card show "+w.card)); !strings.Contains(body, "EVE: approved at revision 1 — schema reviewed") {
		t.Errorf("!card show after the sign-off:\n%s", body)
	}
	w.api.call(http.MethodPost, "/api/cards/"+w.card+"/amendments", nil, map[string]any{
		"kind": "clarification", "text": "Export the VAT column too.", "base_revision": 1}, http.StatusCreated, nil)
	if body := tesths.Body(w.j.ask(t, w.alice, w.room, "!card show "+w.card)); !strings.Contains(body,
		"EVE: approved at revision 1 — stale: the card was amended since (revision 2 now) — schema reviewed") {
		t.Errorf("!card show after the amendment:\n%s", body)
	}
	if body := tesths.Body(w.j.ask(t, w.alice, w.room, "!card signoff "+w.card)); !strings.Contains(body, "Signed off card "+w.card+" at revision 2.") {
		t.Errorf("!card signoff answered:\n%s", body)
	}
}
