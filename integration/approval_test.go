package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestApprovals: an agent's approval request naming bob reaches the room
// with ✅ and ❌ under it; carol's tap (neither the approver nor an admin)
// changes nothing, bob's ✅ approves it and the agent reads that back; a
// second request, for the admins, with a deadline expires into its
// default, and the relay says so.
func TestApprovals(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	carol := newPerson(t, "carol")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\napprovals:\n  approvers: [%q]\n", addr, worker, bob.UserID)})
	room := j.joinRoom(t, alice)
	for _, p := range []*tesths.Person{bob, carol} {
		if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: p.UserID}); err != nil {
			t.Fatal(err)
		}
		j.joinRoom(t, p)
	}
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	type apiApproval struct {
		ID        string `json:"id"`
		Status    string `json:"status"`
		DecidedBy string `json:"decided_by"`
		Defaulted bool   `json:"defaulted"`
	}
	// relayOf waits for the relay of a request whose action is action.
	relayOf := func(t *testing.T, action string) *event.Event {
		t.Helper()
		relay, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), action)
		})
		if err != nil {
			t.Fatalf("the request never reached the room: %v", err)
		}
		return relay
	}

	t.Run("approved by the approver's tap", func(t *testing.T) {
		var req apiApproval
		api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": "deploy-412"}, map[string]any{
			"action": "deploy build 412 to production", "reason": "the hotfix for the login outage",
			"approver": bob.UserID.String(),
		}, http.StatusCreated, &req)
		relay := relayOf(t, "deploy build 412 to production")
		if body := tesths.Body(relay); !strings.Contains(body, "agent EVE asks for approval") || !strings.Contains(body, "the hotfix for the login outage") {
			t.Errorf("the relay reads:\n%s", body)
		}
		for _, emoji := range []string{"✅", "❌"} {
			if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, relay.ID, emoji)); err != nil {
				t.Errorf("no %s on the relay: %v", emoji, err)
			}
		}
		// carol is no approver: her tap is refused, under the request.
		if _, err := carol.SendReaction(ctx, room, relay.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), carol.UserID.String()+": Only the approver")
		}); err != nil {
			t.Fatalf("carol's tap was not refused: %v", err)
		}
		var got apiApproval
		api.call("GET", "/api/approvals/"+req.ID, nil, nil, http.StatusOK, &got)
		if got.Status != "pending" {
			t.Fatalf("after carol's tap the request is %s, want pending", got.Status)
		}

		if _, err := bob.SendReaction(ctx, room, relay.ID, "✅"); err != nil {
			t.Fatal(err)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, relay.ID))
		if err != nil {
			t.Fatalf("the relay was never edited: %v", err)
		}
		if body := newBody(edit); !strings.Contains(body, "✅ Approved by "+bob.UserID.String()) {
			t.Errorf("the relay was edited into:\n%s", body)
		}
		api.call("GET", "/api/approvals/"+req.ID, nil, nil, http.StatusOK, &got)
		if got.Status != "approved" || got.DecidedBy != bob.UserID.String() {
			t.Errorf("the agent reads %+v, want approved by bob", got)
		}
		// A retry of the same request answers the decided request.
		var again apiApproval
		api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": "deploy-412"}, map[string]any{
			"action": "deploy build 412 to production", "reason": "the hotfix for the login outage",
			"approver": bob.UserID.String(),
		}, http.StatusOK, &again)
		if again.ID != req.ID || again.Status != "approved" {
			t.Errorf("the retry answered %+v, want %s approved", again, req.ID)
		}
	})

	t.Run("expires into its default", func(t *testing.T) {
		var req apiApproval
		api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": "drop-staging"}, map[string]any{
			"action": "drop the staging database", "reason": "it is rebuilt nightly",
			"deadline": time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339), "default": "deny",
		}, http.StatusCreated, &req)
		relay := relayOf(t, "drop the staging database")
		if body := tesths.Body(relay); !strings.Contains(body, alice.UserID.String()+":") || !strings.Contains(body, "then it is denied.") {
			t.Errorf("the relay (to the admins) reads:\n%s", body)
		}
		edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, relay.ID))
		if err != nil {
			t.Fatalf("the relay was never edited: %v", err)
		}
		if body := newBody(edit); !strings.Contains(body, "No answer by the deadline; the default applies. Denied.") {
			t.Errorf("the relay was edited into:\n%s", body)
		}
		var got apiApproval
		api.call("GET", "/api/approvals/"+req.ID, nil, nil, http.StatusOK, &got)
		if got.Status != "denied" || !got.Defaulted || got.DecidedBy != "" {
			t.Errorf("the agent reads %+v, want denied by default", got)
		}
	})
}
