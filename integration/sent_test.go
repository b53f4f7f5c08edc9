package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// sentRow is an outbox row of one room as Jarvis recorded it.
type sentRow struct {
	key, kind, eventID, batchKey string
	sentAt                       int64
}

// outboxRowsQuery reads the outbox rows of one room: those addressed to
// it, and those addressed to a person whose direct room it is.
const outboxRowsQuery = `
	SELECT o.key, o.kind, o.event_id, o.batch_key, o.sent_at
	FROM outbox o LEFT JOIN direct_room d ON o.room_id = '' AND d.user_id = o.to_user
	WHERE o.room_id = $1 OR d.room_id = $1
	ORDER BY o.seq`

// sentOnce proves from the homeserver's side that Jarvis said everything
// once in room. It waits until Jarvis's outbox has nothing waiting for
// the room, reads every event the homeserver holds from Jarvis there
// (through p, a member; encrypted or not, decryptable or not) and checks
// them against the outbox: the event of every sent row is in the room,
// once; every event of Jarvis's in the room is the event of sent rows
// (one row, or the rows of one coalesced batch), of the row's kind. It
// returns the events, oldest first, for counting answers with answers.
func (j *jarvis) sentOnce(t *testing.T, p *tesths.Person, room id.RoomID) []*event.Event {
	t.Helper()
	ctx := context.Background()
	st := j.openStore(t)

	var rows []sentRow
	deadline := time.Now().Add(waitReply)
	for {
		rows = rows[:0]
		waiting := 0
		res, err := st.DB.Query(ctx, outboxRowsQuery, room.String())
		if err != nil {
			t.Fatalf("read the outbox: %v", err)
		}
		for res.Next() {
			var r sentRow
			if err := res.Scan(&r.key, &r.kind, &r.eventID, &r.batchKey, &r.sentAt); err != nil {
				t.Fatal(err)
			}
			if r.sentAt == 0 {
				waiting++
			}
			rows = append(rows, r)
		}
		if err := res.Err(); err != nil {
			t.Fatal(err)
		}
		if waiting == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d notices for %s still waiting in the outbox after %s; the first:\n%s", waiting, room, waitReply,
				waitingNotices(t, st, room))
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(rows) == 0 {
		t.Fatalf("no sent notices for %s in the outbox", room)
	}

	events, err := p.FromServer(ctx, room, j.UserID)
	if err != nil {
		t.Fatal(err)
	}
	inRoom := map[id.EventID]*event.Event{}
	for _, evt := range events {
		if inRoom[evt.ID] != nil {
			t.Errorf("the homeserver returned %s twice", evt.ID)
		}
		inRoom[evt.ID] = evt
	}
	byEvent := map[id.EventID][]sentRow{}
	for _, r := range rows {
		evt := inRoom[id.EventID(r.eventID)]
		if evt == nil && r.eventID != "" {
			if evt = behindMessages(t, p, room, id.EventID(r.eventID), j.UserID); evt != nil {
				inRoom[evt.ID] = evt
				events = append(events, evt)
			}
		}
		switch {
		case evt == nil:
			t.Errorf("outbox row %q (%s) was recorded as sent in %q, which is not in the room", r.key, r.kind, r.eventID)
		case (r.kind == "reaction") != (evt.Type == event.EventReaction):
			t.Errorf("outbox row %q is a %s, delivered as %s", r.key, r.kind, evt.Type.Type)
		}
		if same := byEvent[id.EventID(r.eventID)]; len(same) > 0 && (r.batchKey == "" || r.batchKey != same[0].batchKey) {
			t.Errorf("outbox rows %q and %q share the event %s without being one batch", same[0].key, r.key, r.eventID)
		}
		byEvent[id.EventID(r.eventID)] = append(byEvent[id.EventID(r.eventID)], r)
	}
	for _, evt := range events {
		if len(byEvent[evt.ID]) == 0 {
			t.Errorf("%s %s from Jarvis in the room is no sent outbox row (a duplicate, or a send past the outbox): %q",
				evt.Type.Type, evt.ID, eventBody(p, evt.ID))
		}
	}
	t.Logf("%d notices sent to %s as %d events", len(rows), room, len(events))
	return events
}

// behindMessages asks the homeserver for one event by its ID, for an
// event Jarvis recorded as sent that its /messages does not list. Dendrite
// serves /messages from its sync API, which its room server feeds
// asynchronously; killed, it can leave events the room server made (and
// answered the send with) out of /messages. Such an event is in the room:
// it is returned, and logged; an event the homeserver does not know at all
// gives nil.
func behindMessages(t *testing.T, p *tesths.Person, room id.RoomID, eventID id.EventID, sender id.UserID) *event.Event {
	t.Helper()
	evt, err := p.GetEvent(context.Background(), room, eventID)
	if err != nil || evt.Sender != sender {
		return nil
	}
	evt.RoomID = room
	t.Logf("%s is in the room (the homeserver returns it by its ID) but missing from its /messages", eventID)
	return evt
}

