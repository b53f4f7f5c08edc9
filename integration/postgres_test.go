package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
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
	t.Parallel()
	alice := newPerson(t, "alice")
	failover(t, alice, options{
		admins: []id.UserID{alice.UserID},
		extra:  "workspace:\n  lease_ttl: 3s\n",
		store:  testdb.EmptyConfig(t, store.Postgres),
	}, nil)
}

// TestTwoHostsFailover is TestPostgresFailover with each Jarvis on a host
// of its own (a network namespace), reaching PostgreSQL and the
// homeserver over its own link, and a load balancer (round robin) in front
// of both APIs: eight agents heartbeat through it while the holder is
// SIGKILLed, and every heartbeat either Jarvis acknowledged is stored
// once. A halt a supervisor opens on the standby reaches the room within
// 2 s; a failure an agent pings to the standby while the holder is frozen,
// just before it is killed, is posted by the new holder, once.
func TestTwoHostsFailover(t *testing.T) {
	t.Parallel()
	db := testdb.EmptyConfig(t, store.Postgres)
	hosts := twoHosts(t, db.URI)
	alice := newPerson(t, "alice")
	port := strconv.Itoa(freeLoopbackPort(t))
	agents := balancedAgents{apis: [2]string{net.JoinHostPort(hosts[0].there, port), net.JoinHostPort(hosts[1].there, port)},
		agents: []string{"A1", "A2", "A3", "A4", "A5", "A6", "A7", "A8"}, pinger: "BACKUP"}
	extra := "workspace:\n  lease_ttl: 3s\napi:\n  listen: " + agents.apis[0] + "\nfleet:\n  agents:\n"
	for _, a := range append(slices.Clone(agents.agents), agents.pinger) {
		extra += "    - name: " + a + "\n      cadence: 1h\n"
	}
	failover(t, alice, options{
		admins: []id.UserID{alice.UserID},
		extra:  extra,
		store:  db,
		host:   hosts[0],
	}, hosts[1], agents)
}

