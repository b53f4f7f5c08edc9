package console

import (
	"fmt"
	"strings"
)

// Status is what the status line says about the workspace.
type Status struct {
	// Holder holds the workspace lease, "" when no Jarvis does; Here says
	// it is this console's own process.
	Holder string
	Here   bool
	// OutboxDepth is how many notices wait to be sent.
	OutboxDepth int
	// OpenBreakers names the agents whose breaker is not closed.
	OpenBreakers []string
	// Questions counts the cards waiting on a decision.
	Questions int
}

// String is the status line.
func (s Status) String() string {
	holder := s.Holder
	switch {
	case s.Here:
		holder = "this console"
	case holder == "":
		holder = "no Jarvis runs"
	}
	breakers := "breakers: all closed"
	if len(s.OpenBreakers) > 0 {
		breakers = "open breakers: " + strings.Join(s.OpenBreakers, ", ")
	}
	return fmt.Sprintf("lease: %s │ outbox: %d │ %s │ questions waiting: %d", holder, s.OutboxDepth, breakers, s.Questions)
}
