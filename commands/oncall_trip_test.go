package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// TestOnCallSharedTrip: a shared tripwire (the "self" scope) trips into
// the room with 👀 under its notice; bob's 👀 claims it, and when the
// tripwire resets the trip notice is edited to resolved and the one reply
// in its thread says it cleared and all clear. A person's own trip, in
// their direct room, is no incident.
func TestOnCallSharedTrip(t *testing.T) {
	th := newTripwireHarness(t, 0)
	ctx := context.Background()
	arm := func(scope string) string {
		d, err := th.tw.Arm(ctx, scope, tripwire.Draft{Label: "GI low", Rationale: "the Seal needs it",
			Source: core.SourceRef{Kind: "integrity.gi"}, Condition: tripwire.Condition{Op: tripwire.OpLT, Threshold: 0.7},
			Action: &tripwire.Action{Journal: true, Push: true}})
		if err != nil {
			t.Fatal(err)
		}
		return d.ID
	}
	shared, own := arm(tripwire.SelfScope), arm(alice)
	th.tick(t, 0.5)
	trip := "trip:" + shared + ":1"
	if n, err := th.store.Outbox().Get(ctx, trip+":claim"); err != nil || n.Kind != core.NoticeReaction || n.Body != oncall.ClaimReaction || n.Target != trip {
		t.Fatalf("the shared trip's 👀: %+v, %v", n, err)
	}
	if _, err := th.store.Outbox().Get(ctx, "trip:"+own+":1:claim"); err == nil {
		t.Errorf("alice's own trip carries 👀")
	}
	th.clock.Advance(3 * time.Minute)
	caused := th.answer(t, trip, bob, oncall.ClaimReaction)
	if len(caused) != 1 || caused[0].Kind != core.NoticeEdit || !strings.Contains(caused[0].Body, "👀 Handled by @bob:x since") {
		t.Fatalf("bob's 👀: %+v, want the trip notice edited to name him", caused)
	}
	before, _ := th.store.Outbox().Waiting(ctx, 1000)
	th.tick(t, 0.9)
	after, _ := th.store.Outbox().Waiting(ctx, 1000)
	var edits, replies []core.OutboxEntry
	for _, n := range after[len(before):] {
		switch {
		case n.Target == trip && n.Kind == core.NoticeEdit:
			edits = append(edits, n)
		case n.Target == trip && n.Thread:
			replies = append(replies, n)
		}
	}
	if len(edits) != 1 || !strings.HasPrefix(edits[0].Body, "✅ **Resolved** after 4m, handled by @bob:x. It was: 🔔 **Tripwire tripped: GI low**") {
		t.Errorf("the reset's edits of the trip notice: %+v", edits)
	}
	if len(replies) != 1 || !strings.Contains(replies[0].Body, "✅ Cleared at ") ||
		!strings.HasSuffix(replies[0].Body, "All clear: the alert was open 4m, handled by @bob:x.") {
		t.Errorf("the reset's replies: %+v", replies)
	}
}
