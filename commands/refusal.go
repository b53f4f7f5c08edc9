package commands

import (
	"errors"
	"fmt"

	"github.com/jarvis-hmi/jarvis/core"
)

// refusedError is what a handler returns when Jarvis will not act on the
// message (bad arguments, a rule core holds to): Processor.exec answers
// with its text, keeps what the command did, and the message counts as
// refused, so a channel that reports outcomes reports a refusal.
type refusedError struct{ reply string }

func (r *refusedError) Error() string { return r.reply }

// refuse returns the refusal that answers format.
func refuse(format string, args ...any) error {
	return &refusedError{reply: fmt.Sprintf(format, args...)}
}

// refusals are core's sentinel errors for a request the sender can fix or
// wait out, and what a reply says of each, in one table, as the API's
// statusOf gives status codes. Any other error is Jarvis's own: the command
// fails, its changes roll back, and the sender is told it failed. Errors a
// command answers in its own words (no such tripwire, no such card) are
// guards in its handler.
var refusals = []struct {
	err error
	why func(err error) string
}{
	{core.ErrInvalid, reasonOf},
	{core.ErrUnprocessable, reasonOf},
	{core.ErrBudgetExceeded, reasonOf},
	{core.ErrIllegalTransition, reasonOf},
	{core.ErrForbidden, reasonOf},
	{core.ErrExpired, reasonOf},
	{core.ErrGone, reasonOf},
	{core.ErrRateLimited, reasonOf},
}

// refusal says in words why core refused a request; ok is false for an
// error that is not the sender's.
func refusal(err error) (why string, ok bool) {
	for _, r := range refusals {
		if errors.Is(err, r.err) {
			return r.why(err), true
		}
	}
	return "", false
}

// reasonOf is the reason core gave, without the sentinel and the context
// it was wrapped in: a field's reason, a refusal's, or else the error's
// text.
func reasonOf(err error) string {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return fe.Reason
	}
	var r *core.Refusal
	if errors.As(err, &r) {
		return r.Reason
	}
	return err.Error()
}
