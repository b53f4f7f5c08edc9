package integration

import (
	"testing"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestPostgresFailover is the hot standby on another host: two `jarvis
// run` processes share one PostgreSQL database. The standby waits mute;
// when the holder dies with SIGKILL, the standby takes over within the
// lease time (+5 s), says so, answers what was asked during the switch,
// and nothing reaches the room twice: every event Jarvis put in the room
// (counted on the homeserver, encrypted or not) is one sent outbox row,
// and every sent row is there once.
func TestPostgresFailover(t *testing.T) {
	alice := newPerson(t, "alice")
	failover(t, alice, options{
		admins: []id.UserID{alice.UserID},
		extra:  "workspace:\n  lease_ttl: 3s\n",
		store:  testdb.EmptyConfig(t, store.Postgres),
	})
}
