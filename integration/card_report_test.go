package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestMissionReport: a card alice published and ratified in chat reaches
// done; the report arrives in the thread of her publish message, quoting
// what the worker journaled on the card as data, and closes the set.
func TestMissionReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWakeSetup(t)
	for _, state := range []string{"claimed", "in_progress"} {
		w.api.call(http.MethodPost, "/api/cards/"+w.card+"/state", nil, map[string]any{"state": state}, http.StatusOK, nil)
	}
	content := "Exports all 12 columns; **see** <b>PR 41</b>"
	sum := sha256.Sum256([]byte(content))
	w.api.call(http.MethodPost, "/api/agents/journal", nil, map[string]any{
		"agent": "EVE", "cycle": "C-300", "entry_id": "eve-C-300-001", "title": "Exporter merged",
		"content": content, "content_signature": "sha256:" + hex.EncodeToString(sum[:]), "signal_weight": 0.5,
		"verifiable_evidence": []map[string]any{{"type": "pr", "key": w.card, "url": "https://git.example.org/pr/41"}},
		"timestamp":           time.Now().UTC().Format(time.RFC3339),
	}, http.StatusCreated, nil)
	w.api.call(http.MethodPost, "/api/cards/"+w.card+"/state", nil, map[string]any{"state": "done", "note": "merged"}, http.StatusOK, nil)

	report, err := w.alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		if evt.Type != event.EventMessage || evt.Sender != w.j.UserID || evt.RoomID != w.room {
			return false
		}
		rel := evt.Content.AsMessage().RelatesTo
		return rel != nil && rel.Type == event.RelThread && rel.EventID == w.published
	})
	if err != nil {
		t.Fatalf("no report in the thread of the publish message: %v", err)
	}
	body := tesths.Body(report)
	for _, want := range []string{
		w.alice.UserID.String() + ": card " + w.card + " is done — Ship the exporter (worked by EVE).",
		"Exporter merged: Exports all 12 columns; **see** <b>PR 41</b>",
		"That was the last card of set",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the report lacks %q:\n%s", want, body)
		}
	}
	if html := report.Content.AsMessage().FormattedBody; strings.Contains(html, "<b>PR") || strings.Contains(html, "<strong>see") {
		t.Errorf("the worker's text was rendered as markup:\n%s", html)
	}
}
