package integration

import (
	"bytes"
	"context"
	"encoding/json"
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

// TestOnCallClaimAndAllClear: EVE goes offline and its alert carries 👀
// from Jarvis. bob taps it and the alert is edited to say he is handling
// it; alice, an admin, taps it after him and takes it over. EVE reports again:
// the alert is edited to resolved, with how long it lasted and who
// handled it, and one reply in its thread says so, with no new message
// in the room.
func TestOnCallClaimAndAllClear(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, bob, agents := onCallRoom(t, eveEvery2s, "EVE")

	fromJarvis := func(match func(evt *event.Event) bool) func(*event.Event) bool {
		return func(evt *event.Event) bool { return tesths.MessageFrom(room, j.UserID)(evt) && match(evt) }
	}
	alert, err := alice.WaitFor(ctx, 20*time.Second, fromJarvis(func(evt *event.Event) bool {
		return strings.Contains(tesths.Body(evt), "EVE is offline") && evt.Content.AsMessage().RelatesTo.GetReplaceID() == ""
	}))
	if err != nil {
		t.Fatalf("no offline alert: %v", err)
	}
	if _, err := bob.WaitFor(ctx, waitReply, reactionBy(j.UserID, alert.ID, "👀")); err != nil {
		t.Fatalf("no 👀 from Jarvis on the alert: %v", err)
	}

	if _, err := bob.SendReaction(ctx, room, alert.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	claimed, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, alert.ID))
	if err != nil {
		t.Fatalf("bob's 👀 did not edit the alert: %v", err)
	}
	if body := newBody(claimed); !strings.Contains(body, "EVE is offline") || !strings.Contains(body, "👀 Handled by "+bob.UserID.String()+" since ") {
		t.Errorf("after bob's 👀 the alert reads:\n%s", body)
	}

	if _, err := alice.SendReaction(ctx, room, alert.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, fromJarvis(func(evt *event.Event) bool {
		return strings.Contains(tesths.Body(evt), alice.UserID.String()+": You took this over from "+bob.UserID.String())
	})); err != nil {
		t.Fatalf("alice's 👀 did not take the alert over from bob: %v", err)
	}

	agents.heartbeat(t, "EVE", "C-2")
	inThread := fromJarvis(func(evt *event.Event) bool {
		rel := evt.Content.AsMessage().RelatesTo
		return rel != nil && rel.Type == event.RelThread && rel.EventID == alert.ID
	})
	reply, err := alice.WaitFor(ctx, waitReply, inThread)
	if err != nil {
		t.Fatalf("no all-clear in the alert's thread: %v", err)
	}
	if body := tesths.Body(reply); !strings.Contains(body, "EVE is back") || !strings.Contains(body, "All clear: the alert was open ") ||
		!strings.HasSuffix(body, "handled by "+alice.UserID.String()+".") {
		t.Errorf("the all-clear reads %q", body)
	}
	resolved, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, alert.ID)(evt) && strings.HasPrefix(newBody(evt), "✅ Resolved after ")
	})
	if err != nil {
		t.Fatalf("the alert was not edited to resolved: %v", err)
	}
	if body := newBody(resolved); !strings.Contains(body, "handled by "+alice.UserID.String()+". It was: 🔴 EVE is offline") {
		t.Errorf("the resolved alert reads:\n%s", body)
	}
	if n := len(alice.Events(inThread)); n != 1 {
		t.Errorf("%d replies in the alert's thread, want one", n)
	}
	if back := alice.Events(fromJarvis(func(evt *event.Event) bool {
		return strings.Contains(tesths.Body(evt), "is back") && evt.Content.AsMessage().RelatesTo == nil
	})); len(back) != 0 {
		t.Errorf("a new message in the room said EVE is back: %q", tesths.Body(back[0]))
	}
}

