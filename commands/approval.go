package commands

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/approval"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// approvalCommands answer agents' approval requests: a reaction or a
// reply to the relay, or `!approval` where neither is handy (a terminal,
// a network that cannot react).
type approvalCommands struct {
	svc *approval.Service
	// claims take 👀 or `mine` on a relay, when requests are incidents.
	claims *oncallCommands
}

// handlers are `!approval`.
func (c *approvalCommands) handlers() []*Handler {
	return []*Handler{{
		Name: "approval", Aliases: []string{"approvals"},
		Help: "Agents' requests for permission: list those waiting, approve or deny one (or react to its request).",
		Subcommands: []*Handler{
			{Name: "list", Aliases: []string{"ls"}, Help: "The requests waiting for an answer, oldest first.", Func: c.list},
			{Name: "approve", Args: "<id> [option]", Help: "Approve a request (with the option's number when it has options).", Func: c.approve},
			{Name: "deny", Args: "<id>", Help: "Deny a request.", Func: c.deny},
		},
	}}
}

func (c *approvalCommands) list(e *Event) error {
	pending, err := c.svc.Pending(e.Ctx)
	if err != nil {
		return err
	}
	if len(pending) == 0 {
		e.Reply("No approval requests are waiting.")
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s waiting:\n\n", core.Plural(len(pending), "request", "requests"))
	for _, a := range pending {
		fmt.Fprintf(&b, "- `%s` %s: %s (asks %s)\n", a.ID, core.EscapeMarkdown(a.Agent), core.EscapeMarkdown(a.Action),
			core.EscapeMarkdown(strings.Join(a.Asked, ", ")))
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
	return nil
}

func (c *approvalCommands) approve(e *Event) error {
	if len(e.Args) < 1 {
		e.Reply("`%sapproval approve <id> [option]`", e.Proc.Prefix())
		return nil
	}
	v := approval.Verdict{Approve: true}
	if len(e.Args) > 1 {
		a, err := c.svc.Get(e.Ctx, e.Args[0])
		if err != nil {
			return c.refused(e, e.Args[0], err, e.Reply)
		}
		if v, _ = approval.ParseVerdict(a, e.Args[1]); !v.Approve {
			e.Reply("Request `%s` has options 1 to %d.", a.ID, len(a.Options))
			return nil
		}
	}
	return c.decide(e, e.Args[0], v, e.Reply)
}

func (c *approvalCommands) deny(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("`%sapproval deny <id>`", e.Proc.Prefix())
		return nil
	}
	return c.decide(e, e.Args[0], approval.Verdict{}, e.Reply)
}

// decide applies a verdict and says what came of it.
func (c *approvalCommands) decide(e *Event, id string, v approval.Verdict, reply func(string, ...any)) error {
	res, err := c.svc.Decide(e.Ctx, id, v, e.decider())
	switch {
	case err != nil:
		return c.refused(e, id, err, reply)
	case res.AlreadyDecided:
		reply("Already decided: request `%s` was %s. The first answer stands.", res.Approval.ID, res.Approval.Status)
	default:
		reply("Request `%s` %s; %s reads it with its next look.", res.Approval.ID, res.Approval.Status, core.EscapeMarkdown(res.Approval.Agent))
	}
	return nil
}

// refused answers a verdict that was not taken; an error that is not the
// sender's is returned.
func (c *approvalCommands) refused(e *Event, id string, err error, reply func(string, ...any)) error {
	switch {
	case errors.Is(err, core.ErrNotFound):
		reply("There is no approval request `%s`; `%sapproval list` shows those waiting.", core.EscapeMarkdown(id), e.Proc.Prefix())
	case errors.Is(err, core.ErrForbidden):
		reply("%s. Nothing changed.", reasonOf(err))
	case errors.Is(err, core.ErrExpired):
		reply("Too late: this request expired unanswered, and the agent was told not to go ahead.")
	case errors.Is(err, core.ErrInvalid):
		reply("That is no answer to this request: approve (or an option's number) or deny.")
	case errors.Is(err, core.ErrConflict):
		reply("Someone answered this request at the same moment; their answer stands.")
	default:
		return err
	}
	return nil
}

// onAnswer handles a reaction or reply to a relay (or to the notices
// threaded under it). The first verdict wins and the relay is edited to
// show it; later taps say nothing. Refusals get one short reply, under
// the request for a tap.
func (c *approvalCommands) onAnswer(e *Event, key, answer string) error {
	id, ok := approval.IDFromKey(key)
	if !ok {
		return nil
	}
	a, err := c.svc.Get(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if c.claims != nil && oncall.IsClaim(answer) {
		// A claim, by anyone who may talk to Jarvis, decides nothing.
		return c.claims.claim(e, a.NoticeKey(), answer == oncall.ClaimReaction)
	}
	if length, ok := oncall.SnoozeOf(answer); ok && c.claims != nil {
		// Nor does a snooze.
		return c.claims.snooze(e, a.NoticeKey(), length, answer == oncall.SnoozeReaction)
	}
	tap := approval.IsReaction(answer)
	reply := e.Reply
	if tap {
		reply = func(format string, args ...any) {
			e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, Body: e.Sender + ": " + fmt.Sprintf(format, args...),
				Mentions: []string{e.Sender}, Target: a.NoticeKey()})
		}
	}
	v, ok := approval.ParseVerdict(a, answer)
	if !ok {
		// Other emoji are just reactions; text that is no verdict gets a
		// hint while the request waits.
		if !tap && a.Status == approval.Pending && strings.IndexFunc(answer, isAnswerRune) >= 0 {
			reply("Answer with approve or deny%s.", optionsWord(a))
		}
		return nil
	}
	res, err := c.svc.Decide(e.Ctx, a.ID, v, e.decider())
	switch {
	case err != nil:
		return c.refused(e, a.ID, err, reply)
	case res.AlreadyDecided && !tap:
		reply("Already decided: this request was %s. The first answer stands.", res.Approval.Status)
	}
	return nil
}

// decider is the sender as an approval's answerer.
func (e *Event) decider() approval.Decider {
	return approval.Decider{Who: e.Sender, Network: e.Network, Trust: e.Trust}
}

func optionsWord(a approval.Approval) string {
	if len(a.Options) == 0 {
		return ""
	}
	return fmt.Sprintf(" (an option's number, 1 to %d)", len(a.Options))
}
