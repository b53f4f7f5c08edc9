package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// checkInvariants is what must hold after any scenario, read from the
// store and from the room as the homeserver holds it:
//   - every outbox row was sent, and its event is in the room once (and
//     every event of Jarvis's there is a sent row);
//   - every message a person sent in the room was answered exactly once;
//   - every heartbeat, journal entry and card set the API acknowledged is
//     stored, and every breaker it opened;
//   - no card set is partial;
//   - no trip was journaled, pushed or put in a tripwire's history twice.
//
// That the standby wrote nothing but intake is checked as the scenario
// goes, by probeStandby; on PostgreSQL, that every Jarvis took the agents'
// reports, by standbyServed.
func (s *scenario) checkInvariants() {
	s.t.Helper()
	s.holder()
	s.answeredOnce()
	s.stagedMoved()
	waitOutboxEmpty(s.t, s.st, waitReply)
	s.sentOnce()
	s.acknowledgedStored()
	s.noPartialCardSets()
	s.tripsOnce()
	s.standbyServed()
}

// stagedMoved waits until the holder has moved into the outbox every
// notice that agents' reports caused on a Jarvis without the lease.
func (s *scenario) stagedMoved() {
	s.t.Helper()
	deadline := time.Now().Add(waitReply)
	for {
		n, err := s.st.Outbox().Staged(context.Background())
		if err != nil {
			s.t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Errorf("%d notices of agents' reports still staged after %s: the holder never sent them", n, waitReply)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// standbyServed checks, on PostgreSQL, that the load balancer's round
// robin had the agents' reports taken by every Jarvis that ran beside
// another, the standby as well as the holder: each answered some with
// 2xx, and none with 503 (what a standby answered before every Jarvis
// served the agents). That what they took is kept, across the takeovers,
// is acknowledgedStored's.
func (s *scenario) standbyServed() {
	if s.plan.engine != store.Postgres || len(s.nodes) < 2 {
		return
	}
	answered := s.lb.answered()
	for _, n := range s.nodes {
		ok := 0
		for status, count := range answered[n.api] {
			if status/100 == 2 {
				ok += count
			}
		}
		if ok == 0 || answered[n.api][http.StatusServiceUnavailable] > 0 {
			s.t.Errorf("the Jarvis at %s answered the agents' reports %v, want 2xx and never 503", n.api, answered[n.api])
		}
	}
	s.t.Logf("the agents' reports through the load balancer, by Jarvis and status: %v", answered)
}

// answeredOnce waits until every message a person sent in the room (all
// of them commands or sentences Jarvis answers, each read on the
// homeserver, so one whose send seemed to fail counts too) has an answer,
// then checks that each has exactly one.
func (s *scenario) answeredOnce() {
	t := s.t
	ctx := context.Background()
	jarvisID := s.nodes[0].UserID
	deadline := time.Now().Add(2 * waitReply)
	for {
		asked, err := s.alice.FromServer(ctx, s.room, s.alice.UserID)
		if err != nil {
			t.Fatal(err)
		}
		said, err := s.alice.FromServer(ctx, s.room, jarvisID)
		if err != nil {
			t.Fatal(err)
		}
		var unanswered, twice []string
		for _, evt := range asked {
			if evt.Type != event.EventEncrypted && evt.Type != event.EventMessage {
				continue // a tap
			}
			switch n := answers(said, evt.ID); {
			case n == 0 && !s.answerBehindMessages(ctx, evt.ID):
				unanswered = append(unanswered, fmt.Sprintf("%s %q", evt.ID, eventBody(s.alice, evt.ID)))
			case n > 1:
				twice = append(twice, fmt.Sprintf("%s %q answered %d times", evt.ID, eventBody(s.alice, evt.ID), n))
			}
		}
		if len(twice) > 0 {
			t.Errorf("commands answered more than once:\n%s", strings.Join(twice, "\n"))
		}
		if len(unanswered) == 0 {
			t.Logf("%d messages from %s, each answered once", len(asked), s.alice.UserID)
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d commands never answered:\n%s", len(unanswered), strings.Join(unanswered, "\n"))
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// answerBehindMessages tells whether an answer to cmd that Jarvis
// recorded as sent is in the room though the homeserver's /messages does
// not list it (see behindMessages).
func (s *scenario) answerBehindMessages(ctx context.Context, cmd id.EventID) bool {
	rows, err := s.st.DB.Query(ctx, `SELECT event_id FROM outbox WHERE sent_at > 0 AND kind = 'message' AND room_id = $1 AND key LIKE $2`,
		s.room.String(), "%"+cmd.String()+"%")
	if err != nil {
		s.t.Fatal(err)
	}
	var recorded []id.EventID
	for rows.Next() {
		var eventID string
		if err := rows.Scan(&eventID); err != nil {
			s.t.Fatal(err)
		}
		recorded = append(recorded, id.EventID(eventID))
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
	rows.Close()
	for _, eventID := range recorded {
		if evt := behindMessages(s.t, s.alice, s.room, eventID, s.nodes[0].UserID); evt != nil && tesths.ReplyTo(evt) == cmd {
			return true
		}
	}
	return false
}

// sentOnce checks the outbox against the rooms it sends to: the dedicated
// room and the person's direct room with Jarvis.
func (s *scenario) sentOnce() {
	t := s.t
	ctx := context.Background()
	j := s.nodes[0].jarvis
	j.sentOnce(t, s.alice, s.room)
	var direct string
	err := s.st.DB.QueryRow(ctx, `SELECT room_id FROM direct_room WHERE user_id = $1`, s.alice.UserID.String()).Scan(&direct)
	if err == nil {
		var n int
		if err := s.st.DB.QueryRow(ctx, `SELECT COUNT(*) FROM outbox WHERE room_id = $1 OR to_user = $2`, direct, s.alice.UserID.String()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			j.sentOnce(t, s.alice, id.RoomID(direct))
		}
	}
	rows, err := s.st.DB.Query(ctx, `SELECT key, room_id, to_user FROM outbox WHERE room_id NOT IN ($1, $2) AND to_user <> $3`,
		s.room.String(), direct, s.alice.UserID.String())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, room, to string
		if err := rows.Scan(&key, &room, &to); err != nil {
			t.Fatal(err)
		}
		t.Errorf("outbox row %q is for a room the scenario does not know (room %q, to %q)", key, room, to)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

// acknowledgedStored checks that what the API acknowledged is stored.
func (s *scenario) acknowledgedStored() {
	t := s.t
	ctx := context.Background()
	exists := func(query string, args ...any) bool {
		var n int
		if err := s.st.DB.QueryRow(ctx, query, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n > 0
	}
	var heartbeats, journal, sets, breakers int
	for _, rec := range s.records {
		for k, ack := range rec.Heartbeats {
			if ack.Count == 0 {
				continue
			}
			heartbeats++
			// The row keeps a cycle's latest heartbeat: the last one
			// acknowledged, or one sent after it whose answer was lost.
			var sentAt int64
			err := s.st.DB.QueryRow(ctx, `SELECT sent_at FROM agent_heartbeat WHERE agent = $1 AND cycle = $2`, k.Agent, k.Cycle).Scan(&sentAt)
			switch {
			case err != nil:
				t.Errorf("acknowledged heartbeat of %s in cycle %s is not stored: %v", k.Agent, k.Cycle, err)
			case time.UnixMilli(sentAt).Before(ack.Last):
				t.Errorf("%s's cycle %s holds a heartbeat sent at %s, older than the last acknowledged (%s)",
					k.Agent, k.Cycle, time.UnixMilli(sentAt).UTC(), ack.Last)
			}
		}
		for _, e := range rec.Journal {
			journal++
			if !exists(`SELECT COUNT(*) FROM agent_journal WHERE agent = $1 AND cycle = $2 AND entry_id = $3`, e.Agent, e.Cycle, e.EntryID) {
				t.Errorf("acknowledged journal entry %s of %s is not stored", e.EntryID, e.Agent)
			}
		}
		for _, set := range rec.CardSets {
			sets++
			var stored string
			if err := s.st.DB.QueryRow(ctx, `SELECT id FROM card_set WHERE idem_key = $1`, set.Key).Scan(&stored); err != nil {
				t.Errorf("acknowledged card set %s (%s) is not stored: %v", set.SetID, set.Key, err)
				continue
			}
			if stored != set.SetID {
				t.Errorf("card set %s was acknowledged as %s, stored as %s", set.Key, set.SetID, stored)
			}
			for _, card := range set.Cards {
				if !exists(`SELECT COUNT(*) FROM card WHERE id = $1 AND set_id = $2`, card, set.SetID) {
					t.Errorf("acknowledged card %s of set %s is not stored", card, set.SetID)
				}
			}
		}
		for _, b := range rec.Breakers {
			breakers++
			if !exists(`SELECT COUNT(*) FROM breaker_event WHERE id = $1 AND agent = $2`, b.Event, b.Agent) {
				t.Errorf("acknowledged halt %s of %s is not stored", b.Event, b.Agent)
			}
		}
	}
	t.Logf("acknowledged and stored: %d agent cycles' heartbeats, %d journal entries, %d card sets, %d breaker halts",
		heartbeats, journal, sets, breakers)
}

// noPartialCardSets checks that every stored card set has all its cards.
func (s *scenario) noPartialCardSets() {
	rows, err := s.st.DB.Query(context.Background(), `
		SELECT s.id, s.card_count, COUNT(c.id) FROM card_set s LEFT JOIN card c ON c.set_id = s.id
		GROUP BY s.id, s.card_count HAVING COUNT(c.id) <> s.card_count`)
	if err != nil {
		s.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var set string
		var want, got int
		if err := rows.Scan(&set, &want, &got); err != nil {
			s.t.Fatal(err)
		}
		s.t.Errorf("card set %s is partial: %d of its %d cards stored", set, got, want)
	}
	if err := rows.Err(); err != nil {
		s.t.Fatal(err)
	}
}

// tripsOnce checks that no trip is in a tripwire's history, a journal or
// a push queue twice.
func (s *scenario) tripsOnce() {
	ctx := context.Background()
	for _, table := range []string{"tripwire_history", "tripwire_journal", "tripwire_push"} {
		rows, err := s.st.DB.Query(ctx, `SELECT tripwire_id, trip, COUNT(*) FROM `+table+`
			GROUP BY tripwire_id, trip HAVING COUNT(*) > 1`)
		if err != nil {
			s.t.Fatal(err)
		}
		for rows.Next() {
			var tw string
			var trip, n int
			if err := rows.Scan(&tw, &trip, &n); err != nil {
				s.t.Fatal(err)
			}
			s.t.Errorf("%s holds trip %d of %s %d times", table, trip, tw, n)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			s.t.Fatal(err)
		}
	}
	var trips int
	if err := s.st.DB.QueryRow(ctx, `SELECT COUNT(*) FROM tripwire_history`).Scan(&trips); err != nil {
		s.t.Fatal(err)
	}
	s.t.Logf("%d trips, each recorded once", trips)
}

// probeStandby starts a standby if none runs and checks that it writes
// nothing while it does not hold the lease. With the workload stopped
// and the outbox empty, it freezes the holder (SIGSTOP) for less than
// the lease has left, so that nothing but the standby can write, and
// pokes the standby: a heartbeat to its own API that would trip
// tripwires, the snapshot moved across the push tripwire's threshold
// (which its evaluator reads every second) and a command in the room.
// Every table of Jarvis's (not the crypto store's) must be unchanged
// when the holder thaws; the holder then handles what was poked.
func (s *scenario) probeStandby() {
	t := s.t
	ctx := context.Background()
	if len(s.nodes) == 1 {
		n := &node{api: cardAPIListen(t)}
		n.jarvis = s.nodes[0].Twin(t, "JARVIS_API_LISTEN="+n.api)
		s.nodes = append(s.nodes, n)
	}
	began := time.Now()
	// Who holds the lease is read again once all is quiet: a fault just
	// before the probe can still be handing it over while it waits.
	holder, standby := s.roles()
	s.waitMute(standby)
	waitOutboxEmpty(t, s.st, waitReply)
	if h, _ := s.roles(); h != holder {
		holder, standby = s.roles()
		s.waitMute(standby)
		waitOutboxEmpty(t, s.st, waitReply)
	}
	quiet := time.Since(began)

	// The holder renews every third of the lease; freeze it right after a
	// renewal, for less than what is left.
	var window time.Duration
	deadline := time.Now().Add(waitReply)
	for {
		rec, err := s.st.Leases().Get(ctx, "default")
		if err != nil {
			t.Fatal(err)
		}
		if !holder.holds(rec) {
			t.Fatalf("the lease went from the holder (pid %d) to %s while the probe waited for quiet", holder.cmd.Process.Pid, rec.Holder)
		}
		window = time.Until(rec.ExpiresAt) - time.Second
		if window >= chaosTTL/2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder did not renew its lease within %s", waitReply)
		}
		time.Sleep(50 * time.Millisecond)
	}
	window = min(window, 2*time.Second)
	holder.Freeze()
	frozen := time.Now()
	defer holder.Thaw()
	before := s.fingerprint()
	s.flipFeed()
	// The heartbeat may wait for a lock the frozen holder keeps: its
	// answer is read after the thaw.
	poked := time.Now().UTC().Truncate(time.Second)
	status := make(chan int, 1)
	go func() { status <- s.pokeHeartbeat(standby.api, poked, waitReply) }()
	if _, err := s.alice.Say(ctx, s.room, "!ping"); err != nil {
		t.Logf("the probe's !ping was not sent: %v", err)
	}
	time.Sleep(time.Until(frozen.Add(window)))
	after := s.fingerprint()
	holder.Thaw()
	code := <-status
	t.Logf("standby probe: quiet after %s, holder frozen %s; the standby's API answered the heartbeat with %d",
		quiet.Round(time.Millisecond), window.Round(time.Millisecond), code)
	// On PostgreSQL every Jarvis stores what agents report: the standby
	// takes the heartbeat, which must then survive what follows (a
	// takeover among it). On SQLite it refuses it.
	intake := s.plan.engine == store.Postgres
	switch {
	case intake && code == http.StatusOK:
		s.records = append(s.records, workload.Record{Heartbeats: map[workload.AgentCycle]workload.Heartbeats{
			{Agent: s.agents[0], Cycle: "probe"}: {Count: 1, Last: poked, MII: 0.5}}})
	case intake:
		t.Errorf("the standby answered an agent's heartbeat %d, want 200: on PostgreSQL every Jarvis takes the agents' reports", code)
	case code != http.StatusServiceUnavailable:
		t.Errorf("the standby answered an agent's heartbeat %d, want 503 on SQLite", code)
	}
	for _, table := range tableNames(before, after) {
		added, removed := rowDiff(before[table], after[table])
		if len(added)+len(removed) == 0 || intake && slices.Contains(heartbeatTables, table) {
			continue
		}
		t.Errorf("the standby wrote to %s while it did not hold the lease: %d rows added or changed, %d gone; e.g.\n%s",
			table, len(added), len(removed), strings.Join(added[:min(3, len(added))], "\n"))
	}
}

// waitMute waits until the standby n has said that it stays mute and
// written its one notice saying so (which it logs just before writing),
// so that the probe's window holds no write of its start-up.
func (s *scenario) waitMute(n *node) {
	s.t.Helper()
	n.waitMute(s.t)
	pattern := fmt.Sprintf("lease:%%/%d/%%", n.cmd.Process.Pid)
	deadline := time.Now().Add(waitReply)
	for {
		var written int
		if err := s.st.DB.QueryRow(context.Background(), `SELECT COUNT(*) FROM outbox WHERE key LIKE $1`, pattern).Scan(&written); err != nil {
			s.t.Fatal(err)
		}
		if written > 0 {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the standby (pid %d) said it stays mute but wrote no notice saying so", n.cmd.Process.Pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitMute waits until the process, since its last start, has said that
// it stays mute: it is past its start-up and knows it is the standby.
func (n *node) waitMute(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitReply)
	for !strings.Contains(n.logs.String()[n.started:], "staying mute") {
		if time.Now().After(deadline) {
			t.Fatalf("the standby never said it stays mute:\n%s", n.logs.String()[n.started:])
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// heartbeatTables are the tables an agent's heartbeat writes, on any
// Jarvis: the heartbeat, the agent's state, its readings as source
// history, and, for an agent whose silence was announced, the incident
// resolved and its all-clear staged for the holder.
var heartbeatTables = []string{"agent_heartbeat", "fleet_agent", "history_source", "source_reading", "incident", "staged_notice"}

// pokeHeartbeat sends an agent's heartbeat of cycle "probe", timestamped
// at, to an API with an MII low enough to trip the seeded tripwires; it
// returns the answer's status, 0 for none.
func (s *scenario) pokeHeartbeat(api string, at time.Time, timeout time.Duration) int {
	agent := s.agents[0]
	body, _ := json.Marshal(map[string]any{"agent": agent, "cycle": "probe", "mii": 0.5, "mode_self_report": "green",
		"timestamp": at.Format(time.RFC3339)})
	req, err := http.NewRequest(http.MethodPost, "http://"+api+"/api/agents/heartbeat", bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+s.tokens.Agents[agent])
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: timeout}).Do(req)
	if err != nil {
		s.t.Logf("the probe's heartbeat got no answer: %v", err)
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// fingerprint reads every row of every table of Jarvis's own (the crypto
// store's crypto_* and mx_* tables left out), one line per row, sorted.
func (s *scenario) fingerprint() map[string][]string {
	t := s.t
	ctx := context.Background()
	list := `SELECT name FROM sqlite_master WHERE type = 'table'`
	if s.plan.engine == store.Postgres {
		list = `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`
	}
	rows, err := s.st.DB.Query(ctx, list)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "crypto_") && !strings.HasPrefix(name, "mx_") && !strings.HasPrefix(name, "sqlite_") {
			tables = append(tables, name)
		}
	}
	rows.Close()
	out := map[string][]string{}
	for _, table := range tables {
		res, err := s.st.DB.RawDB.QueryContext(ctx, "SELECT * FROM "+table)
		if err != nil {
			t.Fatalf("read %s: %v", table, err)
		}
		cols, err := res.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		lines := []string{}
		for res.Next() {
			if err := res.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for i, v := range vals {
				if raw, ok := v.([]byte); ok {
					v = string(raw)
				}
				fmt.Fprintf(&b, "%s=%v ", cols[i], v)
			}
			lines = append(lines, b.String())
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		res.Close()
		slices.Sort(lines)
		out[table] = lines
	}
	return out
}

// tableNames is the sorted union of two fingerprints' tables.
func tableNames(a, b map[string][]string) []string {
	var names []string
	for name := range a {
		names = append(names, name)
	}
	for name := range b {
		if _, ok := a[name]; !ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// rowDiff is the rows only in after and those only in before.
func rowDiff(before, after []string) (added, removed []string) {
	return minus(after, before), minus(before, after)
}

// minus is the rows of a that b does not have, as many times as a has
// them more often.
func minus(a, b []string) []string {
	has := map[string]int{}
	for _, r := range b {
		has[r]++
	}
	var out []string
	for _, r := range a {
		if has[r] > 0 {
			has[r]--
			continue
		}
		out = append(out, r)
	}
	return out
}
