package integration

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// The attacks of people and tokens Jarvis already lets in: an agent that
// would widen its own approval gate, a bridged stranger who would answer
// or silence what is asked of others, a stranger's puppet that would be
// linked to an admin by a code the admin is talked into sending, and a
// supervisor token that would sign the audit trail with any name.

// strangerIn is a bridged Telegram account linked to nobody, joined to
// room at p's invitation.
func strangerIn(t *testing.T, p *tesths.Person, room id.RoomID) *mautrix.Client {
	t.Helper()
	ctx := context.Background()
	puppet, err := bridgeAS.Puppet(ctx, hs, tesths.RandomName("telegram_"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: puppet.UserID}); err != nil {
		t.Fatal(err)
	}
	if _, err := puppet.JoinRoomByID(ctx, room); err != nil {
		t.Fatal(err)
	}
	waitJoined(t, p, room, puppet.UserID)
	return puppet
}

// apiApprovalState is what an agent reads back of its request.
type apiApprovalState struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	DecidedBy string `json:"decided_by"`
}

// jarvisSays waits, as p, for a message from Jarvis in room containing
// text.
func (j *jarvis) jarvisSays(t *testing.T, p *tesths.Person, room id.RoomID, text string) *event.Event {
	t.Helper()
	evt, err := p.WaitFor(context.Background(), waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
	})
	if err != nil {
		t.Fatalf("Jarvis never said %q: %v", text, err)
	}
	return evt
}

// TestApprovalGateIsTheOperators: an agent asks for a default that
// approves "drop the production database" after 70 s with nobody
// answering, and names a bridged stranger as its approver: both are
// refused, naming the key that would allow them, and nothing is relayed.
// On a request put to the admins the stranger's ✅ is refused, and the
// request stays pending.
func TestApprovalGateIsTheOperators(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\napprovals:\n  approvers: [%q]\n", addr, worker, bob.UserID)})
	room := j.joinRoom(t, alice)
	stranger := strangerIn(t, alice, room)
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	for _, c := range []struct {
		name, key string
		body      map[string]any
		wantKey   string
	}{
		{"a deadline that approves on its own", "auto-approve", map[string]any{
			"action": "drop the production database", "reason": "it is slow",
			"deadline": time.Now().Add(70 * time.Second).UTC().Format(time.RFC3339), "default": "approve",
		}, "approvals.deadline_may_approve"},
		{"a bridged stranger as approver", "stranger-approves", map[string]any{
			"action": "drop the production database", "reason": "it is slow", "approver": stranger.UserID.String(),
		}, "approvals.approvers"},
	} {
		var refused map[string]any
		api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": c.key}, c.body, http.StatusBadRequest, &refused)
		if !strings.Contains(fmt.Sprint(refused), c.wantKey) {
			t.Errorf("%s: refused with %v, want it to name %s", c.name, refused, c.wantKey)
		}
	}
	if body := tesths.Body(j.ask(t, alice, room, "!approval list")); !strings.Contains(body, "No approval requests are waiting") {
		t.Errorf("after the refused requests `!approval list` says %q", body)
	}

	var req apiApprovalState
	api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": "rotate"}, map[string]any{
		"action": "rotate the production keys", "reason": "a key leaked",
	}, http.StatusCreated, &req)
	relay := j.jarvisSays(t, alice, room, "rotate the production keys")
	if _, err := stranger.SendReaction(ctx, room, relay.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	j.jarvisSays(t, alice, room, stranger.UserID.String()+": A bridged account linked to nobody cannot answer approval requests")
	var got apiApprovalState
	api.call("GET", "/api/approvals/"+req.ID, nil, nil, http.StatusOK, &got)
	if got.Status != "pending" || got.DecidedBy != "" {
		t.Errorf("after the stranger's ✅ the request is %+v, want pending", got)
	}
}

