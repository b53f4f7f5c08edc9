package integration

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/client"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestExactlyOneJarvis checks the workspace lease's fencing: a second
// Jarvis on the same workspace posts one notice and stays mute; nothing is
// answered twice; when the holder is killed, the second takes over within
// the lease time, says so, and answers what was asked in between.
func TestExactlyOneJarvis(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	failover(t, alice, options{admins: []id.UserID{alice.UserID}, extra: "workspace:\n  lease_ttl: 3s\n"}, nil)
}

// failover runs the fencing scenario on a workspace whose Jarvis opts
// configure (with a 3 s lease), the standby on standbyHost (here when
// nil): one mute notice from the second process,
// every command answered once, takeover within the lease time after the
// holder's SIGKILL; and, counted on the homeserver, every event Jarvis
// put in the room is one sent outbox row, and every sent row is there
// once.
func failover(t *testing.T, alice *tesths.Person, opts options, standbyHost *host, balanced ...balancedAgents) {
	t.Helper()
	ctx := context.Background()
	const ttl = 3 * time.Second
	holder := newJarvis(t, opts)
	room := holder.joinRoom(t, alice)
	fromJarvis := func(prefix string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, holder.UserID)(evt) && strings.Contains(tesths.Body(evt), prefix)
		}
	}
	var asked []id.EventID
	ping := func() id.EventID {
		t.Helper()
		sent, err := alice.Say(ctx, room, "!ping")
		if err != nil {
			t.Fatal(err)
		}
		asked = append(asked, sent)
		return sent
	}
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(ping())); err != nil {
		t.Fatal(err)
	}

	var standbyEnv []string
	if len(balanced) > 0 {
		standbyEnv = append(standbyEnv, "JARVIS_API_LISTEN="+balanced[0].apis[1])
	}
	standby := holder.TwinOn(t, standbyHost, standbyEnv...)
	if _, err := alice.WaitFor(ctx, waitReply, fromJarvis("stays mute")); err != nil {
		t.Fatalf("the standby posted no mute notice: %v\n%s", err, standby.logs.String())
	}
	var load *agentLoad
	if len(balanced) > 0 {
		b := balanced[0]
		tokens, err := workload.IssueTokens(ctx, holder.openStore(t), append(slices.Clone(b.agents), b.pinger))
		if err != nil {
			t.Fatal(err)
		}
		load = b.start(t, tokens)
		defer load.cancel()
		// A halt opened on the standby reaches the room within the halt's
		// bound: the holder, told at once, sends it.
		const haltBound = 2 * time.Second
		sup := client.New("http://"+b.apis[1], tokens.Supervisor)
		opened := time.Now()
		if _, err := sup.OpenBreaker(ctx, b.agents[0], client.Breach{Severity: "infrastructure", Reason: "opened on the standby"}); err != nil {
			t.Fatalf("the standby refused a supervisor's breach: %v", err)
		}
		if _, err := alice.WaitFor(ctx, waitReply, fromJarvis("opened on the standby")); err != nil {
			t.Fatalf("the halt opened on the standby never reached the room: %v", err)
		}
		if took := time.Since(opened); took > haltBound {
			t.Errorf("the halt opened on the standby took %s to reach the room, want within %s", took, haltBound)
		}
	}
	for range 3 {
		if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(ping())); err != nil {
			t.Fatal(err)
		}
	}

	var staged func(*event.Event) bool
	if len(balanced) > 0 {
		// A report the standby stores while the holder can no longer act
		// on it (frozen, then killed): its alert, staged, is the new
		// holder's to post, once.
		b := balanced[0]
		holder.Freeze()
		if code := postPing(t, "http://"+b.apis[1]+"/api/ping/fail", load.tokens.Agents[b.pinger]); code != http.StatusOK {
			t.Errorf("the standby answered a failure ping %d while the holder was frozen, want 200", code)
		}
		staged = fromJarvis(b.pinger + " reported a failure")
	}
	holder.Kill()
	killed := time.Now()
	during := ping()
	if _, err := alice.WaitFor(ctx, ttl+10*time.Second, fromJarvis("took over")); err != nil {
		t.Fatalf("the standby did not take over: %v\n%s", err, standby.logs.String())
	}
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(during)); err != nil {
		t.Fatalf("the message sent during the switch was never answered: %v", err)
	}
	if took := time.Since(killed); took > ttl+5*time.Second {
		t.Errorf("takeover took %s, want within the lease time %s (+5 s)", took, ttl)
	}
	if _, err := alice.WaitFor(ctx, waitReply, holder.replyTo(ping())); err != nil {
		t.Fatal(err)
	}
	if load != nil {
		load.stop(t, holder.openStore(t), balanced[0].apis)
		if _, err := alice.WaitFor(ctx, waitReply, staged); err != nil {
			t.Errorf("the failure the standby stored before the takeover never reached the room: %v", err)
		}
		if n := len(alice.Events(staged)); n != 1 {
			t.Errorf("the failure the standby stored before the takeover reached the room %d times, want once", n)
		}
	}

	events := holder.sentOnce(t, alice, room)
	for _, evt := range asked {
		if n := answers(events, evt); n != 1 {
			t.Errorf("%s answered %d times in the room, want once", evt, n)
		}
		if n := len(alice.Events(holder.replyTo(evt))); n != 1 {
			t.Errorf("%s: %d answers read, want one", evt, n)
		}
	}
	if n := len(alice.Events(fromJarvis("stays mute"))); n != 1 {
		t.Errorf("%d mute notices, want one", n)
	}
}

