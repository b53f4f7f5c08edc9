package integration

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestWhileIWasAway: Jarvis is stopped for longer than
// workspace.away_after; meanwhile EVE's breaker opens and its card
// blocks (written to the store by other writers, as a supervisor's tool
// or a standby would). Started again, Jarvis posts one "While I was away"
// message naming both, and not again after another quick restart; `!fleet`
// shows EVE halted, holding the blocked card.
func TestWhileIWasAway(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWakeSetup(t)
	for _, state := range []string{"claimed", "in_progress"} {
		w.api.call(http.MethodPost, "/api/cards/"+w.card+"/state", nil, map[string]any{"state": state}, http.StatusOK, nil)
	}
	w.j.Stop()

	st := w.j.openStore(t)
	room := string(w.room)
	breakers := breaker.NewService(testconfig.Breaker(), breaker.Deps{Store: st.Breakers(), Tx: st, Outbox: st.Outbox(),
		Clock: core.SystemClock{}, Room: room})
	if _, err := breakers.Open(ctx, "EVE", breaker.OpenInput{Severity: breaker.SeveritySafety, Reason: "drift", By: "aster"}); err != nil {
		t.Fatal(err)
	}
	cards := card.NewService(card.Config{}, card.Deps{Store: st.Cards(), Tx: st, Outbox: st.Outbox(), Clock: core.SystemClock{}, Room: room})
	if _, err := cards.SetState(ctx, w.card, card.Blocked, "the vendor's API is down"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // the downtime the message is about

	w.j.env = append(w.j.env, "JARVIS_WORKSPACE_AWAY_AFTER=2s")
	w.j.Start()
	away := func(evt *event.Event) bool {
		return tesths.MessageFrom(w.room, w.j.UserID)(evt) && strings.Contains(tesths.Body(evt), "While I was away")
	}
	msg, err := w.alice.WaitFor(ctx, waitReply, away)
	if err != nil {
		t.Fatalf("no 'While I was away' message: %v", err)
	}
	body := tesths.Body(msg)
	for _, want := range []string{"🆕 EVE's breaker is open", "🆕 card " + w.card + " is blocked — Ship the exporter", "Still needs someone:"} {
		if !strings.Contains(body, want) {
			t.Errorf("the message lacks %q:\n%s", want, body)
		}
	}

	// The fleet view reads the breaker and the card from the store too.
	fleetView := tesths.Body(w.j.ask(t, w.alice, w.room, "!fleet"))
	for _, want := range []string{"breaker open · cards " + w.card + " (blocked)", "Needs attention first: EVE (halted: its breaker is open)"} {
		if !strings.Contains(fleetView, want) {
			t.Errorf("!fleet lacks %q:\n%s", want, fleetView)
		}
	}

	// A restart within the threshold says nothing more.
	w.j.Stop()
	w.j.env = append(w.j.env, "JARVIS_WORKSPACE_AWAY_AFTER=1m")
	w.j.Start()
	if _, err := w.alice.Greet(ctx, w.room, w.j.UserID, "!ping", waitReply); err != nil {
		t.Fatalf("Jarvis did not come back: %v", err)
	}
	if n := len(w.alice.Events(away)); n != 1 {
		t.Errorf("'While I was away' was said %d times, want once", n)
	}
}
