package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestQuietHoursDigest: Alice sets quiet hours around the present; her
// tripwire's push is held while an urgent tripwire's breaks through, and
// when she turns the hours off one digest in her direct room brings what
// was held, mentioning her; the held trip is never pushed on its own.
func TestQuietHoursDigest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	feed, url := newSnapshotFeed(t, 0.80)
	alice := newPerson(t, "alice")
	j := tripwireJarvis(t, url, alice)
	room := j.joinRoom(t, alice)

	now := time.Now().UTC()
	hours := fmt.Sprintf("%s-%s", now.Add(-time.Hour).Format("15:04"), now.Add(3*time.Hour).Format("15:04"))
	j.ask(t, alice, room, "!me tz UTC")
	if body := tesths.Body(j.ask(t, alice, room, "!me quiet "+hours)); !strings.HasPrefix(body, "Quiet hours ") {
		t.Fatalf("!me quiet %s got %q", hours, body)
	}
	for _, arm := range []string{
		`!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7" --push`,
		`!tw arm integrity.gi lt 0.60 --label "GI collapsing" --because "wake me" --urgent`,
	} {
		if body := tesths.Body(j.ask(t, alice, room, arm)); !strings.HasPrefix(body, "Armed — tw_") {
			t.Fatalf("%s got %q", arm, body)
		}
	}

	feed.setGI(0.55)
	urgent, err := alice.WaitFor(ctx, waitReply, tripped(j, "GI collapsing"))
	if err != nil {
		t.Fatalf("the urgent trip did not break through: %v", err)
	}
	if urgent.RoomID == room {
		t.Errorf("the urgent trip went to the shared room")
	}

	if body := tesths.Body(j.ask(t, alice, room, "!me quiet off")); !strings.HasPrefix(body, "Quiet hours off") {
		t.Fatalf("!me quiet off got %q", body)
	}
	digest, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.Sender == j.UserID && strings.Contains(tesths.Body(evt), "While your quiet hours held them")
	})
	if err != nil {
		t.Fatalf("no digest: %v", err)
	}
	body := tesths.Body(digest)
	for _, w := range []string{"1 trip", "GI low", "integrity.gi is 0.55"} {
		if !strings.Contains(body, w) {
			t.Errorf("the digest lacks %q:\n%s", w, body)
		}
	}
	if strings.Contains(body, "GI collapsing") {
		t.Errorf("the digest repeats the urgent trip:\n%s", body)
	}
	if digest.RoomID != urgent.RoomID {
		t.Errorf("the digest went to %s, not Alice's direct room %s", digest.RoomID, urgent.RoomID)
	}
	if m := digest.Content.AsMessage().Mentions; m == nil || !slices.Contains(m.UserIDs, alice.UserID) {
		t.Errorf("the digest does not mention %s: %+v", alice.UserID, m)
	}
	if got := alice.Events(tripped(j, "GI low")); len(got) != 0 {
		t.Errorf("the held trip was pushed too: %q", tesths.Body(got[0]))
	}
}