// TestOnCallEscalation: EVE goes offline and nobody claims its alert
// within a short oncall.escalate_after: one reply in the alert's thread
// calls the admins, mentioning them, and no second one comes over the
// next two sweeps.
func TestOnCallEscalation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, _, _ := onCallRoom(t, "oncall:\n  escalate_after: 1s\n"+eveEvery2s, "EVE")

	alert, err := alice.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "EVE has missed 2 heartbeats")
	})
	if err != nil {
		t.Fatalf("no alert: %v", err)
	}
	escalation := func(evt *event.Event) bool {
		if !tesths.MessageFrom(room, j.UserID)(evt) {
			return false
		}
		msg := evt.Content.AsMessage()
		return msg.RelatesTo != nil && msg.RelatesTo.Type == event.RelThread && strings.Contains(msg.Body, "Nobody has claimed this alert")
	}
	raised, err := alice.WaitFor(ctx, 20*time.Second, escalation)
	if err != nil {
		t.Fatalf("the unclaimed alert was not escalated: %v", err)
	}
	// The alert that stands for the incident then: the first, or the
	// offline notice if EVE went offline before the sweep.
	alerts := map[id.EventID]bool{alert.ID: true}
	for _, evt := range alice.Events(tesths.MessageFrom(room, j.UserID)) {
		if strings.Contains(tesths.Body(evt), "EVE is offline") && evt.Content.AsMessage().RelatesTo.GetReplaceID() == "" {
			alerts[evt.ID] = true
		}
	}
	msg := raised.Content.AsMessage()
	if !alerts[msg.RelatesTo.EventID] || !strings.HasPrefix(msg.Body, alice.UserID.String()+": Nobody has claimed this alert in 1s.") {
		t.Errorf("the escalation %q is not in an alert's thread naming alice", msg.Body)
	}
	if msg.Mentions == nil || len(msg.Mentions.UserIDs) != 1 || msg.Mentions.UserIDs[0] != alice.UserID {
		t.Errorf("the escalation mentions %+v, want alice, the admin", msg.Mentions)
	}
	// The sweep runs every 5 s: two more find the incident escalated.
	if again, err := alice.WaitFor(ctx, 11*time.Second, func(evt *event.Event) bool { return evt.ID != raised.ID && escalation(evt) }); err == nil {
		t.Errorf("escalated again: %q", tesths.Body(again))
	}
}

// eveEvery2s is the fleet section of the on-call tests that watch EVE
// alone, reporting every 2 s.
const eveEvery2s = "fleet:\n  agents:\n    - name: EVE\n      cadence: 2s\n"

// onCallRoom starts Jarvis with alice as its admin and the sections given
// (YAML, such as oncall and fleet; the api's is added), with alice and
// bob in its room, and sends the first heartbeat of each of agents, who
// get a token each.
func onCallRoom(t *testing.T, sections string, agents ...string) (*jarvis, id.RoomID, *tesths.Person, *tesths.Person, agentAPI) {
	t.Helper()
	alice := newPerson(t, "alice")
	bob := newPerson(t, "bob")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\n%s", port, sections)})
	// The agents report from the moment Jarvis listens, and keep reporting
	// while people join, which takes a while on a loaded machine: an agent
	// that has not reported within its cadence of Jarvis's start is one
	// that never reported, and one that stops misses heartbeats. Their
	// last report comes as the test begins.
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	api.waitUp(t, j)
	api.tokens = j.issueTokens(t, agents...)
	stop := api.keepReporting(agents, "C-1")
	room := j.joinRoom(t, alice)
	if _, err := alice.InviteUser(context.Background(), room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	j.joinRoom(t, bob)
	stop()
	for _, a := range agents {
		api.heartbeat(t, a, "C-1")
	}
	return j, room, alice, bob, api
}

// keepReporting has the agents heartbeat for cycle every half second until
// the returned function is called, which returns once they have stopped.
func (a agentAPI) keepReporting(agents []string, cycle string) (stop func()) {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			for _, agent := range agents {
				body, _ := json.Marshal(heartbeatBody(agent, cycle))
				req, _ := http.NewRequest(http.MethodPost, a.base+"/api/agents/heartbeat", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+a.tokens.agent[agent])
				req.Header.Set("Content-Type", "application/json")
				if resp, err := http.DefaultClient.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			select {
			case <-done:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}