// TestStandbyWritesNothing: a standby on the same database writes nothing
// but intake, its one mute notice and the record of its own start while
// it does not hold the lease, though a tripwire is armed whose condition
// turns true while it watches, and an agent reports a failure to the
// standby's API. On PostgreSQL every Jarvis serves the agents: the standby
// answers the report 200 and stores it (the agent's tables, the incident
// it opens) with its alert staged for the holder, never in the outbox; on
// SQLite it answers 503 and stores nothing. The holder is paused (SIGSTOP,
// its lease still live) so that whatever changes in the store while the
// standby runs is the standby's; every table of the schema but bot_state
// (Matrix login state) is compared row by row. Resumed, the holder trips
// the tripwire (it was armed to trip) and, on PostgreSQL, posts the
// failure alert the standby stored, once.
func TestStandbyWritesNothing(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{store.SQLite, store.Postgres} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			standbyWritesOnlyIntake(t, engine)
		})
	}
}

// intakeTables are the tables an agent's failure ping writes on a Jarvis
// that does not hold the lease: the report, the agent's state, its readings
// as source history, the incident it opens and the alert staged for the
// holder.
var intakeTables = []string{"agent_heartbeat", "fleet_agent", "history_source", "source_reading", "incident", "staged_notice"}

func standbyWritesOnlyIntake(t *testing.T, engine string) {
	ctx := context.Background()
	feed, url := newSnapshotFeed(t, 0.80)
	alice := newPerson(t, "alice")
	opts := options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("sources:\n  snapshot:\n    url: %s\ntripwires:\n  tick: 1s\nworkspace:\n  lease_ttl: 60s\n"+
			"api:\n  listen: %s\nfleet:\n  agents:\n    - name: BACKUP\n      cadence: 1h\n", url, cardAPIListen(t))}
	if engine == store.Postgres {
		opts.store = testdb.EmptyConfig(t, store.Postgres)
	}
	holder := newJarvis(t, opts)
	room := holder.joinRoom(t, alice)
	if body := tesths.Body(holder.ask(t, alice, room, `!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs GI above 0.7" --push`)); !strings.HasPrefix(body, "Armed — tw_") {
		t.Fatalf("arming got %q", body)
	}
	token := holder.issueToken(t, "agent", "BACKUP")
	st := holder.openStore(t)
	waitOutboxEmpty(t, st, waitReply)

	if err := holder.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.cmd.Process.Signal(syscall.SIGCONT) })
	before := storeContents(t, st)
	standbyAPI := cardAPIListen(t)
	standby := holder.Twin(t, "JARVIS_API_LISTEN="+standbyAPI)
	deadline := time.Now().Add(waitReply)
	for !strings.Contains(standby.logs.String(), "staying mute") {
		if time.Now().After(deadline) {
			t.Fatalf("the standby never said it stays mute:\n%s", standby.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	want := map[string]int{store.SQLite: http.StatusServiceUnavailable, store.Postgres: http.StatusOK}[engine]
	if code := postPing(t, "http://"+standbyAPI+"/api/ping/fail", token); code != want {
		t.Errorf("the standby answered the agent's failure ping %d, want %d", code, want)
	}
	feed.setGI(0.65)
	// The tripwires tick every second: a standby that evaluated them would
	// have tripped this one several times over by now.
	time.Sleep(4 * time.Second)
	after := storeContents(t, st)

	for table, rows := range after {
		if table == "outbox" {
			rows = slices.DeleteFunc(rows, func(row string) bool { return strings.Contains(row, "lease:mute:") })
		}
		added, removed := diffRows(before[table], rows)
		if table == "jarvis_boot" && len(added) == 1 && len(removed) == 0 {
			// Its own start, which every Jarvis records, lease or not, so
			// that its restarts are counted.
			continue
		}
		if engine == store.Postgres && slices.Contains(intakeTables, table) {
			if len(added) == 0 {
				t.Errorf("%s: the failure ping the standby answered 200 wrote nothing here", table)
			}
			continue
		}
		if len(added)+len(removed) > 0 {
			t.Errorf("%s changed while the standby did not hold the lease:\nadded %q\nremoved %q", table, added, removed)
		}
	}
	if n := len(after["outbox"]) - len(before["outbox"]); n != 1 {
		t.Errorf("%d notices queued while the holder was paused, want the one mute notice", n)
	}
	if engine == store.Postgres {
		// The alert and the 👀 💤 it is seeded with.
		staged := after["staged_notice"]
		if len(staged) != 3 || slices.ContainsFunc(staged, func(row string) bool { return !strings.Contains(row, "fail:BACKUP:") }) {
			t.Errorf("%d notices staged for the holder, want the failure alert and its two reactions: %q", len(staged), staged)
		}
	}

	if err := holder.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.Sender == holder.UserID && strings.Contains(tesths.Body(evt), "Tripwire tripped: GI low")
	}); err != nil {
		t.Fatalf("the resumed holder did not trip the tripwire: %v", err)
	}
	if engine != store.Postgres {
		return
	}
	failed := func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.Sender == holder.UserID && strings.Contains(tesths.Body(evt), "BACKUP reported a failure")
	}
	if _, err := alice.WaitFor(ctx, waitReply, failed); err != nil {
		t.Fatalf("the resumed holder never posted the failure the standby stored: %v", err)
	}
	waitOutboxEmpty(t, st, waitReply)
	if n := len(alice.Events(failed)); n != 1 {
		t.Errorf("the failure alert reached the room %d times, want once", n)
	}
}

