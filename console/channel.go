// Package console is the terminal channel: the operator talks to Jarvis
// in a terminal, through the same command table, sentences, confirmations
// and outbox as in the Matrix room, with no chat network at all.
//
// A console never acts on what is typed itself: it keeps each line in the
// store (core.Input), and the Jarvis that holds the workspace lease, a
// `jarvis run` or, when none runs, the console's own process, acts on it
// through the command processor (Relay). What Jarvis says goes through the
// outbox, to the console's own room (core.ConsolePrefix + the user), and
// the console shows it, together with the notices the operator would see
// in the dedicated room, once each, from a cursor kept in the store
// (Session).
package console

import (
	"github.com/jarvis-hmi/jarvis/bridge"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
)

// Network names the console where a message names its network.
const Network = "console"

// Room is the dedicated room of a workspace with no homeserver: the
// notices that would go to the Matrix room go to every console.
const Room = core.ConsolePrefix + "*"

// Me is a console user's room and name in Jarvis: "console:alice". It is
// the sender of what they type, so audits name them as such.
func Me(user string) string { return core.ConsolePrefix + user }

// Channel is the terminal's side of commands.Channel: a question goes as
// its text alone, and the console asks [y/N] (or for an option's number)
// itself when it shows it.
type Channel struct{}

var _ commands.Channel = Channel{}

// Ask returns the question notice.
func (Channel) Ask(q core.Question) []core.Notice {
	return []core.Notice{{Key: q.Key, RoomID: q.RoomID, Kind: core.NoticeMessage, Body: q.Text, TargetEvent: q.TargetEvent}}
}

// Message is what a console user typed, as the processor takes it: from
// the operator at the workspace's own machine, an admin, natively.
func Message(in core.Input) commands.Message {
	me := Me(in.User)
	return commands.Message{RoomID: me, EventID: in.EventID(), Sender: me, Network: Network, Trust: core.TrustNative,
		Operator: true, Addressed: true, Channel: Channel{}, Room: bridge.Room{NoReactions: true}, Body: in.Body, Sent: in.At}
}
