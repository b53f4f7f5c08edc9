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
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestWakeRouter: a ratified card that its worker blocks, and a CI
// failure an agent journals against it, each reach the room once, in the
// router's fixed frame, mentioning the ratifier; a restart does not say
// them again.
func TestWakeRouter(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWakeSetup(t)
	alice, j, room, api, card := w.alice, w.j, w.room, w.api, w.card

	frame := func(title string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Needs attention: "+title)
		}
	}
	for _, state := range []string{"claimed", "in_progress"} {
		api.call(http.MethodPost, "/api/cards/"+card+"/state", nil, map[string]any{"state": state, "note": "working"}, http.StatusOK, nil)
	}
	api.call(http.MethodPost, "/api/cards/"+card+"/state", nil, map[string]any{"state": "blocked", "note": "waiting on the vendor's API key"}, http.StatusOK, nil)
	blocked, err := alice.WaitFor(ctx, waitReply, frame("a card is blocked"))
	if err != nil {
		t.Fatalf("no wake notice for the blocked card: %v", err)
	}
	body := tesths.Body(blocked)
	for _, want := range []string{card, "waiting on the vendor's API key", "(from cards)", alice.UserID.String()} {
		if !strings.Contains(body, want) {
			t.Errorf("the blocked-card notice lacks %q:\n%s", want, body)
		}
	}

	journalCIFailure := func(entry string) {
		t.Helper()
		content := "CI failed: exporter tests, " + entry
		sum := sha256.Sum256([]byte(content))
		api.call(http.MethodPost, "/api/agents/journal", nil, map[string]any{
			"agent": "EVE", "cycle": "C-284", "entry_id": entry, "title": "Exporter CI red",
			"content": content, "content_signature": "sha256:" + hex.EncodeToString(sum[:]), "signal_weight": 0.5,
			"verifiable_evidence": []map[string]any{{"type": "ci", "key": card, "value": "failed", "url": "https://ci.example.org/runs/" + entry}},
			"timestamp":           time.Now().UTC().Format(time.RFC3339),
		}, http.StatusCreated, nil)
	}
	ciFailed := frame("CI failed on a card you ratified")
	journalCIFailure("eve-C-284-001")
	if _, err := alice.WaitFor(ctx, waitReply, ciFailed); err != nil {
		t.Fatalf("no wake notice for the CI failure: %v", err)
	}

	// After a restart, a new failure is news; what was said is not.
	j.Stop()
	j.Start()
	j.ask(t, alice, room, "!ping")
	journalCIFailure("eve-C-284-002")
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return ciFailed(evt) && strings.Contains(tesths.Body(evt), "runs/eve-C-284-002")
	}); err != nil {
		t.Fatalf("no wake notice for the second CI failure after the restart: %v", err)
	}
	if n := len(alice.Events(frame("a card is blocked"))); n != 1 {
		t.Errorf("the blocked card was announced %d times across a restart, want once", n)
	}
	if n := len(alice.Events(ciFailed)); n != 2 {
		t.Errorf("%d CI failure notices for two journal entries, want 2", n)
	}
}

// wakeSetup is Jarvis with its API on and one card that alice drafted
// and ratified in the room, ready for its worker to move.
type wakeSetup struct {
	alice *tesths.Person
	j     *jarvis
	room  id.RoomID
	api   cardAPI
	card  string
	// published is the message alice published the card with.
	published id.EventID
}

func newWakeSetup(t testing.TB) wakeSetup {
	t.Helper()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	listen := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: "api:\n  listen: " + listen +
		"\nfleet:\n  agents:\n    - name: EVE\n"})
	room := j.joinRoom(t, alice)
	api := cardAPI{t: t, base: "http://" + listen, tokens: j.issueTokens(t, "EVE")}
	api.waitUp()

	j.ask(t, alice, room, `!card draft Ship the exporter --accept "it exports every column" --priority P2`)
	question := j.ask(t, alice, room, "!card publish")
	if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID)); err != nil {
		t.Fatal(err)
	}
	var list struct {
		Cards []apiCard `json:"cards"`
	}
	api.call(http.MethodGet, "/api/cards", nil, nil, http.StatusOK, &list)
	if len(list.Cards) != 1 || list.Cards[0].RatifiedBy != alice.UserID.String() {
		t.Fatalf("published cards = %+v", list.Cards)
	}
	return wakeSetup{alice: alice, j: j, room: room, api: api, card: list.Cards[0].ID, published: question.ID}
}

// TestWakeAlertClaimAndAllClear: a blocked card's wake notice is an
// on-call incident. alice's 👀 edits it to name her; when the worker
// unblocks the card, the notice is edited to resolved and one reply in
// its thread gives the all-clear, with no new top-level message.
func TestWakeAlertClaimAndAllClear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	w := newWakeSetup(t)
	alice, j, room, api, card := w.alice, w.j, w.room, w.api, w.card
	topLevel := func(evt *event.Event) bool {
		if !tesths.MessageFrom(room, j.UserID)(evt) || !strings.Contains(tesths.Body(evt), "Needs attention: a card is blocked") {
			return false
		}
		rel := evt.Content.AsMessage().RelatesTo
		return rel == nil || (rel.Type != event.RelReplace && rel.Type != event.RelThread)
	}
	for _, state := range []string{"claimed", "in_progress", "blocked"} {
		api.call(http.MethodPost, "/api/cards/"+card+"/state", nil, map[string]any{"state": state, "note": "waiting on the vendor"}, http.StatusOK, nil)
	}
	notice, err := alice.WaitFor(ctx, waitReply, topLevel)
	if err != nil {
		t.Fatalf("no wake notice for the blocked card: %v", err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, notice.ID, "👀")); err != nil {
		t.Fatalf("no 👀 on the wake notice: %v", err)
	}
	if _, err := alice.SendReaction(ctx, room, notice.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, notice.ID)(evt) && strings.Contains(newBody(evt), "👀 Handled by "+alice.UserID.String())
	}); err != nil {
		t.Fatalf("the wake notice was not edited to name alice: %v", err)
	}

	api.call(http.MethodPost, "/api/cards/"+card+"/state", nil, map[string]any{"state": "in_progress", "note": "key arrived"}, http.StatusOK, nil)
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, notice.ID)(evt) && strings.Contains(newBody(evt), "Resolved") &&
			strings.Contains(newBody(evt), "handled by "+alice.UserID.String())
	}); err != nil {
		t.Fatalf("the wake notice was not edited to resolved: %v", err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, inThreadOf(j, room, notice.ID, "no longer needs attention")); err != nil {
		t.Fatalf("no all-clear in the notice's thread: %v", err)
	}
	if n := len(alice.Events(topLevel)); n != 1 {
		t.Errorf("%d top-level notices of the blocked card, want 1", n)
	}
}
