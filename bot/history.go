package bot

import (
	"context"
	"slices"
	"strconv"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// stateJoinedPrefix keys when Jarvis joined a room, in milliseconds.
const stateJoinedPrefix = "joined_at:"

// dropHistory removes from a sync response every timeline event older than
// Jarvis's own join of its room: invited to a room with history it can
// see, Jarvis acts on nothing said there before it came in. Within one
// timeline, what comes before the join event is older whatever its
// timestamp; in later responses an event is older when its
// origin_server_ts is before the join's.
func (b *Bot) dropHistory(ctx context.Context, res *mautrix.RespSync) error {
	for roomID, room := range res.Rooms.Join {
		pos := slices.IndexFunc(room.Timeline.Events, b.ownJoin)
		switch {
		case pos >= 0:
			if err := b.setJoinedAt(ctx, roomID, room.Timeline.Events[pos].Timestamp); err != nil {
				return err
			}
			room.Timeline.Events = room.Timeline.Events[pos:]
		default:
			// A limited timeline may leave the join in the state before it.
			if i := slices.IndexFunc(room.State.Events, b.ownJoin); i >= 0 {
				if err := b.setJoinedAt(ctx, roomID, room.State.Events[i].Timestamp); err != nil {
					return err
				}
			}
		}
		joined, err := b.joinedAt(ctx, roomID)
		if err != nil {
			return err
		}
		room.Timeline.Events = slices.DeleteFunc(room.Timeline.Events, func(evt *event.Event) bool {
			return evt.Timestamp < joined
		})
	}
	return nil
}

// ownJoin reports whether evt is Jarvis joining a room it was not in; a
// change of its own display name is not a join.
func (b *Bot) ownJoin(evt *event.Event) bool {
	if evt.Type != event.StateMember || evt.GetStateKey() != b.cfg.UserID {
		return false
	}
	if membership(evt.Content.Raw) != event.MembershipJoin {
		return false
	}
	return evt.Unsigned.PrevContent == nil || membership(evt.Unsigned.PrevContent.Raw) != event.MembershipJoin
}

func membership(raw map[string]any) event.Membership {
	s, _ := raw["membership"].(string)
	return event.Membership(s)
}

// joinedAt returns when Jarvis last joined a room, in milliseconds; 0 when
// no join was seen (rooms joined before this was recorded).
func (b *Bot) joinedAt(ctx context.Context, roomID id.RoomID) (int64, error) {
	b.mu.Lock()
	ms, ok := b.joined[roomID]
	b.mu.Unlock()
	if ok {
		return ms, nil
	}
	value, err := b.deps.State.State(ctx, stateJoinedPrefix+roomID.String())
	if err != nil {
		return 0, err
	}
	ms, _ = strconv.ParseInt(value, 10, 64)
	b.mu.Lock()
	b.joined[roomID] = ms
	b.mu.Unlock()
	return ms, nil
}

func (b *Bot) setJoinedAt(ctx context.Context, roomID id.RoomID, ms int64) error {
	if err := b.deps.State.SetState(ctx, stateJoinedPrefix+roomID.String(), strconv.FormatInt(ms, 10)); err != nil {
		return err
	}
	b.mu.Lock()
	b.joined[roomID] = ms
	b.mu.Unlock()
	return nil
}
