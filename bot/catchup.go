package bot

import (
	"context"
	"fmt"
	"slices"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core"
)

// A homeserver that goes away can take Jarvis's sync past an event
// without handing it over: Dendrite, stopped while a message arrived,
// answered one sync with a next_batch beyond the message and a timeline
// without it, while the sender's own sync and the room's /messages had
// it. No sync after that brings it again. So once the homeserver is back,
// Jarvis reads the recent history of each room it is in and acts on what
// it has not acted on yet; the handled-events table keeps what it did act
// on from being acted on twice.
const (
	// catchUpWindow is how long before the first failed sync the catch-up
	// reads back from: an event skipped that long before the homeserver
	// went away, or by a homeserver clock that far behind Jarvis's, is
	// still found.
	catchUpWindow = time.Minute
	// catchUpLimit is how many of a room's latest events the catch-up
	// reads at most.
	catchUpLimit = 100
)

// catchUp acts on the messages and reactions in Jarvis's rooms since from
// that no sync handed over (delivered holds those that one did); token is
// the sync token they are handled under.
func (b *Bot) catchUp(ctx context.Context, from time.Time, token string, delivered map[id.EventID]int64) error {
	joined, err := b.Client.JoinedRooms(ctx)
	if err != nil {
		return fmt.Errorf("list the rooms Jarvis is in: %w", err)
	}
	res := &mautrix.RespSync{NextBatch: token}
	res.Rooms.Join = map[id.RoomID]*mautrix.SyncJoinedRoom{}
	missed := 0
	for _, roomID := range joined.JoinedRooms {
		events, err := b.recentEvents(ctx, roomID, from)
		if err != nil {
			return err
		}
		events = slices.DeleteFunc(events, func(evt *event.Event) bool {
			_, ok := delivered[evt.ID]
			return ok
		})
		missed += len(events)
		res.Rooms.Join[roomID] = &mautrix.SyncJoinedRoom{Timeline: mautrix.SyncTimeline{SyncEventsList: mautrix.SyncEventsList{Events: events}}}
	}
	// What was said before Jarvis joined a room stays unanswered here too.
	if err := b.dropHistory(ctx, res); err != nil {
		return fmt.Errorf("record when Jarvis joined a room: %w", err)
	}
	tracked, notHandled := core.TrackNotHandled(context.WithValue(ctx, mautrix.SyncTokenContextKey, token))
	for roomID, room := range res.Rooms.Join {
		for _, evt := range room.Timeline.Events {
			evt.RoomID = roomID
			evt.Type.Class = event.MessageEventType
			if err := evt.Content.ParseRaw(evt.Type); err != nil {
				continue
			}
			evt.Mautrix.EventSource = event.SourceJoin | event.SourceTimeline
			b.syncer.Dispatch(tracked, evt)
		}
	}
	if err := notHandled(); err != nil {
		return fmt.Errorf("an event was not handled: %w", err)
	}
	b.log.Info().Time("from", from).Int("rooms", len(joined.JoinedRooms)).Int("missed", missed).
		Msg("Read the rooms again after the homeserver came back")
	return nil
}

// recentEvents returns the room's latest events (not state) from others
// since from, oldest first.
func (b *Bot) recentEvents(ctx context.Context, roomID id.RoomID, from time.Time) ([]*event.Event, error) {
	resp, err := b.matrix.Messages(ctx, roomID, "", "", mautrix.DirectionBackward, nil, catchUpLimit)
	if err != nil {
		return nil, fmt.Errorf("read the latest events of %s: %w", roomID, err)
	}
	var events []*event.Event
	for _, evt := range resp.Chunk {
		if evt.Timestamp < from.UnixMilli() {
			break
		}
		if evt.StateKey == nil && evt.Sender != b.Client.UserID {
			events = append(events, evt)
		}
	}
	slices.Reverse(events)
	return events, nil
}
