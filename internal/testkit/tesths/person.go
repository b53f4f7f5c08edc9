package tesths

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/mattn/go-sqlite3" // the crypto store's driver
	"go.mau.fi/util/dbutil"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto"
	"maunium.net/go/mautrix/crypto/cryptohelper"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// Person is a scripted Matrix user: it syncs, joins rooms it is invited
// to, and records every event it sees so tests can wait for one. It has
// its own end-to-end encryption (a crypto store in a temporary SQLite
// file): it reads encrypted rooms, where it records both the encrypted
// event and its decryption, and its messages there are encrypted.
type Person struct {
	*mautrix.Client
	Crypto *cryptohelper.CryptoHelper
	db     *dbutil.Database
	dir    string

	mu       sync.Mutex
	events   []*event.Event
	ids      map[seenKey]bool
	handlers []func(context.Context, *event.Event)
	seen     chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
	// failedAt is when the first of a run of failed syncs failed (Unix
	// milliseconds), 0 while syncs succeed; the good sync after them reads
	// the rooms back from a minute before it (catchUp).
	failedAt atomic.Int64
}

// seenKey tells events apart: an encrypted event and its decryption
// share an event ID.
type seenKey struct {
	id        id.EventID
	decrypted bool
}

// NewPerson registers a fresh user and starts syncing.
func (h *Homeserver) NewPerson(ctx context.Context, prefix string) (*Person, error) {
	cli, err := h.Register(ctx, RandomName(prefix), "person-password")
	if err != nil {
		return nil, err
	}
	return Watch(ctx, cli)
}

