package bot

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/bridge"
)

// TestSyncRetriesWhatItCouldNotTakeIn: when Jarvis cannot ask the
// homeserver who may do what in the room of a message (the homeserver went
// away after the sync response came), the response fails whole and its
// token is not stored, so the next sync brings the message again; before,
// the message was dropped and the command never answered.
func TestSyncRetriesWhatItCouldNotTakeIn(t *testing.T) {
	ctx := context.Background()
	b, _, _, _ := newTestSender(t)
	st := openTestStore(t)
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	cli, err := mautrix.NewClient(gone.URL, "@jarvis:example.org", "token")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := bridge.NewPolicy([]string{"@*:example.org"}, nil, bridge.Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Client, b.cfg.UserID, b.deps.Policy, b.deps.State = cli, "@jarvis:example.org", policy, st
	b.joined = map[id.RoomID]int64{}
	s := &syncer{DefaultSyncer: mautrix.NewDefaultSyncer(), bot: b}
	s.OnEventType(event.EventMessage, b.onMessage)

	room := id.RoomID(testRoom)
	join := syncEvent(t, event.StateMember, "@jarvis:example.org", 1000, map[string]any{"membership": "join"})
	join.StateKey = new(string)
	*join.StateKey = "@jarvis:example.org"
	ping := syncEvent(t, event.EventMessage, "@alice:example.org", 2000, map[string]any{"msgtype": "m.text", "body": "!ping"})
	res := &mautrix.RespSync{NextBatch: "s2"}
	res.Rooms.Join = map[id.RoomID]*mautrix.SyncJoinedRoom{room: {Timeline: mautrix.SyncTimeline{
		SyncEventsList: mautrix.SyncEventsList{Events: []*event.Event{join, ping}}}}}

	if err := s.ProcessResponse(ctx, res, "s1"); err == nil {
		t.Fatal("the response was taken in although the message's room could not be read")
	}
	if token, err := b.deps.State.State(ctx, stateNextBatch); err != nil || token != "" {
		t.Errorf("sync token %q (%v) stored, want none: the message would not come again", token, err)
	}
}

// syncEvent is an event as a sync response brings it, its content still
// to be parsed.
func syncEvent(t *testing.T, typ event.Type, sender id.UserID, ts int64, content map[string]any) *event.Event {
	t.Helper()
	raw, err := json.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	return &event.Event{ID: id.EventID("$" + typ.Type), Type: typ, Sender: sender, Timestamp: ts,
		Content: event.Content{VeryRaw: raw}}
}

// TestOwnEncryptedEchoesAreNotDecrypted: what Jarvis said itself, in an
// encrypted room, leaves the sync response before the crypto helper sees
// it; other people's encrypted messages, and Jarvis's own plaintext ones,
// stay.
func TestOwnEncryptedEchoesAreNotDecrypted(t *testing.T) {
	self := id.UserID("@jarvis:example.org")
	own := syncEvent(t, event.EventEncrypted, self, 1000, map[string]any{"algorithm": "m.megolm.v1.aes-sha2"})
	theirs := syncEvent(t, event.EventEncrypted, "@alice:example.org", 2000, map[string]any{"algorithm": "m.megolm.v1.aes-sha2"})
	plain := syncEvent(t, event.EventMessage, self, 3000, map[string]any{"msgtype": "m.text", "body": "pong"})
	res := &mautrix.RespSync{}
	res.Rooms.Join = map[id.RoomID]*mautrix.SyncJoinedRoom{testRoom: {Timeline: mautrix.SyncTimeline{
		SyncEventsList: mautrix.SyncEventsList{Events: []*event.Event{own, theirs, plain}}}}}
	dropFromTimelines(res, ownEncrypted(self))
	got := res.Rooms.Join[testRoom].Timeline.Events
	if len(got) != 2 || got[0] != theirs || got[1] != plain {
		t.Errorf("timeline after = %v, want alice's encrypted message and Jarvis's plaintext one", got)
	}
}

// TestSyncTokenWaitsWhileNothingHappens: the token of a response that
// brings nothing but Jarvis's own messages is not stored, until a minute
// has passed since the last one stored; any other event, a state event of
// Jarvis's own included, stores it at once. Read again after a restart,
// the responses it skipped change nothing.
func TestSyncTokenWaitsWhileNothingHappens(t *testing.T) {
	ctx := context.Background()
	b, _, _, clock := newTestSender(t)
	st := openTestStore(t)
	self := id.UserID("@jarvis:example.org")
	b.cfg.UserID, b.deps.State = string(self), st
	b.joined = map[id.RoomID]int64{testRoom: 0}
	s := &syncer{DefaultSyncer: mautrix.NewDefaultSyncer(), bot: b}

	own := syncEvent(t, event.EventMessage, self, 1000, map[string]any{"msgtype": "m.text", "body": "pong"})
	ownName := syncEvent(t, event.StateMember, self, 1000, map[string]any{"membership": "join", "displayname": "J"})
	ownName.StateKey = new(string)
	*ownName.StateKey = string(self)
	inRoom := func(evts ...*event.Event) *mautrix.RespSync {
		res := &mautrix.RespSync{}
		res.Rooms.Join = map[id.RoomID]*mautrix.SyncJoinedRoom{testRoom: {Timeline: mautrix.SyncTimeline{
			SyncEventsList: mautrix.SyncEventsList{Events: evts}}}}
		return res
	}
	toDevice := &mautrix.RespSync{ToDevice: mautrix.SyncEventsList{Events: []*event.Event{{Type: event.ToDeviceRoomKey}}}}
	typing := inRoom()
	typing.Rooms.Join[testRoom].Ephemeral.Events = []*event.Event{{Type: event.EphemeralEventTyping}}

	for _, step := range []struct {
		what  string
		res   *mautrix.RespSync
		wait  time.Duration
		saved bool
	}{
		{"the first response", &mautrix.RespSync{}, 0, true},
		{"nothing", &mautrix.RespSync{}, 0, false},
		{"Jarvis's own message", inRoom(own), 0, false},
		{"Jarvis's own state event", inRoom(own, ownName), 0, true},
		{"Jarvis's own message again", inRoom(own), 59 * time.Second, false},
		{"an event for its devices", toDevice, 0, true},
		{"someone typing", typing, 0, true},
		{"nothing, a minute after the last stored", &mautrix.RespSync{}, time.Minute, true},
	} {
		before, err := st.State(ctx, stateNextBatch)
		if err != nil {
			t.Fatal(err)
		}
		since := before
		step.res.NextBatch = before + "+"
		clock.Advance(step.wait)
		if err := s.ProcessResponse(ctx, step.res, since); err != nil {
			t.Fatalf("%s: %v", step.what, err)
		}
		after, err := st.State(ctx, stateNextBatch)
		if err != nil {
			t.Fatal(err)
		}
		if saved := after != before; saved != step.saved {
			t.Errorf("%s: token stored %v (%q → %q), want %v", step.what, saved, before, after, step.saved)
		}
	}
}
