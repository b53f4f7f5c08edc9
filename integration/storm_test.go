package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestOnCallOrchestratorFold: ZEUS, the orchestrator, and the four agents
// that depend on it stop reporting together. The room gets ZEUS's alert
// and its offline notice, each naming the four, and nothing else: not ten
// messages. alice claims it with 👀. ZEUS reports again: its notice is
// edited to resolved with one reply in its thread naming those still
// silent; a cadence later the four, still silent, get one grouped alert
// of their own.
func TestOnCallOrchestratorFold(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	agentNames := []string{"ZEUS", "EVE", "JADE", "HERMES", "ECHO"}
	cfg := "fleet:\n  orchestrator: ZEUS\n  group_window: 30s\n  agents:\n"
	for _, name := range agentNames {
		cfg += fmt.Sprintf("    - name: %s\n      cadence: 4s\n", name)
	}
	j, room, alice, _, agents := onCallRoom(t, cfg, agentNames...)

	// topLevel are Jarvis's messages in the room about the agents that
	// are neither edits nor replies: what a person scrolling sees. A
	// "never reported" alert, when the setup took longer than a cadence
	// under load, came before the agents first reported and is not part
	// of what the test watches.
	topLevel := func() []*event.Event {
		return alice.Events(func(evt *event.Event) bool {
			if !tesths.MessageFrom(room, j.UserID)(evt) || evt.Content.AsMessage().RelatesTo != nil ||
				strings.Contains(tesths.Body(evt), "has never reported") {
				return false
			}
			for _, name := range agentNames {
				if strings.Contains(tesths.Body(evt), name) {
					return true
				}
			}
			return false
		})
	}
	const four = "4 agents that depend on it are also silent: ECHO, EVE, HERMES, JADE."
	offline, err := alice.WaitFor(ctx, 20*time.Second, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil && strings.Contains(tesths.Body(evt), "ZEUS is offline")
	})
	if err != nil {
		t.Fatalf("no offline notice for ZEUS: %v", err)
	}
	if body := tesths.Body(offline); !strings.HasSuffix(body, four) {
		t.Errorf("ZEUS's offline notice reads %q, want it to end %q", body, four)
	}
	// Two more sweeps: the dependants are offline too by then.
	time.Sleep(2500 * time.Millisecond)
	if msgs := topLevel(); len(msgs) != 2 || !strings.Contains(tesths.Body(msgs[0]), "ZEUS has missed 2 heartbeats") {
		var bodies []string
		for _, m := range msgs {
			bodies = append(bodies, tesths.Body(m))
		}
		t.Fatalf("five agents silent: %d top-level messages %q, want ZEUS's alert and its offline notice", len(msgs), bodies)
	}

	if _, err := alice.SendReaction(ctx, room, offline.ID, "👀"); err != nil {
		t.Fatal(err)
	}
	claimed, err := alice.WaitFor(ctx, waitReply, editOf(j.UserID, offline.ID))
	if err != nil {
		t.Fatalf("alice's 👀 did not edit the notice: %v", err)
	}
	if body := newBody(claimed); !strings.Contains(body, four) || !strings.Contains(body, "👀 Handled by "+alice.UserID.String()) {
		t.Errorf("after alice's 👀 the notice reads:\n%s", body)
	}

	// From here on ZEUS keeps reporting, every second, while alice waits.
	zeusReports := func(timeout time.Duration, match func(*event.Event) bool) (*event.Event, error) {
		t.Helper()
		deadline := time.Now().Add(timeout)
		for {
			agents.heartbeat(t, "ZEUS", "C-2")
			evt, err := alice.WaitFor(ctx, time.Second, match)
			if err == nil || time.Now().After(deadline) {
				return evt, err
			}
		}
	}
	inThread := func(evt *event.Event) bool {
		rel := evt.Content.AsMessage().RelatesTo
		return tesths.MessageFrom(room, j.UserID)(evt) && rel != nil && rel.Type == event.RelThread && rel.EventID == offline.ID
	}
	reply, err := zeusReports(waitReply, inThread)
	if err != nil {
		t.Fatalf("no all-clear in the notice's thread: %v", err)
	}
	if body := tesths.Body(reply); !strings.HasPrefix(body, "✅ ZEUS is back") ||
		!strings.Contains(body, "Still silent: ECHO, EVE, HERMES, JADE; each has its own alert if it does not report within its cadence.") ||
		!strings.HasSuffix(body, "handled by "+alice.UserID.String()+".") {
		t.Errorf("the all-clear reads %q", body)
	}
	if _, err := zeusReports(waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, offline.ID)(evt) && strings.HasPrefix(newBody(evt), "✅ Resolved after ")
	}); err != nil {
		t.Fatalf("the notice was not edited to resolved: %v", err)
	}

	group, err := zeusReports(20*time.Second, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo == nil &&
			strings.Contains(tesths.Body(evt), "is offline") && !strings.Contains(tesths.Body(evt), "ZEUS")
	})
	if err != nil {
		t.Fatalf("the four still silent got no alert of their own: %v", err)
	}
	const grouped = "🔴 4 agents are offline: ECHO, EVE, HERMES, JADE. They are left out of attestation quorum until they report again."
	if _, err := zeusReports(waitReply, func(evt *event.Event) bool {
		return editOf(j.UserID, group.ID)(evt) && newBody(evt) == grouped
	}); err != nil {
		t.Errorf("the four's alert was not edited to name them all (%q): %v", tesths.Body(group), err)
	}
	// Two more sweeps, ZEUS still reporting: nothing new.
	_, _ = zeusReports(2500*time.Millisecond, func(*event.Event) bool { return false })
	if n := len(topLevel()); n != 3 {
		t.Errorf("%d top-level messages about the agents in all, want 3", n)
	}
	if n := len(alice.Events(inThread)); n != 1 {
		t.Errorf("%d replies in the notice's thread, want one", n)
	}
}
