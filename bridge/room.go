package bridge

import "slices"

// Room is what a room lets people do, from its bridge state events
// (m.bridge, uk.half-shot.bridge) and com.beeper.room_features.
type Room struct {
	// Network is the bridged network of the room, "" for a native room.
	Network string
	// NoReactions says reactions do not reach the other side (the zero
	// Room, a native one, takes reactions).
	NoReactions bool
	// ReactionCount is how many reactions one user may have on a message
	// (WhatsApp and Signal: 1); 0 means no limit.
	ReactionCount int
	// AllowedReactions, when set, is the only emoji the network accepts.
	AllowedReactions []string
	// NoImages says images do not reach the other side: a chart goes as
	// its words.
	NoImages bool
	// Direct says the room is a direct room with Jarvis: no one but Jarvis
	// and one person is in it or invited, and it is not the dedicated room.
	Direct bool
}

// CanReact reports whether people in the room can answer with this emoji.
func (r Room) CanReact(emoji string) bool {
	if r.NoReactions {
		return false
	}
	return len(r.AllowedReactions) == 0 || slices.Contains(r.AllowedReactions, emoji)
}