// TestTwoHostsPartition: the holder's host is cut off (its link down)
// while its Jarvis keeps running. The standby on the other host takes
// over within the lease time (+5 s) and answers what was asked meanwhile;
// the cut-off Jarvis sends nothing more (read from the homeserver's
// /messages: every event since the cut is the new holder's, each once),
// and when its link is back it says, once, that it lost the lease.
func TestTwoHostsPartition(t *testing.T) {
	t.Parallel()
	const ttl = 3 * time.Second
	ctx := context.Background()
	db := testdb.EmptyConfig(t, store.Postgres)
	hosts := twoHosts(t, db.URI)
	p := startPair(t, hosts, db, "workspace:\n  lease_ttl: 3s\n")
	holder, standby, alice, room, says := p.holder, p.standby, p.alice, p.room, p.says
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

// TestTwoHostsDatabaseRestart: PostgreSQL is restarted twice while agents
// report to the holder on its own host and a person talks to it, first as
// an operator would (fast shutdown), then as a crash would (immediate).
// Jarvis reconnects by itself: it answers and takes heartbeats after each
// restart; every heartbeat it acknowledged is in the database; every
// question is answered once, and every event it put in the room is one
// sent outbox row.
func TestTwoHostsDatabaseRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pg, err := testdb.StartServer(t)
	if err != nil {
		t.Skipf("no PostgreSQL server of the test's own to restart: %v", err)
	}
	hosts := twoHosts(t, pg.Store.URI)
	api := func(h *host) string { return net.JoinHostPort(h.there, "8080") }
	p := startPair(t, hosts, pg.Store,
		"api:\n  listen: "+api(hosts[0])+"\nfleet:\n  agents:\n    - name: EVE\n    - name: HAL\nworkspace:\n  lease_ttl: 10s\n",
		"JARVIS_API_LISTEN="+api(hosts[1]))
	holder, alice, room := p.holder, p.alice, p.room
	tokens := holder.issueTokens(t, "EVE", "HAL")

	// Four agents' loops post heartbeats to the holder as fast as it
	// answers, each for a cycle of its own, and keep the ones it took.
	var mu sync.Mutex
	var acked []string
	refused := map[int]int{}
	load, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agent := []string{"EVE", "HAL"}[g%2]
			for i := 0; load.Err() == nil; i++ {
				cycle := fmt.Sprintf("C-%d-%d", g, i)
				code := postHeartbeat(load, "http://"+api(hosts[0]), tokens.agent[agent], agent, cycle)
				mu.Lock()
				if code == http.StatusOK {
					acked = append(acked, agent+"/"+cycle)
				} else {
					refused[code]++
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	ackedSoFar := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}

	var asked []id.EventID
	ping := func(when string) {
		t.Helper()
		sent, err := alice.Say(ctx, room, "!ping")
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, sent)
		if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(sent)); err != nil {
			t.Fatalf("%s, no answer: %v\n%s", when, err, holder.logs.String())
		}
	}
	for _, mode := range []string{"fast", "immediate"} {
		ping("before the restart")
		time.Sleep(time.Second)
		if err := pg.Restart(mode); err != nil {
			t.Fatal(err)
		}
		restarted := ackedSoFar()
		ping("after a " + mode + " restart of PostgreSQL")
		deadline := time.Now().Add(waitReply)
		for ackedSoFar() < restarted+20 {
			if time.Now().After(deadline) {
				t.Fatalf("after a %s restart of PostgreSQL, %d heartbeats taken in %s", mode, ackedSoFar()-restarted, waitReply)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	stop()
	wg.Wait()

	st := holder.openStore(t)
	var lost []string
	for _, key := range acked {
		agent, cycle, _ := strings.Cut(key, "/")
		if _, err := st.Heartbeats().Heartbeat(ctx, agent, cycle); err != nil {
			lost = append(lost, key)
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d acknowledged heartbeats are not in the database, such as %s", len(lost), len(acked), lost[0])
	}
	t.Logf("%d heartbeats acknowledged, refused by status: %v", len(acked), refused)
	events := holder.sentOnce(t, alice, room)
	for _, evt := range asked {
		if n := answers(events, evt); n != 1 {
			t.Errorf("%s answered %d times in the room, want once", evt, n)
		}
	}
}

// postHeartbeat posts one heartbeat and returns the status, 0 when no
// answer came.
func postHeartbeat(ctx context.Context, base, token, agent, cycle string) int {
	body := fmt.Sprintf(`{"agent":%q,"cycle":%q,"timestamp":%q,"mii":0.97,"mode_self_report":"green","notes":"restart"}`,
		agent, cycle, time.Now().UTC().Format(time.RFC3339))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/agents/heartbeat", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// TestTwoHostsCleanStop: the holder stops cleanly (SIGTERM) and releases
// the lease; the standby on the other host hears so from PostgreSQL
// (LISTEN/NOTIFY) and takes over at once. The lease lasts 60 s, so the
// standby's poll comes every 20 s: a takeover within 10 s of the stop is
// the notification's.
func TestTwoHostsCleanStop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testdb.EmptyConfig(t, store.Postgres)
	hosts := twoHosts(t, db.URI)
	p := startPair(t, hosts, db, "workspace:\n  lease_ttl: 60s\n")
	holder, standby, alice, room, says := p.holder, p.standby, p.alice, p.room, p.says
	// The standby's first round is over, and its next poll 20 s away.
	holder.Stop()
	stopped := time.Now()
	if _, err := alice.WaitFor(ctx, waitReply, says("took over")); err != nil {
		t.Fatalf("the standby did not take over: %v\n%s", err, standby.logs.String())
	}
	took := time.Since(stopped)
	if took > 10*time.Second {
		t.Errorf("takeover %s after the clean stop, want within 10 s, well before the poll (20 s)", took.Round(time.Millisecond))
	}
	t.Logf("the standby's takeover reached the room %s after the clean stop", took.Round(time.Millisecond))
	holder.ask(t, alice, room, "!ping")
}

// pair is a holder on one host and its standby on the other, and a
// person in their room.
type pair struct {
	holder, standby *jarvis
	alice           *tesths.Person
	room            id.RoomID
}

// startPair starts a Jarvis configured with extra on hosts[0] with db,
// joins alice (its admin) to its room, starts its twin on hosts[1] with
// standbyEnv, and waits for the twin's mute notice.
func startPair(t *testing.T, hosts [2]*host, db store.Config, extra string, standbyEnv ...string) pair {
	t.Helper()
	alice := newPerson(t, "alice")
	holder := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: extra, store: db, host: hosts[0]})
	p := pair{holder: holder, alice: alice, room: holder.joinRoom(t, alice)}
	p.standby = holder.TwinOn(t, hosts[1], standbyEnv...)
	if _, err := alice.WaitFor(context.Background(), waitReply, p.says("stays mute")); err != nil {
		t.Fatalf("the standby posted no mute notice: %v\n%s", err, p.standby.logs.String())
	}
	return p
}

// says matches Jarvis's messages in the room that contain text.
func (p pair) says(text string) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		return tesths.MessageFrom(p.room, p.holder.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
	}
}
