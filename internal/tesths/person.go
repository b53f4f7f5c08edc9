package tesths

import (
	"context"
	"fmt"
	"sync"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// Person is a scripted Matrix user: it syncs, joins rooms it is invited
// to, and records every event it sees so tests can wait for one.
type Person struct {
	*mautrix.Client

	mu       sync.Mutex
	events   []*event.Event
	ids      map[id.EventID]bool
	handlers []func(context.Context, *event.Event)
	seen     chan struct{}
	cancel   context.CancelFunc
	done     chan struct{}
}

// NewPerson registers a fresh user and starts syncing.
func (h *Homeserver) NewPerson(ctx context.Context, prefix string) (*Person, error) {
	cli, err := h.Register(ctx, RandomName(prefix), "person-password")
	if err != nil {
		return nil, err
	}
	return Watch(cli), nil
}

// Watch starts syncing cli as a Person.
func Watch(cli *mautrix.Client) *Person {
	p := &Person{Client: cli, ids: map[id.EventID]bool{}, seen: make(chan struct{}, 1), done: make(chan struct{})}
	syncer := mautrix.NewDefaultSyncer()
	syncer.OnEvent(func(ctx context.Context, evt *event.Event) {
		if evt.Type == event.StateMember && evt.GetStateKey() == cli.UserID.String() &&
			evt.Content.AsMember().Membership == event.MembershipInvite {
			_, _ = cli.JoinRoomByID(ctx, evt.RoomID)
		}
		p.mu.Lock()
		if evt.ID != "" && p.ids[evt.ID] {
			// A client shows an event once, however often sync brings it
			// (state and timeline, a join's backfill).
			p.mu.Unlock()
			return
		}
		p.ids[evt.ID] = true
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
	cli.Syncer = quickRetry{syncer}
	cli.Store = mautrix.NewMemorySyncStore()
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
	return p
}

// OnEvent runs fn for every event seen from now on, in the sync loop.
func (p *Person) OnEvent(fn func(context.Context, *event.Event)) {
	p.mu.Lock()
	p.handlers = append(p.handlers, fn)
	p.mu.Unlock()
}

// Stop stops syncing.
func (p *Person) Stop() {
	p.cancel()
	<-p.done
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
	resp, err := p.SendText(ctx, roomID, text)
	if err != nil {
		return "", err
	}
	return resp.EventID, nil
}

// MessageFrom matches text messages in a room sent by a user.
func MessageFrom(roomID id.RoomID, sender id.UserID) func(*event.Event) bool {
	return func(evt *event.Event) bool {
		return evt.Type == event.EventMessage && evt.RoomID == roomID && evt.Sender == sender
	}
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
type quickRetry struct{ *mautrix.DefaultSyncer }

func (quickRetry) OnFailedSync(*mautrix.RespSync, error) (time.Duration, error) {
	return 250 * time.Millisecond, nil
}
