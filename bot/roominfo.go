package bot

import (
	"context"
	"encoding/json"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/bridge"
)

// roomInfo returns what a room lets people do, from its bridge state
// events, reading the room's state once and caching it until one of those
// events changes.
func (b *Bot) roomInfo(ctx context.Context, roomID id.RoomID) (bridge.Room, error) {
	b.mu.Lock()
	info, ok := b.rooms[roomID]
	b.mu.Unlock()
	if ok {
		return info, nil
	}
	state, err := b.Client.State(ctx, roomID)
	if err != nil {
		return bridge.Room{}, err
	}
	info = parseRoomInfo(state)
	info.NoImages = b.deps.Policy.NoImages(info.Network)
	b.mu.Lock()
	b.rooms[roomID] = info
	b.mu.Unlock()
	return info, nil
}

// onRoomFeatures forgets what it knew of a room whose bridge state or
// members changed.
func (b *Bot) onRoomFeatures(_ context.Context, evt *event.Event) {
	b.mu.Lock()
	delete(b.rooms, evt.RoomID)
	b.mu.Unlock()
}

// roomFeatures is the part of com.beeper.room_features Jarvis reads.
type roomFeatures struct {
	Reaction         event.CapabilitySupportLevel `json:"reaction"`
	ReactionCount    int                          `json:"reaction_count"`
	AllowedReactions []string                     `json:"allowed_reactions"`
}

func parseRoomInfo(state map[event.Type]map[string]*event.Event) bridge.Room {
	var info bridge.Room
	for _, typ := range []event.Type{event.StateBridge, event.StateHalfShotBridge} {
		for _, evt := range state[typ] {
			var content event.BridgeEventContent
			if err := json.Unmarshal(evt.Content.VeryRaw, &content); err == nil && content.Protocol.ID != "" {
				info.Network, info.BridgeBot = content.Protocol.ID, content.BridgeBot.String()
			}
		}
	}
	members := 0
	for _, evt := range state[event.StateMember] {
		var content event.MemberEventContent
		if err := json.Unmarshal(evt.Content.VeryRaw, &content); err == nil &&
			(content.Membership == event.MembershipJoin || content.Membership == event.MembershipInvite) {
			members++
		}
	}
	info.Direct = members == 2
	if evt := state[event.StateBeeperRoomFeatures][""]; evt != nil {
		var features roomFeatures
		if err := json.Unmarshal(evt.Content.VeryRaw, &features); err == nil {
			info.NoReactions = !features.Reaction.Partial()
			info.ReactionCount = features.ReactionCount
			info.AllowedReactions = features.AllowedReactions
		}
	}
	return info
}
