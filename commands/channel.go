package commands

import "github.com/jarvis-hmi/jarvis/core"

// Channel is how a person reaches Jarvis: a Matrix room, native or
// bridged (bridge.Room, which the bot fills in from the room's state), or
// the operator's terminal (console.Channel). Everything Jarvis says goes
// through the outbox either way; a channel decides only how a question is
// put where the person is, since one can tap a reaction and the other
// types an answer. The processor and the features know no channel.
type Channel interface {
	// Ask returns the notices that put q to its person: the question and
	// whatever lets them answer it there.
	Ask(q core.Question) []core.Notice
}