// answers counts the events that reply to cmd.
func answers(events []*event.Event, cmd id.EventID) int {
	n := 0
	for _, evt := range events {
		if tesths.ReplyTo(evt) == cmd {
			n++
		}
	}
	return n
}

// eventBody is the body of an event as the person read it, for failure
// messages; empty if they could not.
func eventBody(p *tesths.Person, eventID id.EventID) string {
	for _, evt := range p.Events(func(evt *event.Event) bool { return evt.ID == eventID && evt.Type == event.EventMessage }) {
		return tesths.Body(evt)
	}
	return ""
}

// noAnswer proves that Jarvis sends the stranger nothing for what they
// say in room: no reply, no notice, no reaction, no invitation to a
// direct room, anywhere the stranger can see. It watches everything the
// stranger's sync brings from Jarvis, in every room they are in or are
// invited to, from before they speak until Jarvis has provably processed
// what they said. First, the stranger's keys reach Jarvis: they say
// hello until Jarvis's crypto store holds the session they speak in;
// everything they say next is in that session, so Jarvis decrypts it on
// arrival and reads it in the room's order. Then an
// allowed person asks !ping in room, which Jarvis reads after the
// stranger's words; once that is answered and nothing waits in the
// outbox, whatever the stranger caused has been sent; and the stranger
// reading the answer to a second !ping shows their sync has caught up
// with everything Jarvis sent before it.
func (j *jarvis) noAnswer(t *testing.T, stranger, allowed *tesths.Person, room id.RoomID, texts ...string) {
	t.Helper()
	ctx := context.Background()
	st := j.openStore(t)
	// What Jarvis said before, the stranger's sync may still bring (a
	// join shows the room's history); it is no answer.
	waitOutboxEmpty(t, st, waitReply)
	earlier, err := allowed.FromServer(ctx, room, j.UserID)
	if err != nil {
		t.Fatal(err)
	}
	known := map[id.EventID]bool{}
	for _, evt := range earlier {
		known[evt.ID] = true
	}
	all := func(*event.Event) bool { return true }
	before := len(stranger.Events(all))

	// A client's first session in a room may be replaced once it learns
	// the room's devices; the stranger says hello until Jarvis holds the
	// session they speak in and a next hello keeps it.
	held := func(session id.SessionID) {
		t.Helper()
		deadline := time.Now().Add(waitReply)
		for {
			var n int
			err := st.DB.QueryRow(ctx, `SELECT COUNT(*) FROM crypto_megolm_inbound_session WHERE session_id = $1`, session).Scan(&n)
			if err == nil && n > 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("Jarvis never received the stranger's session %s (%v)", session, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	session := sessionOf(t, stranger, room, "hello")
	for i := 0; ; i++ {
		held(session)
		next := sessionOf(t, stranger, room, "hello again")
		if next == session {
			break
		}
		if i == 5 {
			t.Fatalf("the stranger's session keeps changing: %s after %s", next, session)
		}
		session = next
	}
	for _, text := range texts {
		if got := sessionOf(t, stranger, room, text); got != session {
			t.Fatalf("the stranger said %q in session %s, not in %s that Jarvis holds", text, got, session)
		}
	}

	known[j.ask(t, allowed, room, "!ping").ID] = true
	waitOutboxEmpty(t, st, waitReply)
	last := j.ask(t, allowed, room, "!ping")
	known[last.ID] = true
	if _, err := stranger.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return evt.ID == last.ID && tesths.Encrypted(evt)
	}); err != nil {
		t.Fatalf("the stranger did not read Jarvis's answer to someone else: %v", err)
	}
	var got []string
	for _, evt := range stranger.Events(all)[before:] {
		if evt.Sender != j.UserID || known[evt.ID] {
			continue
		}
		if evt.ID != "" {
			known[evt.ID] = true // an encrypted event and its decryption are one
		}
		switch src := evt.Mautrix.EventSource; {
		case src&event.SourceInvite != 0, evt.Type == event.StateMember && evt.GetStateKey() == stranger.UserID.String():
		case src&event.SourceTimeline != 0 && evt.StateKey == nil:
		default:
			continue
		}
		got = append(got, evt.Type.Type+" "+evt.ID.String()+" in "+evt.RoomID.String()+": "+eventBody(stranger, evt.ID))
	}
	if len(got) > 0 {
		t.Errorf("Jarvis sent the stranger %d events:\n%s", len(got), strings.Join(got, "\n"))
	}
}

// sessionOf has p say text in room and returns the megolm session it
// went out in.
func sessionOf(t *testing.T, p *tesths.Person, room id.RoomID, text string) id.SessionID {
	t.Helper()
	ctx := context.Background()
	sent, err := p.Say(ctx, room, text)
	if err != nil {
		t.Fatal(err)
	}
	evt, err := p.WaitFor(ctx, waitReply, func(evt *event.Event) bool { return evt.ID == sent && evt.Type == event.EventEncrypted })
	if err != nil {
		t.Fatalf("%s's %q did not go out encrypted: %v", p.UserID, text, err)
	}
	_ = evt.Content.ParseRaw(evt.Type)
	return evt.Content.AsEncrypted().SessionID
}

// whereIsTheReply says how far the answer to cmd got, for a test that
// waited for it in vain: whether the homeserver holds the command, whether
// Jarvis's outbox holds a reply to it and sent it, and whether the
// homeserver holds that event and p could decrypt it. A reply the person
// could not decrypt is the homeserver's and the person's to explain, not
// the sender's.
func (j *jarvis) whereIsTheReply(t *testing.T, p *tesths.Person, room id.RoomID, cmd id.EventID) string {
	t.Helper()
	ctx := context.Background()
	var b strings.Builder
	if evt, err := p.GetEvent(ctx, room, cmd); err != nil {
		fmt.Fprintf(&b, "the homeserver does not return the command %s: %v\n", cmd, err)
	} else {
		fmt.Fprintf(&b, "the homeserver holds the command %s (%s)\n", cmd, evt.Type.Type)
	}
	if listed, err := p.FromServer(ctx, room, p.UserID); err != nil {
		fmt.Fprintf(&b, "could not read the room's /messages: %v\n", err)
	} else {
		fmt.Fprintf(&b, "the room's /messages lists the command: %t\n",
			slices.ContainsFunc(listed, func(e *event.Event) bool { return e.ID == cmd }))
	}
	fmt.Fprintf(&b, "%s's own sync brought the command: %t\n", p.UserID,
		len(p.Events(func(e *event.Event) bool { return e.ID == cmd })) > 0)
	if strings.Contains(j.logs.String(), string(cmd)) {
		fmt.Fprintf(&b, "Jarvis's log names the command\n")
	}
	st := j.openStore(t)
	var handled int
	if err := st.DB.QueryRow(ctx, `SELECT COUNT(*) FROM handled_event WHERE event_id = $1`, string(cmd)).Scan(&handled); err != nil {
		fmt.Fprintf(&b, "could not read the handled events: %v\n", err)
	}
	fmt.Fprintf(&b, "Jarvis marked the command handled: %t\n", handled > 0)
	res, err := st.DB.Query(ctx, `SELECT key, event_id, sent_at, attempts, last_error FROM outbox WHERE key LIKE $1`, "reply:"+string(cmd)+":%")
	if err != nil {
		fmt.Fprintf(&b, "could not read the outbox: %v\n", err)
		return b.String()
	}
	defer res.Close()
	rows := 0
	for res.Next() {
		rows++
		var key, eventID, lastErr string
		var sentAt int64
		var attempts int
		if err := res.Scan(&key, &eventID, &sentAt, &attempts, &lastErr); err != nil {
			fmt.Fprintf(&b, "could not read the outbox: %v\n", err)
			return b.String()
		}
		fmt.Fprintf(&b, "outbox row %q: event %q, sent at %d, %d attempts, last error %q\n", key, eventID, sentAt, attempts, lastErr)
		if eventID == "" {
			continue
		}
		evt, err := p.GetEvent(ctx, room, id.EventID(eventID))
		if err != nil {
			fmt.Fprintf(&b, "  the homeserver does not return %s: %v\n", eventID, err)
			continue
		}
		fmt.Fprintf(&b, "  the homeserver holds %s (%s)\n", eventID, evt.Type.Type)
		seen := p.Events(func(e *event.Event) bool { return e.ID == id.EventID(eventID) })
		decrypted := slices.ContainsFunc(seen, tesths.Encrypted)
		fmt.Fprintf(&b, "  %s saw it %d times, decrypted: %t\n", p.UserID, len(seen), decrypted)
	}
	if rows == 0 {
		b.WriteString("no reply to it in Jarvis's outbox: Jarvis never handled the command\n")
	}
	return b.String()
}

// waitingNotices describes the first notices waiting for room, with what
// they relate to, for a test that found them stuck.
func waitingNotices(t *testing.T, st *store.Store, room id.RoomID) string {
	t.Helper()
	res, err := st.DB.Query(context.Background(), `
		SELECT o.key, o.kind, o.lane, o.attempts, o.attempt_started, o.last_error, o.target_key,
			COALESCE(t.event_id, '(none)'), COALESCE(t.sent_at, -1), COALESCE(t.failed_at, -1)
		FROM outbox o LEFT JOIN outbox t ON t.key = o.target_key
		WHERE o.room_id = $1 AND o.sent_at = 0 ORDER BY o.lane, o.seq LIMIT 10`, room.String())
	if err != nil {
		return "read the outbox: " + err.Error()
	}
	defer res.Close()
	var b strings.Builder
	for res.Next() {
		var key, kind, lastErr, target, targetEvent string
		var lane, attempts int
		var started, targetSent, targetFailed int64
		if err := res.Scan(&key, &kind, &lane, &attempts, &started, &lastErr, &target, &targetEvent, &targetSent, &targetFailed); err != nil {
			return "read the outbox: " + err.Error()
		}
		fmt.Fprintf(&b, "%s (%s, lane %d, %d attempts, started %d, last error %q) target %q: event %q, sent %d, failed %d\n",
			key, kind, lane, attempts, started, lastErr, target, targetEvent, targetSent, targetFailed)
	}
	return b.String()
}