// TestLinkCodeCannotBePhished: a stranger's puppet asks, in its own
// direct room, for a code to link it to the admin, and the admin is
// talked into sending it. Nothing is linked: Jarvis asks the admin to
// confirm, naming the puppet and what it could do. Even once the admin
// says yes, the puppet cannot answer a request put to the admins, which
// stays pending.
func TestLinkCodeCannotBePhished(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n", addr, worker)})
	room := j.joinRoom(t, alice)
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	puppet, err := bridgeAS.Puppet(ctx, hs, tesths.RandomName("telegram_"))
	if err != nil {
		t.Fatal(err)
	}
	dm, err := puppet.CreateRoom(ctx, &mautrix.ReqCreateRoom{Preset: "trusted_private_chat", IsDirect: true, Invite: []id.UserID{j.UserID}})
	if err != nil {
		t.Fatal(err)
	}
	waitIn(t, puppet, dm.RoomID, func(evt *event.Event) bool {
		return evt.Type == event.StateMember && evt.GetStateKey() == j.UserID.String() && evt.Content.AsMember().Membership == event.MembershipJoin
	})
	asked, err := puppet.SendText(ctx, dm.RoomID, "!link "+alice.UserID.String())
	if err != nil {
		t.Fatal(err)
	}
	code := regexp.MustCompile(`code is ([A-Z2-7]{8})\b`).FindStringSubmatch(tesths.Body(waitIn(t, puppet, dm.RoomID, j.replyTo(asked.EventID))))
	if code == nil {
		t.Fatal("no link code in the stranger's direct room")
	}

	// The admin, talked into it, sends the code.
	question := j.ask(t, alice, room, "!link "+code[1])
	if body := tesths.Body(question); !strings.Contains(body, "links "+puppet.UserID.String()+" on telegram to your account "+alice.UserID.String()) ||
		!strings.Contains(body, "answers the approval requests put to you") {
		t.Fatalf("sending the code got %q, want a question naming the puppet and what it could do", body)
	}
	linked := func() string {
		var account string
		err := j.openStore(t).DB.QueryRow(ctx, `SELECT account FROM identity_link WHERE puppet = $1`, puppet.UserID.String()).Scan(&account)
		if err != nil {
			return ""
		}
		return account
	}
	if account := linked(); account != "" {
		t.Fatalf("the puppet was linked to %s before the admin said yes", account)
	}

	// Say the admin is fooled twice and says yes: the link is made, but
	// an admin answers approvals only from their own Matrix account.
	if _, err := alice.SendReaction(ctx, room, question.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	if edit, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, question.ID)); err != nil || !strings.Contains(newBody(edit), "Linked: "+puppet.UserID.String()) {
		t.Fatalf("the admin's ✅ did not link: %v", err)
	}
	var req apiApprovalState
	api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": "drop-prod"}, map[string]any{
		"action": "drop the production database", "reason": "it is slow",
	}, http.StatusCreated, &req)
	relay := j.jarvisSays(t, alice, room, "drop the production database")
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: puppet.UserID}); err != nil {
		t.Fatal(err)
	}
	if _, err := puppet.JoinRoomByID(ctx, room); err != nil {
		t.Fatal(err)
	}
	waitJoined(t, alice, room, puppet.UserID)
	if _, err := puppet.SendReaction(ctx, room, relay.ID, "✅"); err != nil {
		t.Fatal(err)
	}
	j.jarvisSays(t, alice, room, "An admin answers approval requests only from their own Matrix account")
	var got apiApprovalState
	api.call("GET", "/api/approvals/"+req.ID, nil, nil, http.StatusOK, &got)
	if got.Status != "pending" {
		t.Errorf("after the linked puppet's ✅ the request is %+v, want pending", got)
	}
}

