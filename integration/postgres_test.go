package integration

import (
	"context"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testdb"
	"github.com/jarvis-hmi/jarvis/internal/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestPostgresFailover is the hot standby on another host: two `jarvis
// run` processes share one PostgreSQL database. The standby waits mute;
// when the holder dies with SIGKILL, the standby takes over within the
// lease time (+5 s), says so, answers what was asked during the switch,
// and nothing reaches the room twice: every Matrix message Jarvis sent is
// exactly one sent outbox row, and every sent row was seen once.
func TestPostgresFailover(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.EmptyConfig(t, store.Postgres)
	alice := newPerson(t, "alice")
	holder, room := failover(t, alice, options{
		admins: []id.UserID{alice.UserID},
		extra:  "workspace:\n  lease_ttl: 3s\n",
		store:  cfg,
	})

	// Let the outbox settle, then compare what was sent with what was seen.
	time.Sleep(time.Second)
	rows, err := holder.openStore(t).DB.Query(ctx, `SELECT key, event_id FROM outbox WHERE sent_at > 0 AND room_id = $1 AND kind = 'message'`, string(room))
	if err != nil {
		t.Fatal(err)
	}
	sentRows := map[id.EventID][]string{}
	for rows.Next() {
		var key, eventID string
		if err := rows.Scan(&key, &eventID); err != nil {
			t.Fatal(err)
		}
		sentRows[id.EventID(eventID)] = append(sentRows[id.EventID(eventID)], key)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	seen := map[id.EventID]int{}
	for _, evt := range alice.Events(tesths.MessageFrom(room, holder.UserID)) {
		_ = evt.Content.ParseRaw(evt.Type)
		if msg := evt.Content.AsMessage(); msg != nil && msg.RelatesTo != nil && msg.RelatesTo.GetReplaceID() != "" {
			continue // an edit of a message, not a notice of its own
		}
		seen[evt.ID]++
	}
	if len(sentRows) == 0 {
		t.Fatal("no sent notices in the outbox")
	}
	for eventID, n := range seen {
		if n != 1 {
			t.Errorf("event %s seen %d times", eventID, n)
		}
		if _, ok := sentRows[eventID]; !ok {
			t.Errorf("message %s in the room is no sent outbox row (a duplicate?): %q", eventID, eventBody(alice, eventID))
		}
	}
	for eventID, keys := range sentRows {
		if seen[eventID] != 1 {
			t.Errorf("outbox rows %v sent as %s, seen %d times in the room", keys, eventID, seen[eventID])
		}
	}
	t.Logf("%d notices sent, %d messages seen", len(sentRows), len(seen))
}

// eventBody is the body of an event the person saw, for failure messages.
func eventBody(p *tesths.Person, eventID id.EventID) string {
	for _, evt := range p.Events(func(evt *event.Event) bool { return evt.ID == eventID }) {
		return tesths.Body(evt)
	}
	return ""
}
