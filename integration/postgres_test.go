package integration

import (
	"context"
	"strings"
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
// and nothing reaches the room twice: every event Jarvis put in the room
// (counted on the homeserver, encrypted or not) is one sent outbox row,
// and every sent row is there once.
func TestPostgresFailover(t *testing.T) {
	alice := newPerson(t, "alice")
	failover(t, alice, options{
		admins: []id.UserID{alice.UserID},
		extra:  "workspace:\n  lease_ttl: 3s\n",
		store:  testdb.EmptyConfig(t, store.Postgres),
	}, nil)
}

// TestTwoHostsFailover is TestPostgresFailover with each Jarvis on a host
// of its own (a network namespace), reaching PostgreSQL and the
// homeserver over its own link.
func TestTwoHostsFailover(t *testing.T) {
	db := testdb.EmptyConfig(t, store.Postgres)
	hosts := twoHosts(t, db.URI)
	alice := newPerson(t, "alice")
	failover(t, alice, options{
		admins: []id.UserID{alice.UserID},
		extra:  "workspace:\n  lease_ttl: 3s\n",
		store:  db,
		host:   hosts[0],
	}, hosts[1])
}

// TestTwoHostsPartition: the holder's host is cut off (its link down)
// while its Jarvis keeps running. The standby on the other host takes
// over within the lease time (+5 s) and answers what was asked meanwhile;
// the cut-off Jarvis sends nothing more (read from the homeserver's
// /messages: every event since the cut is the new holder's, each once),
// and when its link is back it says, once, that it lost the lease.
func TestTwoHostsPartition(t *testing.T) {
	const ttl = 3 * time.Second
	ctx := context.Background()
	db := testdb.EmptyConfig(t, store.Postgres)
	hosts := twoHosts(t, db.URI)
	alice := newPerson(t, "alice")
	holder := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: "workspace:\n  lease_ttl: 3s\n",
		store: db, host: hosts[0]})
	room := holder.joinRoom(t, alice)
	says := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, holder.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
		}
	}
	standby := holder.TwinOn(t, hosts[1])
	if _, err := alice.WaitFor(ctx, waitReply, says("stays mute")); err != nil {
		t.Fatalf("the standby posted no mute notice: %v\n%s", err, standby.logs.String())
	}
	holder.ask(t, alice, room, "!ping")
	waitOutboxEmpty(t, holder.openStore(t), waitReply)
	before, err := alice.FromServer(ctx, room, holder.UserID)
	if err != nil {
		t.Fatal(err)
	}

	hosts[0].cut()
	cut := time.Now()
	var asked []id.EventID
	ping := func() {
		t.Helper()
		sent, err := alice.Say(ctx, room, "!ping")
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, sent)
	}
	ping()
	if _, err := alice.WaitFor(ctx, ttl+10*time.Second, says("took over")); err != nil {
		t.Fatalf("the standby did not take over: %v\n%s", err, standby.logs.String())
	}
	if took := time.Since(cut); took > ttl+5*time.Second {
		t.Errorf("takeover took %s after the cut, want within the lease time %s (+5 s)", took, ttl)
	}
	ping()
	for _, evt := range asked {
		if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(evt)); err != nil {
			t.Fatalf("%s asked while the holder was cut off was never answered: %v", evt, err)
		}
	}

	// Back on the network, the old holder finds the lease taken and says
	// so through the outbox, which the new holder sends.
	hosts[0].mend()
	if _, err := alice.WaitFor(ctx, waitReply+ttl, says("lost the workspace lease")); err != nil {
		t.Fatalf("the cut-off Jarvis never said it lost the lease: %v\n%s", err, holder.logs.String())
	}
	ping()
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(asked[len(asked)-1])); err != nil {
		t.Fatal(err)
	}
	// Whatever the old holder still had in flight would be sent by now.
	time.Sleep(ttl)

	events := holder.sentOnce(t, alice, room)
	seen := map[id.EventID]bool{}
	for _, evt := range before {
		seen[evt.ID] = true
	}
	expected := []func(*event.Event) bool{says("took over"), says("lost the workspace lease")}
	for _, evt := range asked {
		expected = append(expected, holder.replyTo(evt))
	}
	for _, evt := range events {
		if seen[evt.ID] {
			continue
		}
		read := alice.Events(func(e *event.Event) bool { return e.ID == evt.ID && e.Type == event.EventMessage })
		matched := -1
		for i, match := range expected {
			if match != nil && len(read) > 0 && match(read[0]) {
				matched = i
				break
			}
		}
		if matched < 0 {
			t.Errorf("%s %s sent since the cut is none of the new holder's: %q", evt.Type.Type, evt.ID, eventBody(alice, evt.ID))
			continue
		}
		expected[matched] = nil
	}
	for i, match := range expected {
		if match != nil {
			t.Errorf("expected event %d since the cut is not in the room", i)
		}
	}
}
