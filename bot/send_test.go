package bot

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/store"
)

const testRoom = "!room:example.org"

// fakeMatrix is the homeserver as the sender sees it: it records every
// send, answers the first sends with the errors queued in fail, and
// serves history for the look-up of an earlier attempt.
type fakeMatrix struct {
	uploads [][]byte
	sends   []fakeSend
	fail    []error
	history []*event.Event
	lookups int
	// lookFail fails the next look-ups in the room, one error each.
	lookFail []error
}

type fakeSend struct {
	room    id.RoomID
	txnID   string
	content *event.Content
}

func (f *fakeMatrix) SendMessageEvent(_ context.Context, roomID id.RoomID, _ event.Type, contentJSON any, extra ...mautrix.ReqSendEvent) (*mautrix.RespSendEvent, error) {
	if len(f.fail) > 0 {
		err := f.fail[0]
		f.fail = f.fail[1:]
		return nil, err
	}
	f.sends = append(f.sends, fakeSend{room: roomID, txnID: extra[0].TransactionID, content: contentJSON.(*event.Content)})
	return &mautrix.RespSendEvent{EventID: id.EventID(fmt.Sprintf("$sent%d", len(f.sends)))}, nil
}

func (f *fakeMatrix) Messages(_ context.Context, _ id.RoomID, _, _ string, _ mautrix.Direction, _ *mautrix.FilterPart, _ int) (*mautrix.RespMessages, error) {
	f.lookups++
	if len(f.lookFail) > 0 {
		err := f.lookFail[0]
		f.lookFail = f.lookFail[1:]
		return nil, err
	}
	return &mautrix.RespMessages{Chunk: f.history}, nil
}

func (f *fakeMatrix) UploadBytes(_ context.Context, data []byte, _ string) (*mautrix.RespMediaUpload, error) {
	f.uploads = append(f.uploads, data)
	return &mautrix.RespMediaUpload{ContentURI: id.ContentURI{Homeserver: "example.org", FileID: fmt.Sprintf("media%d", len(f.uploads))}}, nil
}

// openTestStore opens a store on a fresh SQLite file, closed when t ends.
func openTestStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Config{Type: store.SQLite, URI: filepath.Join(t.TempDir(), "jarvis.db")}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newTestSender returns a bot whose sender talks to a fake homeserver and
// a real outbox in a SQLite file, on a clock that moves only when told.
func newTestSender(t *testing.T) (*Bot, *fakeMatrix, *store.Outbox, *coretest.Clock) {
	t.Helper()
	st := openTestStore(t)
	cli, err := mautrix.NewClient("https://matrix.example.org", "@jarvis:example.org", "")
	if err != nil {
		t.Fatal(err)
	}
	fake := &fakeMatrix{}
	clock := coretest.NewClock(time.UnixMilli(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixMilli()))
	b := &Bot{deps: Deps{Outbox: st.Outbox(), Clock: clock}, log: zerolog.Nop(), Client: cli, matrix: fake, rooms: map[id.RoomID]bridge.Room{}}
	return b, fake, st.Outbox(), clock
}

