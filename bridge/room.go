package bridge

import (
	"fmt"
	"slices"

	"github.com/jarvis-hmi/jarvis/core"
)

// The reactions Jarvis puts on everything it asks to be confirmed.
const (
	YesReaction = "✅"
	NoReaction  = "❌"
)

// Room is what a room lets people do, from its bridge state events
// (m.bridge, uk.half-shot.bridge) and com.beeper.room_features.
type Room struct {
	// Network is the bridged network of the room, "" for a native room.
	Network string
	// BridgeBot is the bridge's bot the bridge state names, "" when it
	// names none: its homeserver is where the bridge's puppets live.
	BridgeBot string
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

// Ask puts a question to a person in the room, the Matrix side of
// commands.Channel: the question with ✅ and ❌ already on it, or, where
// reactions do not reach Jarvis, with a hint to reply in words.
func (r Room) Ask(q core.Question) []core.Notice {
	switch {
	case !r.CanReact(YesReaction):
		q.Text += fmt.Sprintf("\n\nReactions don't reach me from here: reply `%s` or `%s` to this message.", q.Yes, q.No)
	case q.YesDoes == "":
	case r.ReactionCount == 1 || !r.CanReact(NoReaction):
		q.Text += fmt.Sprintf("\n\nReact %s to %s, or reply `%s`.", YesReaction, q.YesDoes, q.No)
	default:
		q.Text += fmt.Sprintf("\n\nReact %s to %s, %s to %s.", YesReaction, q.YesDoes, NoReaction, q.NoDoes)
	}
	notices := []core.Notice{{Key: q.Key, RoomID: q.RoomID, Kind: core.NoticeMessage, Body: q.Text, TargetEvent: q.TargetEvent}}
	if !r.CanReact(YesReaction) {
		return notices
	}
	notices = append(notices, core.Notice{Key: q.Key + ":yes", RoomID: q.RoomID, Kind: core.NoticeReaction, Body: YesReaction, Target: q.Key})
	// Where one reaction per person is all the network allows, a second
	// seeded emoji would only invite a mis-tap: ✅ alone, and a reply
	// "no" dismisses.
	if r.ReactionCount != 1 && r.CanReact(NoReaction) {
		notices = append(notices, core.Notice{Key: q.Key + ":no", RoomID: q.RoomID, Kind: core.NoticeReaction, Body: NoReaction, Target: q.Key})
	}
	return notices
}
