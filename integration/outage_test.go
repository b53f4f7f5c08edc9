package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestOrchestratorKilledMidConversation: the orchestrator agent (EVE,
// fleet.orchestrator, which also works a card) dies while alice talks to
// Jarvis: its heartbeats stop and its claimed card stalls. Every message
// alice sends meanwhile is answered, each within the reply wait; Jarvis
// reports the outage from the heartbeat records once (one alert, then its
// offline notice, never again), and answers "is EVE ok?" with the outage
// and the card it left.
func TestOrchestratorKilledMidConversation(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: %s\nfleet:\n  orchestrator: %s\n  agents:\n    - name: %s\n      cadence: 2s\n", addr, worker, worker)})
	room := j.joinRoom(t, alice)
	tokens := j.issueTokens(t, worker)
	cards := cardAPI{t: t, base: "http://" + addr, tokens: tokens}
	cards.waitUp()
	agents := agentAPI{base: "http://" + addr, tokens: tokens}
	stopReporting := agents.keepReporting([]string{worker}, "C-1")
	var set struct {
		Cards []struct {
			ID string `json:"id"`
		} `json:"cards"`
	}
	cards.call("POST", "/api/cardsets", map[string]string{"Idempotency-Key": "outage-set"}, map[string]any{
		"cards": []map[string]any{{"goal": "Rotate the keys", "acceptance": []string{"every key is new"}, "priority": "P2"}},
	}, http.StatusOK, &set)
	card := set.Cards[0].ID
	cards.call("POST", "/api/cards/"+card+"/state", nil, map[string]string{"state": "claimed"}, http.StatusOK, nil)
	if body := tesths.Body(j.ask(t, alice, room, "is EVE ok?")); !strings.Contains(body, "online") {
		t.Fatalf("while EVE reports, 'is EVE ok?' got %q", body)
	}

	// EVE is killed: no heartbeat, no move on its card, from here on.
	stopReporting()
	outage := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil && strings.Contains(tesths.Body(evt), text)
		}
	}
	offline := outage(worker + " is offline")
	asked := 0
	for deadline := time.Now().Add(30 * time.Second); len(alice.Events(offline)) == 0; asked++ {
		if time.Now().After(deadline) {
			t.Fatalf("no offline notice within 30 s of EVE's death (%d messages answered meanwhile)", asked)
		}
		// j.ask fails the test unless the reply comes within waitReply.
		if body := tesths.Body(j.ask(t, alice, room, fmt.Sprintf("!ping %d", asked))); !strings.Contains(body, "pong") {
			t.Fatalf("message %d was answered %q", asked, body)
		}
	}
	// The first went out at once after the death, long before the notice.
	t.Logf("%d messages answered between EVE's death and its offline notice", asked)
	// The conversation goes on past the offline notice, while the fleet's
	// sweeps run on: nothing more is said of the outage.
	for i := range 3 {
		if body := tesths.Body(j.ask(t, alice, room, fmt.Sprintf("!ping after %d", i))); !strings.Contains(body, "pong") {
			t.Fatalf("message %d after the offline notice was answered %q", i, body)
		}
	}
	body := tesths.Body(j.ask(t, alice, room, "is EVE ok?"))
	if !strings.Contains(body, "offline") || !strings.Contains(body, card) {
		t.Errorf("after EVE's death, 'is EVE ok?' got %q, want it offline with its card %s", body, card)
	}
	for _, text := range []string{worker + " has missed 2 heartbeats", worker + " is offline"} {
		if n := len(alice.Events(outage(text))); n != 1 {
			t.Errorf("%q posted %d times, want once", text, n)
		}
	}
}

// BenchmarkRoundTripOrchestratorDown measures the chat round trip while
// the orchestrator agent is down against while it reports: !ping → pong in
// the encrypted dedicated room, the b.N round trips of each condition
// split over loadPairs blocks of each, alternating. In an "up" block the
// orchestrator (with the four agents that depend on it) heartbeats every
// half second; in a "down" block it has stopped, so Jarvis's sweeps
// announce it late and then offline, folding the four in, while the person
// talks (a block lasts until its offline notice is out); between blocks
// it reports again and its all-clear goes out. Its
// p95 down should stay within 1.2 times its p95 up. It reports each
// condition's p50/p95/p99, the ratio of the p95s ("p95-ratio") and its
// 95 % bootstrap confidence interval.
func BenchmarkRoundTripOrchestratorDown(b *testing.B) {
	alice := newPerson(b, "alice")
	addr := cardAPIListen(b)
	names := []string{"MOS", "EVE", "JADE", "HERMES", "ECHO"}
	cfg := fmt.Sprintf("api:\n  listen: %s\nchat:\n  sender_limit:\n    per_second: 1000\n    burst: 1000\nfleet:\n  orchestrator: MOS\n  agents:\n", addr)
	for _, n := range names {
		cfg += fmt.Sprintf("    - name: %s\n      cadence: 1s\n", n)
	}
	j := newJarvis(b, options{admins: []id.UserID{alice.UserID}, extra: cfg})
	room := j.joinRoom(b, alice)
	waitEncrypted(b, room, alice)
	agents := agentAPI{base: "http://" + addr, tokens: j.issueTokens(b, names...)}
	cards := cardAPI{t: b, base: "http://" + addr, tokens: agents.tokens}
	cards.waitUp()
	dependants := agents.keepReporting(names[1:], "C-1")
	defer dependants()
	replyTo := func(sent id.EventID) func(*event.Event) bool {
		reply := j.replyTo(sent)
		return func(evt *event.Event) bool { return tesths.Encrypted(evt) && reply(evt) }
	}
	up := &roundTripper{name: "up", person: alice, room: room, replyTo: replyTo}
	down := &roundTripper{name: "down", person: alice, room: room, replyTo: replyTo}
	for range 3 {
		up.once(b, false)
	}
	offline := func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil &&
			strings.Contains(tesths.Body(evt), "MOS is offline")
	}
	per := max(1, b.N/loadPairs)
	b.ResetTimer()
	for range loadPairs {
		stop := agents.keepReporting(names[:1], "C-1")
		for range per {
			up.once(b, true)
		}
		stop()
		// The block lasts at least until this outage's offline notice is
		// out: the round trips it measures share Jarvis with the alerts.
		before := len(alice.Events(offline))
		for i := 0; i < per || len(alice.Events(offline)) == before; i++ {
			down.once(b, true)
		}
	}
	b.StopTimer()
	reportRatio(b, up, down)
}