func enqueue(t *testing.T, outbox *store.Outbox, notices ...core.Notice) {
	t.Helper()
	for _, n := range notices {
		if err := outbox.Enqueue(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
}

func message(key, body string) core.Notice {
	return core.Notice{Key: key, RoomID: testRoom, Kind: core.NoticeMessage, Body: body, Coalesce: true}
}

// sentAs checks that every key was recorded as delivered by eventID.
func sentAs(t *testing.T, outbox *store.Outbox, eventID string, keys ...string) {
	t.Helper()
	for _, key := range keys {
		e, err := outbox.Get(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if e.EventID != eventID || e.SentAt.IsZero() {
			t.Errorf("notice %s: event %q, sent at %v; want sent as %s", key, e.EventID, e.SentAt, eventID)
		}
	}
}

// TestSenderImage: an image notice is drawn when it is sent, uploaded, and
// sent as m.image with its size and description in its target's thread; a
// retry after a failed send draws and uploads it again under the same
// transaction id.
func TestSenderImage(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, _ := newTestSender(t)
	b.rooms[testRoom] = bridge.Room{}
	drawn := 0
	b.deps.Images = func(_ context.Context, body string) (Image, error) {
		drawn++
		return Image{PNG: []byte("png of " + body), Width: 800, Height: 400, Description: "Chart of " + body}, nil
	}
	enqueue(t, outbox, core.Notice{Key: "trip", RoomID: testRoom, Kind: core.NoticeMessage, Body: "tripped"},
		core.Notice{Key: "trip:chart", RoomID: testRoom, Kind: core.NoticeImage, Body: "gi", Target: "trip", Thread: true})
	b.sendDue(ctx)
	fake.fail = []error{errors.New("connection reset")}
	b.sendDue(ctx)
	if len(fake.sends) != 1 {
		t.Fatalf("%d events sent, want the trip notice alone before the retry", len(fake.sends))
	}
	// The reset's outcome is unknown: the image goes out again once two
	// looks in the room, outcomeSettle apart, have missed it.
	b.deps.Clock.(*coretest.Clock).Advance(time.Minute)
	b.sendDue(ctx)
	b.deps.Clock.(*coretest.Clock).Advance(outcomeSettle)
	b.sendDue(ctx)
	if len(fake.sends) != 2 || drawn != 2 || len(fake.uploads) != 2 {
		t.Fatalf("%d events sent, %d drawn, %d uploads; want the image sent on the retry, drawn and uploaded twice", len(fake.sends), drawn, len(fake.uploads))
	}
	sent := fake.sends[1]
	img := sent.content.Parsed.(*event.MessageEventContent)
	if img.MsgType != event.MsgImage || img.Body != "Chart of gi" || img.URL != "mxc://example.org/media2" || img.File != nil ||
		img.Info.MimeType != "image/png" || img.Info.Size != len("png of gi") || img.Info.Width != 800 || img.Info.Height != 400 {
		t.Errorf("image content = %+v (info %+v)", img, img.Info)
	}
	if img.RelatesTo == nil || img.RelatesTo.Type != event.RelThread || img.RelatesTo.EventID != "$sent1" || sent.txnID != txnID("trip:chart") {
		t.Errorf("image relates to %+v with txn %s, want the thread of $sent1 and txn %s", img.RelatesTo, sent.txnID, txnID("trip:chart"))
	}
	sentAs(t, outbox, "$sent2", "trip:chart")
}

// TestSenderImageWordsOnly: in a room whose bridge drops images (a
// network configured with no_images), a chart goes as its words in the
// trip notice's thread, and nothing is uploaded.
func TestSenderImageWordsOnly(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, _ := newTestSender(t)
	policy, err := bridge.NewPolicy(nil, nil, bridge.Config{Networks: []bridge.Network{
		{Name: "telegram", Users: "@telegram_*", NoImages: true}, {Name: "signal", Users: "@signal_*"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.deps.Policy = policy
	b.rooms[testRoom] = bridge.Room{Network: "telegram", NoImages: policy.NoImages("telegram")}
	b.deps.Images = func(_ context.Context, body string) (Image, error) {
		return Image{PNG: []byte("png"), Width: 800, Height: 400, Description: "Chart of " + body + " from 09:00 to 09:00 UTC. The red line marks the threshold 0.7."}, nil
	}
	enqueue(t, outbox, core.Notice{Key: "trip", RoomID: testRoom, Kind: core.NoticeMessage, Body: "tripped"},
		core.Notice{Key: "trip:chart", RoomID: testRoom, Kind: core.NoticeImage, Body: "integrity.gi", Target: "trip", Thread: true})
	b.sendDue(ctx)
	b.sendDue(ctx)
	if len(fake.sends) != 2 || len(fake.uploads) != 0 {
		t.Fatalf("%d events sent, %d uploads; want the notice and the chart's words, nothing uploaded", len(fake.sends), len(fake.uploads))
	}
	words := fake.sends[1].content.Parsed.(*event.MessageEventContent)
	want := "Chart of integrity.gi from 09:00 to 09:00 UTC. The red line marks the threshold 0.7."
	if words.MsgType == event.MsgImage || words.Body != want || words.URL != "" {
		t.Errorf("the chart went as %s %q (url %q), want the words %q", words.MsgType, words.Body, words.URL, want)
	}
	if words.RelatesTo == nil || words.RelatesTo.Type != event.RelThread || words.RelatesTo.EventID != "$sent1" {
		t.Errorf("the words relate to %+v, want the thread of $sent1", words.RelatesTo)
	}
	if policy.NoImages("signal") || policy.NoImages("matrix") {
		t.Error("a network not configured with no_images drops images")
	}
}

// TestSenderLooksAgainForWhatWaitedBehind: a notice that waited in its
// room's lane behind one that went out is sent in the next look, at once;
// once everything read went out, the sender waits to be woken.
func TestSenderLooksAgainForWhatWaitedBehind(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, _ := newTestSender(t)
	enqueue(t, outbox, core.Notice{Key: "question", RoomID: testRoom, Kind: core.NoticeMessage, Body: "Approve?"},
		core.Notice{Key: "question:more", RoomID: testRoom, Kind: core.NoticeMessage, Body: "details", Target: "question", Thread: true})
	if wait := b.sendDue(ctx); wait != 0 || len(fake.sends) != 1 {
		t.Errorf("after the first of two notices the sender waits %v with %d sent, want to look again at once with 1", wait, len(fake.sends))
	}
	if wait := b.sendDue(ctx); wait != idleWait || len(fake.sends) != 2 {
		t.Errorf("after the last notice the sender waits %v with %d sent, want %v with 2", wait, len(fake.sends), idleWait)
	}
}

// TestSenderCoalescedBatch: three coalescible messages waiting for one
// room go out as one Matrix event that carries all three texts, under the
// batch's transaction ID, and every one of them is recorded as sent by it.
func TestSenderCoalescedBatch(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, _ := newTestSender(t)
	enqueue(t, outbox, message("n1", "first"), message("n2", "second"), message("n3", "third"))

	if wait := b.sendDue(ctx); wait != idleWait {
		t.Errorf("after delivering all it read the sender waits %v, want %v or a wake-up", wait, idleWait)
	}
	if len(fake.sends) != 1 {
		t.Fatalf("%d events sent for three coalescible messages, want 1", len(fake.sends))
	}
	sent := fake.sends[0]
	body := sent.content.Parsed.(*event.MessageEventContent).Body
	for _, want := range []string{"first", "second", "third"} {
		if !strings.Contains(body, want) {
			t.Errorf("the coalesced event lacks %q:\n%s", want, body)
		}
	}
	if sent.room != testRoom || sent.txnID != txnID("batch:n1") || sent.content.Raw[noticeField] != "batch:n1" {
		t.Errorf("sent to %s with txn %s and key %v; want %s, %s, batch:n1", sent.room, sent.txnID, sent.content.Raw[noticeField], testRoom, txnID("batch:n1"))
	}
	sentAs(t, outbox, "$sent1", "n1", "n2", "n3")

	if wait := b.sendDue(ctx); wait != idleWait || len(fake.sends) != 1 {
		t.Errorf("with nothing waiting: %d events sent, wait %v; want 1 and %v", len(fake.sends), wait, idleWait)
	}
}

// TestSenderRateLimited: a 429 puts the next attempt exactly where the
// homeserver's retry_after_ms says, not a moment earlier, and the retry
// sends the very same batch once.
func TestSenderRateLimited(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, clock := newTestSender(t)
	fake.fail = []error{mautrix.RespError{ErrCode: "M_LIMIT_EXCEEDED", Err: "Too many requests", StatusCode: 429,
		ExtraData: map[string]any{"retry_after_ms": float64(2500)}}}
	enqueue(t, outbox, message("n1", "first"), message("n2", "second"))
	asked := clock.Now().Add(2500 * time.Millisecond)

	if wait := b.sendDue(ctx); wait != 2500*time.Millisecond {
		t.Errorf("after a 429 with retry_after_ms 2500 the sender waits %v", wait)
	}
	for _, key := range []string{"n1", "n2"} {
		e, err := outbox.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		if !e.NextAttempt.Equal(asked) || e.BatchKey != "batch:n1" || !strings.Contains(e.LastError, "M_LIMIT_EXCEEDED") {
			t.Errorf("notice %s: next attempt %v, batch %q, error %q; want %v, batch:n1, M_LIMIT_EXCEEDED", key, e.NextAttempt, e.BatchKey, e.LastError, asked)
		}
	}

	clock.Advance(2499 * time.Millisecond)
	if wait := b.sendDue(ctx); len(fake.sends) != 0 || wait != time.Millisecond {
		t.Fatalf("1 ms before the time the homeserver asked: %d sends, wait %v; want none and 1ms", len(fake.sends), wait)
	}
	clock.Advance(time.Millisecond)
	b.sendDue(ctx)
	if len(fake.sends) != 1 || fake.sends[0].txnID != txnID("batch:n1") {
		t.Fatalf("at the time asked: sends %+v, want the batch once", fake.sends)
	}
	sentAs(t, outbox, "$sent1", "n1", "n2")
}

// TestSenderUnknownOutcome: a notice whose send was started but never
// recorded (Jarvis died mid-request, or the homeserver as it took it) is
// looked for in the room first; found, it is recorded as delivered by
// that event and not sent again. Not found, it is looked for again
// outcomeSettle later, as a homeserver may list an event it took a while
// later, and sent once only if that look misses it too.
func TestSenderUnknownOutcome(t *testing.T) {
	other := &event.Event{ID: "$other", Type: event.EventMessage, Content: event.Content{Raw: map[string]any{noticeField: "n0"}}}
	earlier := &event.Event{ID: "$earlier", Type: event.EventMessage, Content: event.Content{Raw: map[string]any{noticeField: "n1"}}}
	tests := []struct {
		name string
		// history is what the room shows at the first look, late what it
		// shows only after it.
		history, late []*event.Event
		wantLookups   int
		wantSends     int
		wantEvent     string
	}{
		{name: "delivered before", history: []*event.Event{other, earlier}, wantLookups: 1, wantEvent: "$earlier"},
		{name: "listed late", history: []*event.Event{other}, late: []*event.Event{earlier}, wantLookups: 2, wantEvent: "$earlier"},
		{name: "never delivered", history: []*event.Event{other}, wantLookups: 2, wantSends: 1, wantEvent: "$sent1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			b, fake, outbox, clock := newTestSender(t)
			fake.history = tt.history
			enqueue(t, outbox, core.Notice{Key: "n1", RoomID: testRoom, Kind: core.NoticeMessage, Body: "blocked card"})
			if err := outbox.MarkAttempt(ctx, []string{"n1"}, clock.Now()); err != nil {
				t.Fatal(err)
			}

			b.sendDue(ctx)
			if len(fake.sends) != 0 {
				t.Fatalf("%d sends at the first look, want none", len(fake.sends))
			}
			fake.history = append(fake.history, tt.late...)
			clock.Advance(outcomeSettle - time.Millisecond)
			b.sendDue(ctx)
			if fake.lookups != 1 || len(fake.sends) != 0 {
				t.Fatalf("before the second look is due: %d look-ups, %d sends; want 1 and none", fake.lookups, len(fake.sends))
			}
			clock.Advance(time.Millisecond)
			b.sendDue(ctx)
			if fake.lookups != tt.wantLookups || len(fake.sends) != tt.wantSends {
				t.Errorf("%d look-ups and %d sends, want %d and %d", fake.lookups, len(fake.sends), tt.wantLookups, tt.wantSends)
			}
			sentAs(t, outbox, tt.wantEvent, "n1")
			b.sendDue(ctx)
			if len(fake.sends) != tt.wantSends {
				t.Errorf("%d sends after another pass, want %d", len(fake.sends), tt.wantSends)
			}
		})
	}
}

// TestSenderRefusedThenUnreachable: a send the homeserver refused with
// an answer made no event, so once the room can be read again the notice
// goes out at the first look, even when looks failed meanwhile (the
// homeserver going down after its refusal).
func TestSenderRefusedThenUnreachable(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, clock := newTestSender(t)
	fake.fail = []error{mautrix.RespError{ErrCode: "M_UNKNOWN", Err: "shutting down", StatusCode: 500}}
	fake.lookFail = []error{errors.New("connection refused"), errors.New("connection refused")}
	enqueue(t, outbox, message("n1", "pong"))
	b.sendDue(ctx) // refused with an answer
	for range 2 {  // the homeserver is gone: the looks fail
		clock.Advance(time.Minute)
		b.sendDue(ctx)
	}
	if len(fake.sends) != 0 || fake.lookups != 2 {
		t.Fatalf("while the room could not be read: %d sends, %d look-ups; want none and 2", len(fake.sends), fake.lookups)
	}
	clock.Advance(time.Minute)
	b.sendDue(ctx)
	if len(fake.sends) != 1 || fake.lookups != 3 {
		t.Errorf("once the room can be read: %d sends after %d look-ups, want 1 after 3 (no second look %s later)", len(fake.sends), fake.lookups, outcomeSettle)
	}
	sentAs(t, outbox, "$sent1", "n1")
}

// TestSenderBackOff: a send that fails without a 429 backs off by the
// outbox's retry delay and keeps the notice waiting.
func TestSenderBackOff(t *testing.T) {
	ctx := context.Background()
	b, fake, outbox, clock := newTestSender(t)
	// The homeserver answered: it made no event, so the retry needs no
	// second look (TestSenderUnknownOutcome has the send that got none).
	fake.fail = []error{mautrix.RespError{ErrCode: "M_UNKNOWN", Err: "bad gateway", StatusCode: 502}}
	enqueue(t, outbox, message("n1", "first"))

	if wait := b.sendDue(ctx); wait != core.RetryDelay(1) {
		t.Errorf("after a failed send the sender waits %v, want %v", wait, core.RetryDelay(1))
	}
	e, err := outbox.Get(ctx, "n1")
	if err != nil {
		t.Fatal(err)
	}
	if e.Attempts != 1 || e.EventID != "" || !e.NextAttempt.Equal(clock.Now().Add(core.RetryDelay(1))) {
		t.Errorf("after a failed send: %d attempts, event %q, next %v", e.Attempts, e.EventID, e.NextAttempt)
	}
	clock.Advance(core.RetryDelay(1))
	b.sendDue(ctx)
	if len(fake.sends) != 1 {
		t.Fatalf("%d sends after the back-off, want 1", len(fake.sends))
	}
	sentAs(t, outbox, "$sent1", "n1")
}

// TestSenderGivesUp: a notice the homeserver refuses core.MaxRefusals
// times in a row (a room Jarvis may not post to, a person who does not
// exist) is given up on: kept with the refusal, never tried again, and the
// notices behind it in its room go; its edit goes as a message of its own.
// Rate limiting, server errors and Jarvis's own token trouble are retried
// however long they last.
func TestSenderGivesUp(t *testing.T) {
	forbidden := mautrix.RespError{ErrCode: "M_FORBIDDEN", Err: "sender not in room", StatusCode: 403}
	tests := []struct {
		name      string
		err       error
		wantGiven bool
	}{
		{"forbidden", forbidden, true},
		{"no such user", fmt.Errorf("no direct room with @ghost:example.org: %w",
			mautrix.RespError{ErrCode: "M_NOT_FOUND", Err: "The user does not exist", StatusCode: 404}), true},
		{"no such room", mautrix.RespError{ErrCode: "M_UNSUPPORTED_ROOM_VERSION", Err: "missing room info", StatusCode: 400}, true},
		{"rate limited", mautrix.RespError{ErrCode: "M_LIMIT_EXCEEDED", Err: "Too many requests", StatusCode: 429}, false},
		{"bad gateway", mautrix.RespError{ErrCode: "M_UNKNOWN", Err: "bad gateway", StatusCode: 502}, false},
		{"token gone", mautrix.RespError{ErrCode: "M_UNKNOWN_TOKEN", Err: "Unknown token", StatusCode: 401}, false},
		{"cut off", errors.New("read: connection reset by peer"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			b, fake, outbox, clock := newTestSender(t)
			for range 2 * core.MaxRefusals {
				fake.fail = append(fake.fail, tt.err)
			}
			enqueue(t, outbox,
				core.Notice{Key: "lost", RoomID: testRoom, Kind: core.NoticeMessage, Body: "to nobody"},
				core.Notice{Key: "edit", RoomID: testRoom, Kind: core.NoticeEdit, Body: "to nobody, edited", Target: "lost"},
				core.Notice{Key: "behind", RoomID: testRoom, Kind: core.NoticeMessage, Body: "next in the room"})
			for range core.MaxRefusals - 1 {
				b.sendDue(ctx)
				clock.Advance(5 * time.Minute)
			}
			if e, err := outbox.Get(ctx, "lost"); err != nil || !e.FailedAt.IsZero() {
				t.Fatalf("after %d refusals: %+v, %v; want it still tried", core.MaxRefusals-1, e, err)
			}
			b.sendDue(ctx)
			e, err := outbox.Get(ctx, "lost")
			if err != nil {
				t.Fatal(err)
			}
			if given := !e.FailedAt.IsZero(); given != tt.wantGiven {
				t.Fatalf("after %d failures: given up %v (error %q), want %v", core.MaxRefusals, given, e.LastError, tt.wantGiven)
			}
			n, last, err := outbox.GivenUp(ctx)
			if !tt.wantGiven {
				if err != nil || n != 0 {
					t.Errorf("GivenUp() = %d, %v; want none", n, err)
				}
				return
			}
			if err != nil || n != 1 || last.Key != "lost" || !strings.Contains(last.LastError, tt.err.Error()) {
				t.Errorf("GivenUp() = %d, %+v, %v; want the notice with its refusal", n, last, err)
			}
			if depth, err := outbox.Depth(ctx); err != nil || depth != 2 {
				t.Errorf("Depth() = %d, %v; want the 2 behind it", depth, err)
			}
			fake.fail = nil
			for range 3 {
				clock.Advance(5 * time.Minute)
				b.sendDue(ctx)
			}
			var bodies []string
			for _, s := range fake.sends {
				bodies = append(bodies, s.content.AsMessage().Body)
			}
			if want := []string{"to nobody, edited", "next in the room"}; fmt.Sprint(bodies) != fmt.Sprint(want) {
				t.Errorf("sent %q, want %q: the edit on its own, then the notice behind, never the one given up", bodies, want)
			}
		})
	}
}

// TestDetached: a notice whose target notice was pruned (retention.outbox)
// still goes out, without the relation, instead of holding its room's
// queue; a reaction to it has nothing to go on.
func TestDetached(t *testing.T) {
	tests := []struct {
		name      string
		kind      core.NoticeKind
		target    id.EventID
		targetKey string
		want      core.NoticeKind
	}{
		{"edit of a kept message", core.NoticeEdit, "$halt", "breaker:1", core.NoticeEdit},
		{"edit of a pruned message", core.NoticeEdit, "", "breaker:1", core.NoticeMessage},
		{"thread reply to a pruned message", core.NoticeMessage, "", "trip:1", core.NoticeMessage},
		{"reaction to a pruned message", core.NoticeReaction, "", "confirm:1", ""},
		{"reaction to a kept message", core.NoticeReaction, "$ask", "confirm:1", core.NoticeReaction},
		{"message with no relation", core.NoticeMessage, "", "", core.NoticeMessage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := detached(tt.kind, tt.target, tt.targetKey); got != tt.want {
				t.Errorf("detached(%s, %q, %q) = %q, want %q", tt.kind, tt.target, tt.targetKey, got, tt.want)
			}
		})
	}
}
