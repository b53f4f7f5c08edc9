package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestRateLimited floods one room on a homeserver that rate-limits: one
// request per device every 3.5 s on the endpoints Dendrite limits. The
// flood is 45 notices whose sends were started but never recorded, as
// after a crash mid-send, so before each batch Jarvis looks through the
// room for an earlier delivery (/messages), which Dendrite v0.13.8 limits
// (it does not limit /send). Jarvis must wait as long as each 429's
// retry_after_ms asks and not a moment less, coalesce what waits, and
// deliver every notice exactly once.
func TestRateLimited(t *testing.T) {
	t.Parallel()
	const (
		cooloff = 3500 * time.Millisecond // no power of two seconds: not the outbox's own back-off
		flood   = 45
	)
	ctx := context.Background()
	server := ownHomeserver(t, tesths.RateLimit(1, cooloff))
	alice, err := server.NewPerson(ctx, "alice")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(alice.Stop)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, hs: server})
	room := j.joinRoom(t, alice)
	if err := alice.WaitEncrypted(ctx, room, waitReply); err != nil {
		t.Fatal(err)
	}
	j.ask(t, alice, room, "!ping")

	j.Stop()
	st := j.openStore(t)
	keys := make([]string, flood)
	for i := range keys {
		keys[i] = fmt.Sprintf("flood:%02d", i)
		err := st.Outbox().Enqueue(ctx, core.Notice{Key: keys[i], RoomID: room.String(), Kind: core.NoticeMessage,
			Body: fmt.Sprintf("flood notice %02d of %d.", i, flood), Coalesce: true})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Outbox().MarkAttempt(ctx, keys, time.Now()); err != nil {
		t.Fatal(err)
	}
	j.Start()

	floodEvent := func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "flood notice")
	}
	for i := range flood {
		want := fmt.Sprintf("flood notice %02d of", i)
		if _, err := alice.WaitFor(ctx, time.Minute, func(evt *event.Event) bool {
			return floodEvent(evt) && strings.Contains(tesths.Body(evt), want)
		}); err != nil {
			t.Fatalf("notice %d never arrived: %v\n%s", i, err, j.logs.String())
		}
	}
	waitOutboxEmpty(t, st, 10*time.Second)
	if t.Failed() {
		t.FailNow()
	}

	// Exactly once, coalesced: every notice is in one event, and the
	// events are the ones the outbox says delivered them.
	events := alice.Events(floodEvent)
	for i := range flood {
		want := fmt.Sprintf("flood notice %02d of", i)
		n := 0
		for _, evt := range events {
			n += strings.Count(tesths.Body(evt), want)
		}
		if n != 1 {
			t.Errorf("notice %d arrived %d times, want once", i, n)
		}
	}
	if len(events) >= flood || len(events) < (flood+core.MaxCoalesced-1)/core.MaxCoalesced {
		t.Errorf("%d events for %d coalescible notices, want between %d and %d", len(events), flood, (flood+core.MaxCoalesced-1)/core.MaxCoalesced, flood-1)
	}
	seen := map[string]bool{}
	for _, evt := range events {
		seen[evt.ID.String()] = true
	}
	delivered := map[string]bool{}
	limited := 0
	for _, key := range keys {
		e, err := st.Outbox().Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		delivered[e.EventID] = true
		if !seen[e.EventID] {
			t.Errorf("notice %s recorded as delivered by %s, which the person did not see", key, e.EventID)
		}
		if e.Attempts > 0 {
			limited++
			// The last failure fixed the next attempt; the send that
			// delivered it came no earlier.
			if e.SentAt.Before(e.NextAttempt) {
				t.Errorf("notice %s sent at %s, before the next attempt the homeserver asked for (%s)", key, e.SentAt.Format(time.StampMilli), e.NextAttempt.Format(time.StampMilli))
			}
		}
	}
	if len(delivered) != len(events) {
		t.Errorf("the outbox names %d delivering events, the person saw %d", len(delivered), len(events))
	}
	if limited == 0 {
		t.Fatalf("no notice was ever held back by the rate limit; jarvis log:\n%s", j.logs.String())
	}

	// Every 429 set the next attempt exactly retry_after_ms ahead.
	rateLimited := 0
	for _, line := range strings.Split(j.logs.String(), "\n") {
		var entry struct {
			Message string  `json:"message"`
			Error   string  `json:"error"`
			RetryIn float64 `json:"retry_in"`
		}
		if json.Unmarshal([]byte(line), &entry) != nil || entry.Message != "Failed to send notice" {
			continue
		}
		if !strings.Contains(entry.Error, "M_LIMIT_EXCEEDED") {
			continue
		}
		rateLimited++
		if time.Duration(entry.RetryIn)*time.Millisecond != cooloff {
			t.Errorf("after a 429 asking for %v Jarvis retries in %vms: %s", cooloff, entry.RetryIn, line)
		}
	}
	if rateLimited == 0 {
		t.Errorf("no 429 in Jarvis's log, though %d notices waited for one", limited)
	}
}
