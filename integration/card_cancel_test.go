package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestCardCancelledFromChat: a person's NO-GO in the room (`!card
// cancel` with a reason, or "Jarvis, stop the key rotation") reaches the
// worker that claimed the card: its next read (with who and why) and its
// next heartbeat's answer show the card cancelled, and its next move on
// the card is refused; a
// stranger's NO-GO changes nothing. An amendment from chat reaches it
// the same way, and so does a ❌ on a publish question after its ✅.
func TestCardCancelledFromChat(t *testing.T) {
	t.Parallel()
	alice, mallory := newPerson(t, "alice"), newPerson(t, "mallory")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, displayName: "Jarvis",
		extra: fmt.Sprintf("api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n", addr, worker)})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(context.Background(), room, &mautrix.ReqInviteUser{UserID: mallory.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, mallory)
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	var set struct {
		Cards []struct {
			ID string `json:"id"`
		} `json:"cards"`
	}
	api.call("POST", "/api/cardsets", map[string]string{"Idempotency-Key": "cancel-set"}, map[string]any{
		"cards": []map[string]any{
			{"goal": "Export the CSV", "acceptance": []string{"the CSV downloads"}, "priority": "P2"},
			{"goal": "Run the key rotation", "acceptance": []string{"every key is new"}, "priority": "P2"},
			{"goal": "Write the release notes", "acceptance": []string{"the notes are published"}, "priority": "P2"},
		},
	}, http.StatusOK, &set)
	cardID := set.Cards[0].ID
	api.call("POST", "/api/cards/"+cardID+"/state", nil, map[string]string{"state": "claimed"}, http.StatusOK, nil)

	if body := tesths.Body(j.ask(t, mallory, room, "!card cancel "+cardID)); !strings.Contains(body, "Only the card's ratifier or an admin") {
		t.Errorf("a stranger's NO-GO was answered %q", body)
	}
	var got struct {
		State     string `json:"state"`
		StateNote string `json:"state_note"`
	}
	api.call("GET", "/api/cards/"+cardID, nil, nil, http.StatusOK, &got)
	if got.State != "claimed" {
		t.Fatalf("after the stranger's NO-GO the card is %s, want claimed", got.State)
	}

	if body := tesths.Body(j.ask(t, alice, room, "!card cancel "+cardID+" the client dropped it")); !strings.Contains(body, "Cancelled card "+cardID) {
		t.Fatalf("the NO-GO was answered %q", body)
	}
	api.call("GET", "/api/cards/"+cardID, nil, nil, http.StatusOK, &got)
	if want := "cancelled by " + alice.UserID.String() + ": the client dropped it"; got.State != "cancelled" || got.StateNote != want {
		t.Errorf("the worker reads %s %q, want cancelled %q", got.State, got.StateNote, want)
	}
	api.call("POST", "/api/cards/"+cardID+"/state", nil, map[string]string{"state": "in_progress"}, http.StatusConflict, nil)
	var beat struct {
		Cards []struct {
			ID    string `json:"id"`
			State string `json:"state"`
		} `json:"cards"`
	}
	api.call("POST", "/api/agents/heartbeat", nil, map[string]any{}, http.StatusOK, &beat)
	if len(beat.Cards) != 1 || beat.Cards[0].ID != cardID || beat.Cards[0].State != "cancelled" {
		t.Errorf("the worker's heartbeat answer lists %+v, want %s cancelled", beat.Cards, cardID)
	}

	rotation := set.Cards[1].ID
	if body := tesths.Body(j.ask(t, alice, room, "Jarvis, stop the key rotation")); !strings.Contains(body, "Cancelled card "+rotation) {
		t.Fatalf("the NO-GO in plain words was answered %q", body)
	}
	api.call("GET", "/api/cards/"+rotation, nil, nil, http.StatusOK, &got)
	if want := "cancelled by " + alice.UserID.String(); got.State != "cancelled" || got.StateNote != want {
		t.Errorf("the worker reads %s %q, want cancelled %q", got.State, got.StateNote, want)
	}

	notes := set.Cards[2].ID
	api.call("POST", "/api/cards/"+notes+"/state", nil, map[string]string{"state": "claimed"}, http.StatusOK, nil)
	if body := tesths.Body(j.ask(t, alice, room, "!card amend "+notes+` the auditors need them --accept "the notes list every fix"`)); !strings.Contains(body, "waits for ratification again") {
		t.Fatalf("the amendment was answered %q", body)
	}
	var amended struct {
		State      string `json:"state"`
		Revision   int    `json:"revision"`
		Amendments []struct {
			Kind       string   `json:"kind"`
			Acceptance []string `json:"acceptance"`
		} `json:"amendments"`
	}
	api.call("GET", "/api/cards/"+notes, nil, nil, http.StatusOK, &amended)
	if amended.State != "awaiting_ratification" || amended.Revision != 2 || len(amended.Amendments) != 1 ||
		amended.Amendments[0].Kind != "scope_change" || len(amended.Amendments[0].Acceptance) != 1 {
		t.Errorf("the worker reads %+v, want the scope change at revision 2, awaiting ratification", amended)
	}

	ctx := context.Background()
	j.ask(t, alice, room, `!card draft Migrate the billing tables --accept "every table moved" --priority P2`)
	question := j.ask(t, alice, room, "!card publish")
	if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID))
	if err != nil {
		t.Fatalf("the publish question was never edited: %v", err)
	}
	migration := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(newBody(edit), "\n", 2)[0], "Published:"))
	if _, err := alice.SendReaction(ctx, room, question.ID, "❌"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Cancelled card "+migration)
	}); err != nil {
		t.Fatalf("no NO-GO answer to the ❌ on the published question: %v", err)
	}
	api.call("GET", "/api/cards/"+migration, nil, nil, http.StatusOK, &got)
	if got.State != "cancelled" {
		t.Errorf("the worker reads the card published and then ❌ed as %s, want cancelled", got.State)
	}
}