// TestPagingCannotBeSwitchedOff: on an alert (an approval request put to
// the admins), a bridged stranger's 👀 and 💤 are refused and escalation
// goes on; bob, who does not own it, cannot snooze it; bob claims it and
// the admin takes it over; and a claim nobody renews lapses, calling the
// admins again. Nothing decides the request.
func TestPagingCannotBeSwitchedOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\noncall:\n  escalate_after: 3s\n  claim_hold: 4s\n", addr, worker)})
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(ctx, room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)
	stranger := strangerIn(t, alice, room)
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	var req apiApprovalState
	api.call("POST", "/api/approvals", map[string]string{"Idempotency-Key": "failover"}, map[string]any{
		"action": "fail the database over", "reason": "the primary is degraded",
	}, http.StatusCreated, &req)
	alert := j.jarvisSays(t, alice, room, "fail the database over")
	for _, emoji := range []string{"👀", "💤"} {
		if _, err := stranger.SendReaction(ctx, room, alert.ID, emoji); err != nil {
			t.Fatal(err)
		}
	}
	j.jarvisSays(t, alice, room, stranger.UserID.String()+": Claims are taken from a Matrix account")
	j.jarvisSays(t, alice, room, stranger.UserID.String()+": Only whoever claimed this alert, or an admin, can snooze it")
	j.jarvisSays(t, alice, room, "Nobody has claimed this alert")

	if _, err := bob.SendReaction(ctx, room, alert.ID, "💤"); err != nil {
		t.Fatal(err)
	}
	j.jarvisSays(t, alice, room, bob.UserID.String()+": Only whoever claimed this alert, or an admin, can snooze it")
	if _, err := bob.SendReaction(ctx, room, alert.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, alert.ID)(evt) && strings.Contains(newBody(evt), "👀 Handled by "+bob.UserID.String())
	}); err != nil {
		t.Fatalf("bob's 👀 did not claim: %v", err)
	}
	if _, err := alice.SendReaction(ctx, room, alert.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	j.jarvisSays(t, alice, room, "You took this over from "+bob.UserID.String())
	j.jarvisSays(t, alice, room, alice.UserID.String()+" claimed this at")
	j.jarvisSays(t, alice, room, "the claim lapsed")

	var got apiApprovalState
	api.call("GET", "/api/approvals/"+req.ID, nil, nil, http.StatusOK, &got)
	if got.Status != "pending" {
		t.Errorf("after the claims and snoozes the request is %+v, want pending", got)
	}
}

// TestBreakerAuditNamesTheCredential: a supervisor token opens a breaker
// for an agent that is not configured, and one in another person's name:
// the first is refused and stores nothing, the second is recorded as the
// credential that acted, with the name it gave after it.
func TestBreakerAuditNamesTheCredential(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	addr := cardAPIListen(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n", addr, worker)})
	room := j.joinRoom(t, alice)
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	api.waitUp()

	var refused map[string]any
	api.call("POST", "/api/breaker/NOBODY/open", nil, map[string]any{"severity": "safety", "reason": "drift"}, http.StatusBadRequest, &refused)
	if !strings.Contains(fmt.Sprint(refused), "agent") {
		t.Errorf("a breaker for an unconfigured agent was refused with %v, want it to name the agent", refused)
	}
	var events struct {
		Events []map[string]any `json:"events"`
	}
	api.call("GET", "/api/breaker/NOBODY/events", nil, nil, http.StatusOK, &events)
	if len(events.Events) != 0 {
		t.Errorf("the refused breaker left %d events", len(events.Events))
	}

	var opened struct {
		Event struct {
			OpenedBy string `json:"opened_by"`
		} `json:"event"`
	}
	api.call("POST", "/api/breaker/"+worker+"/open", nil, map[string]any{"severity": "safety", "reason": "drift", "by": alice.UserID.String()},
		http.StatusCreated, &opened)
	if by := opened.Event.OpenedBy; !regexp.MustCompile(`^cred_[0-9a-f]+ \(` + regexp.QuoteMeta(alice.UserID.String()) + `\)$`).MatchString(by) {
		t.Errorf("the breaker was opened by %q, want the credential, then the name it gave", by)
	}
	j.jarvisSays(t, alice, room, "by "+opened.Event.OpenedBy)
}
