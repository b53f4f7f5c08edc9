package core

import (
	"fmt"
	"time"
)

// Input is a line a person typed where Jarvis has no server to read it
// from (the console): kept in the store until the Jarvis holding the
// workspace lease has acted on it, as a Matrix message waits on the
// homeserver.
type Input struct {
	Seq int64
	// User is who typed it, as the channel names them ("alice", the
	// operating-system user of a console).
	User string
	Body string
	// Answers is the key of the notice the line answers (a question's
	// option, a confirmation's yes or no); empty for a line of its own.
	Answers string
	At      time.Time
	// Handled is when the lease holder acted on it, and Outcome how.
	Handled time.Time
	Outcome string
}

// EventID is the input's stand-in for a Matrix event ID: the handled mark
// that makes acting on it happen once, and the target its replies name.
func (in Input) EventID() string { return fmt.Sprintf("%sin:%d", ConsolePrefix, in.Seq) }
