package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestSilenceHoldsAndEnds: alice, an admin, silences EVE for a minute
// because of a deploy (written with HTML in it) and arms a tripwire on
// EVE going offline. EVE goes silent: neither its alerts nor the trip
// reach the room; when the minute is up one message says the silence
// ended and lists what it held, the alerts and the trip, the reason shown
// as written. EVE is still offline: its alert is posted after that
// message, once, with 👀 and 💤 from Jarvis under it, and not again at
// the next sweeps.
func TestSilenceHoldsAndEnds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, room, alice, _, agents := onCallRoom(t, eveEvery2s, "EVE")
	set := j.ask(t, alice, room, `!silence EVE for 1 minute --because "deploy <b>v2</b>"`)
	if body := tesths.Body(set); !strings.HasPrefix(body, "🔕 Silence 1: I hold the alerts about it and the trips of tripwires reading it on EVE until ") {
		t.Fatalf("!silence got %q", body)
	}
	started := time.Now()
	agents.heartbeat(t, "EVE", "C-2")
	if body := tesths.Body(j.ask(t, alice, room, `!tw arm agent.status eq offline --param EVE --label "EVE offline" --because "EVE runs the nightly build" --push`)); !strings.Contains(body, "Armed") {
		t.Fatalf("!tw arm got %q", body)
	}

	ended, err := alice.WaitFor(ctx, 90*time.Second, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Silence 1 on EVE ended")
	})
	if err != nil {
		t.Fatalf("the silence did not end by itself: %v", err)
	}
	if since := time.Since(started); since < 55*time.Second {
		t.Errorf("the silence ended %s after it was set, before its minute", since.Round(time.Second))
	}
	body := tesths.Body(ended)
	for _, want := range []string{"its 1m are up. It held 2 alerts and 1 trip (all in the journals):", "EVE has missed 2 heartbeats", "EVE is offline",
		"🔔 EVE offline", "1 alert is still open, posted below.", "because “deploy <b>v2</b>”"} {
		if !strings.Contains(body, want) {
			t.Errorf("the end says %q, without %q", body, want)
		}
	}
	if html := ended.Content.AsMessage().FormattedBody; strings.Contains(html, "<b>v2</b>") {
		t.Errorf("the reason was rendered as HTML: %s", html)
	}
	alert := func(evt *event.Event) bool {
		b := tesths.Body(evt)
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.ID != ended.ID && evt.Content.AsMessage().RelatesTo == nil &&
			(strings.Contains(b, "EVE has missed") || strings.Contains(b, "EVE is offline"))
	}
	posted, err := alice.WaitFor(ctx, waitReply, alert)
	if err != nil {
		t.Fatalf("EVE's alert, still open, was not posted when the silence ended: %v", err)
	}
	if body := tesths.Body(posted); !strings.HasPrefix(body, "🔴 EVE is offline: ") || posted.Timestamp < ended.Timestamp {
		t.Errorf("posted %q at %d, want EVE's offline alert after the end (%d)", body, posted.Timestamp, ended.Timestamp)
	}
	for _, key := range []string{"👀", "💤"} {
		if _, err := alice.WaitFor(ctx, waitReply, reactionBy(j.UserID, posted.ID, key)); err != nil {
			t.Errorf("no %s from Jarvis on the alert posted: %v", key, err)
		}
	}
	// The watcher sweeps every 5 s: two more sweeps post nothing again.
	if again, err := alice.WaitFor(ctx, 11*time.Second, func(evt *event.Event) bool { return evt.ID != posted.ID && alert(evt) }); err == nil {
		t.Errorf("an alert was posted again: %q", tesths.Body(again))
	}
	if n := len(alice.Events(func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "Silence 1 on EVE ended")
	})); n != 1 {
		t.Errorf("%d messages said the silence ended, want one", n)
	}
}