// Watch sets up encryption for cli's device and starts syncing it as a
// Person.
func Watch(ctx context.Context, cli *mautrix.Client) (*Person, error) {
	p := &Person{Client: cli, ids: map[seenKey]bool{}, seen: make(chan struct{}, 1), done: make(chan struct{})}
	syncer := mautrix.NewDefaultSyncer()
	syncer.OnEvent(func(ctx context.Context, evt *event.Event) {
		if evt.Type == event.StateMember && evt.GetStateKey() == cli.UserID.String() &&
			evt.Content.AsMember().Membership == event.MembershipInvite {
			_, _ = cli.JoinRoomByID(ctx, evt.RoomID)
		}
		p.mu.Lock()
		key := seenKey{evt.ID, Encrypted(evt)}
		if evt.ID != "" && p.ids[key] {
			// A client shows an event once, however often sync brings it
			// (state and timeline, a join's backfill). An encrypted event
			// and its decryption share an ID and are both kept.
			p.mu.Unlock()
			return
		}
		p.ids[key] = true
		p.events = append(p.events, evt)
		handlers := p.handlers
		p.mu.Unlock()
		for _, h := range handlers {
			h(ctx, evt)
		}
		select {
		case p.seen <- struct{}{}:
		default:
		}
	})
	cli.Syncer = quickRetry{DefaultSyncer: syncer, p: p}
	cli.Store = mautrix.NewMemorySyncStore()
	if err := p.initCrypto(ctx); err != nil {
		p.cleanup()
		return nil, fmt.Errorf("encryption for %s: %w", cli.UserID, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		for ctx.Err() == nil {
			_ = cli.SyncWithContext(ctx)
			select {
			case <-ctx.Done():
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	return p, nil
}

// initCrypto gives the person's device its keys, in a fresh store.
func (p *Person) initCrypto(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "tesths-crypto-")
	if err != nil {
		return err
	}
	p.dir = dir
	dsn := "file:" + filepath.Join(dir, "crypto.db") + "?_txlock=immediate&_journal_mode=WAL&_foreign_keys=on&_busy_timeout=10000"
	p.db, err = dbutil.NewWithDialect(dsn, "sqlite3")
	if err != nil {
		return err
	}
	helper, err := cryptohelper.NewCryptoHelper(p.Client, []byte("tesths-pickle-key"), p.db)
	if err != nil {
		return err
	}
	if err := helper.Init(ctx); err != nil {
		// Dendrite answers a key upload it could not store with 400 and a
		// map of what failed, which the error alone does not show.
		var httpErr mautrix.HTTPError
		if errors.As(err, &httpErr) && httpErr.ResponseBody != "" {
			return fmt.Errorf("%w: the homeserver said %s", err, httpErr.ResponseBody)
		}
		return err
	}
	p.Crypto = helper
	p.Client.Crypto = helper
	return nil
}

func (p *Person) cleanup() {
	if p.db != nil {
		_ = p.db.Close()
	}
	if p.dir != "" {
		_ = os.RemoveAll(p.dir)
	}
}

// WaitEncrypted waits until the person knows that a room is encrypted, so
// that what it says there next is encrypted.
func (p *Person) WaitEncrypted(ctx context.Context, roomID id.RoomID, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if ok, err := p.StateStore.IsEncrypted(ctx, roomID); err == nil && ok {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not learn within %s that %s is encrypted", p.UserID, timeout, roomID)
}

// Greet makes the room ready for a conversation with peer: it waits
// until the person knows the room is encrypted, says text, and waits
// until it has read peer's encrypted reply. From then on what the person
// says there is encrypted, and it can read what peer says. It returns
// the reply.
func (p *Person) Greet(ctx context.Context, roomID id.RoomID, peer id.UserID, text string, timeout time.Duration) (*event.Event, error) {
	if err := p.WaitReady(ctx, roomID, peer, timeout); err != nil {
		return nil, err
	}
	sent, err := p.Say(ctx, roomID, text)
	if err != nil {
		return nil, err
	}
	reply, err := p.WaitFor(ctx, timeout, func(evt *event.Event) bool {
		return Encrypted(evt) && MessageFrom(roomID, peer)(evt) && ReplyTo(evt) == sent
	})
	if err != nil {
		return nil, fmt.Errorf("%s read no encrypted reply from %s to %q in %s: %w", p.UserID, peer, text, roomID, err)
	}
	return reply, nil
}

// FromServer returns every event the homeserver holds from sender in a
// room, oldest first, read through its /messages API back to the room's
// start: messages, edits and reactions as the homeserver stores them,
// encrypted or not; an event the person could not decrypt is there too.
// State events are left out.
func (p *Person) FromServer(ctx context.Context, roomID id.RoomID, sender id.UserID) ([]*event.Event, error) {
	filter := &mautrix.FilterPart{Senders: []id.UserID{sender}}
	var out []*event.Event
	from := ""
	for {
		resp, err := p.Messages(ctx, roomID, from, "", mautrix.DirectionBackward, filter, 100)
		if err != nil {
			return nil, fmt.Errorf("read %s's events in %s: %w", sender, roomID, err)
		}
		for _, evt := range resp.Chunk {
			if evt.Sender == sender && evt.StateKey == nil {
				evt.RoomID = roomID
				out = append(out, evt)
			}
		}
		if resp.End == "" || resp.End == from || len(resp.Chunk) == 0 {
			break
		}
		from = resp.End
	}
	slices.Reverse(out)
	return out, nil
}

// WaitReady waits until the person knows that a room is encrypted and
// that peer is in it, so that what it says there next is encrypted for
// peer's devices too. A client that speaks before it knows a member
// shares its session without them, and they cannot read it.
func (p *Person) WaitReady(ctx context.Context, roomID id.RoomID, peer id.UserID, timeout time.Duration) error {
	if err := p.WaitEncrypted(ctx, roomID, timeout); err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for !p.StateStore.IsInRoom(ctx, roomID, peer) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not learn within %s that %s is in %s", p.UserID, timeout, peer, roomID)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}

// OnEvent runs fn for every event seen from now on, in the sync loop.
func (p *Person) OnEvent(fn func(context.Context, *event.Event)) {
	p.mu.Lock()
	p.handlers = append(p.handlers, fn)
	p.mu.Unlock()
}

// Stop stops syncing and drops the person's keys.
func (p *Person) Stop() {
	p.cancel()
	<-p.done
	p.cleanup()
}

// WaitFor waits until an event matching match has been seen (including
// ones seen before the call) and returns it.
func (p *Person) WaitFor(ctx context.Context, timeout time.Duration, match func(*event.Event) bool) (*event.Event, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		p.mu.Lock()
		for _, evt := range p.events {
			if match(evt) {
				p.mu.Unlock()
				return evt, nil
			}
		}
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no matching event within %s", timeout)
		case <-p.seen:
		}
	}
}

// Events returns every event seen so far that matches.
func (p *Person) Events(match func(*event.Event) bool) []*event.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*event.Event
	for _, evt := range p.events {
		if match(evt) {
			out = append(out, evt)
		}
	}
	return out
}

// Say sends a text message and returns its event ID.
func (p *Person) Say(ctx context.Context, roomID id.RoomID, text string) (id.EventID, error) {
	// Right after joining an encrypted room, a client may not know its
	// members yet and has no one to share a session with; like a real
	// client, it tries again once sync has told it.
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := p.SendText(ctx, roomID, text)
		if err == nil {
			return resp.EventID, nil
		}
		if !errors.Is(err, crypto.ErrNoGroupSession) || time.Now().After(deadline) {
			return "", err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Encrypted matches events that arrived encrypted and were decrypted.
func Encrypted(evt *event.Event) bool {
	return evt.Mautrix.EventSource&event.SourceDecrypted != 0
}

// MessageFrom matches text messages in a room sent by a user.
func MessageFrom(roomID id.RoomID, sender id.UserID) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.RoomID == roomID && evt.Sender == sender
	}
}

// ReplyTo returns the event a message replies to, from its m.relates_to,
// which an encrypted event carries in the clear; empty if it is no reply.
func ReplyTo(evt *event.Event) id.EventID {
	rel, _ := evt.Content.Raw["m.relates_to"].(map[string]any)
	inReplyTo, _ := rel["m.in_reply_to"].(map[string]any)
	target, _ := inReplyTo["event_id"].(string)
	return id.EventID(target)
}

// Body returns the plain body of a message event.
func Body(evt *event.Event) string {
	_ = evt.Content.ParseRaw(evt.Type)
	if msg := evt.Content.AsMessage(); msg != nil {
		return msg.Body
	}
	return ""
}

// quickRetry retries a failed sync after 250 ms instead of mautrix's 10 s,
// so a person notices a restarted homeserver at once.
type quickRetry struct {
	*mautrix.DefaultSyncer
	p *Person
}

func (q quickRetry) OnFailedSync(*mautrix.RespSync, error) (time.Duration, error) {
	q.p.failedAt.CompareAndSwap(0, time.Now().UnixMilli())
	return 250 * time.Millisecond, nil
}

// ProcessResponse handles a sync's response and, when the syncs before it
// failed, reads the rooms back.
func (q quickRetry) ProcessResponse(ctx context.Context, resp *mautrix.RespSync, since string) error {
	err := q.DefaultSyncer.ProcessResponse(ctx, resp, since)
	if failedAt := q.p.failedAt.Swap(0); err == nil && failedAt != 0 {
		q.p.catchUp(ctx, q.DefaultSyncer, failedAt-time.Minute.Milliseconds())
	}
	return err
}

// catchUpLimit is how many of a room's latest events catchUp reads.
const catchUpLimit = 50

// catchUp reads the latest events of each room the person is in, back to
// from (Unix milliseconds), and shows those no sync brought, as a client
// that reloads a room's timeline does: a stopping homeserver (Dendrite)
// can answer a sync with a next_batch past an event that no later sync
// delivers. Jarvis reads its rooms back for the same reason (the bot's
// catch-up). If a read fails, the next good sync tries again.
func (p *Person) catchUp(ctx context.Context, syncer *mautrix.DefaultSyncer, from int64) {
	again := func() { p.failedAt.CompareAndSwap(0, from+time.Minute.Milliseconds()) }
	joined, err := p.JoinedRooms(ctx)
	if err != nil {
		again()
		return
	}
	for _, roomID := range joined.JoinedRooms {
		resp, err := p.Messages(ctx, roomID, "", "", mautrix.DirectionBackward, nil, catchUpLimit)
		if err != nil {
			again()
			continue
		}
		slices.Reverse(resp.Chunk)
		for _, evt := range resp.Chunk {
			p.mu.Lock()
			shown := p.ids[seenKey{evt.ID, false}] || p.ids[seenKey{evt.ID, true}]
			p.mu.Unlock()
			if shown || evt.StateKey != nil || evt.Timestamp < from {
				continue
			}
			evt.RoomID = roomID
			evt.Type.Class = event.MessageEventType
			if err := evt.Content.ParseRaw(evt.Type); err != nil {
				continue
			}
			evt.Mautrix.EventSource = event.SourceJoin | event.SourceTimeline
			syncer.Dispatch(ctx, evt)
		}
	}
}