// postPing sends an agent's ping to url with its token and returns the
// answer's status.
func postPing(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

var createTable = regexp.MustCompile(`CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)`)

// storeContents reads every table the store's schema creates, but
// bot_state, as one string per row.
func storeContents(t *testing.T, st *store.Store) map[string][]string {
	t.Helper()
	ctx := context.Background()
	tables := map[string][]string{}
	err := fs.WalkDir(store.Upgrades(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		sql, err := fs.ReadFile(store.Upgrades(), path)
		if err != nil {
			return err
		}
		for _, m := range createTable.FindAllStringSubmatch(string(sql), -1) {
			if m[1] != "bot_state" {
				tables[m[1]] = nil
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for table := range tables {
		rows, err := st.DB.RawDB.QueryContext(ctx, "SELECT * FROM "+table)
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			values := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range values {
				ptrs[i] = &values[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatalf("read %s: %v", table, err)
			}
			tables[table] = append(tables[table], fmt.Sprintf("%v", values))
		}
		if err := rows.Close(); err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
	}
	return tables
}

// diffRows returns the rows only in after and only in before.
func diffRows(before, after []string) (added, removed []string) {
	count := map[string]int{}
	for _, r := range before {
		count[r]++
	}
	for _, r := range after {
		if count[r] > 0 {
			count[r]--
			continue
		}
		added = append(added, r)
	}
	for r, n := range count {
		for range n {
			removed = append(removed, r)
		}
	}
	return added, removed
}
