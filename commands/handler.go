package commands

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// Handler is one command of the table.
type Handler struct {
	Name    string
	Aliases []string
	// Args describes the arguments for help, e.g. "<id> on|off".
	Args string
	// Help is one line saying what the command does.
	Help string
	// Admin restricts the command (and its sub-handlers) to admins.
	Admin bool
	// Func runs the command; nil for a command that only groups
	// sub-handlers, which then answers with its help. It returns a
	// refusal (refuse) when Jarvis will not act on the message, and any
	// other error when the command failed on Jarvis's side: its changes
	// roll back and the sender is told it failed (see Processor.exec).
	Func func(*Event) error
	// Check, when set, reads the arguments and checks the sender's
	// authority as Func does, answering a problem in the same words, but
	// acts on nothing: a model's proposal of the command is checked with
	// it when the model makes it, so that no ✅ is shown its asker cannot
	// use.
	Check func(*Event) error
	// Subcommands are the verbs under this command (`!tw list`).
	Subcommands []*Handler
}

func (h *Handler) names() []string { return append([]string{h.Name}, h.Aliases...) }

func (h *Handler) sub(name string) *Handler {
	for _, s := range h.Subcommands {
		for _, n := range s.names() {
			if n == name {
				return s
			}
		}
	}
	return nil
}

// validate panics on an unnamed handler or a duplicate sub-handler name,
// and passes the admin flag down to sub-handlers. Handlers are package
// values every processor shares, so it writes only what changes.
func (h *Handler) validate(parent string) {
	if h.Name == "" || h.Name != strings.ToLower(h.Name) {
		panic(fmt.Sprintf("commands: handler under %q needs a lower-case name", parent))
	}
	seen := map[string]bool{}
	for _, s := range h.Subcommands {
		if h.Admin && !s.Admin {
			s.Admin = true
		}
		s.validate(parent + " " + h.Name)
		for _, n := range s.names() {
			if seen[n] {
				panic(fmt.Sprintf("commands: %q registered twice under %q", n, h.Name))
			}
			seen[n] = true
		}
	}
}

// Event is one command being handled. Everything a handler writes through
// Ctx, and every reply, commits together.
type Event struct {
	Message
	// Ctx carries the transaction and the logger.
	Ctx     context.Context
	Proc    *Processor
	Handler *Handler
	// Command is the full name of the command run, e.g. "tw list".
	Command string
	// Args are the words after the command; RawArgs the same text unsplit.
	Args    []string
	RawArgs string

	replies int
	// err is the first reply that could not be queued: it fails the
	// command.
	err error
	// refused says Jarvis would not act on the message: see Refused.
	refused bool
	// checking, while a proposal is checked (Handler.Check), collects what
	// the event would answer instead of queuing it.
	checking *[]string
}

// Admin reports whether the sender is an admin writing from their own
// Matrix account: admin verbs are never taken through a bridge.
func (e *Event) Admin() bool {
	return (e.Operator || e.Proc.IsAdmin(e.Sender)) && e.Puppet == "" && !e.Relay
}

// channel is how the sender reached Jarvis.
func (e *Event) channel() Channel {
	if e.Channel != nil {
		return e.Channel
	}
	return e.Room
}

// Reply answers the message in its room, as a Matrix reply to it.
func (e *Event) Reply(format string, args ...any) {
	e.Send(core.Notice{
		RoomID:      e.RoomID,
		Kind:        core.NoticeMessage,
		Body:        fmt.Sprintf(format, args...),
		TargetEvent: e.EventID,
	})
}

// Send enqueues a notice caused by this command, in the outbox's urgent
// lane: a person waiting for an answer never waits behind agents' notices.
// Its key is derived from the event ID unless set, so a redelivered event
// never sends twice.
func (e *Event) Send(n core.Notice) {
	if e.err != nil {
		return
	}
	n.Urgent = true
	e.replies++
	if e.checking != nil {
		*e.checking = append(*e.checking, n.Body)
		return
	}
	if n.TargetEvent == e.EventID && n.RoomID == e.RoomID {
		n.ThreadRoot = e.ThreadRoot
	}
	if n.Key == "" {
		n.Key = fmt.Sprintf("reply:%s:%d", e.EventID, e.replies)
	}
	if err := e.Proc.deps.Outbox.Enqueue(e.Ctx, n); err != nil && !errors.Is(err, core.ErrDuplicate) {
		e.err = err
	}
}
