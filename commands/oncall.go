package commands

import (
	"errors"
	"fmt"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/wake"
)

// oncallCommands take the claims and snoozes on the alerts Jarvis raises
// in its room, and the snoozes on the trips it pushes to a person; and
// `!silence`.
type oncallCommands struct {
	svc *oncall.Service
	// tripwires, when there, snooze the pushes of a person's tripwire and
	// tell whose source a silence may hold.
	tripwires *tripwireCommands
}

// onFleetAnswer takes a 👀 or 💤 on, or a reply `mine` or `snooze 4h`
// to, a fleet alert.
func (c *oncallCommands) onFleetAnswer(e *Event, key, answer string) error {
	if id, ok := fleet.IncidentOf(key); ok {
		return c.answer(e, id, answer)
	}
	return nil
}

// onAlertAnswer takes an answer to an alert that is its own incident (a
// crash loop, a budget alert, a job's failure, a shared tripwire's trip, an
// Alertmanager alert group).
func (c *oncallCommands) onAlertAnswer(e *Event, key, answer string) error {
	return c.answer(e, key, answer)
}

// onWakeAnswer takes a 👀 or 💤 on, or a reply `mine` or `snooze 4h` to,
// a wake-router notice: an answer to the open incident of its condition.
func (c *oncallCommands) onWakeAnswer(e *Event, key, answer string) error {
	cond, ok := wake.ConditionOf(key)
	if !ok {
		return nil
	}
	id, open, err := c.svc.OpenIncident(e.Ctx, wake.IncidentKind, cond)
	if err != nil {
		return err
	}
	if open {
		return c.answer(e, id, answer)
	}
	return nil
}

// onWokeAnswer takes an answer to the reply that said a snoozed alert is
// back, which a message in the alert's thread after it replies to.
func (c *oncallCommands) onWokeAnswer(e *Event, key, answer string) error {
	if id, ok := oncall.IncidentOfWoke(key); ok {
		return c.toAlert(e, id, answer)
	}
	return nil
}

// onLapsedAnswer takes an answer to the reply that said a claim lapsed,
// which a message in the alert's thread after it replies to.
func (c *oncallCommands) onLapsedAnswer(e *Event, key, answer string) error {
	if id, ok := oncall.IncidentOfLapse(key); ok {
		return c.toAlert(e, id, answer)
	}
	return nil
}

// answer claims incident id (👀, `mine`) or snoozes it (💤, `snooze …`).
func (c *oncallCommands) answer(e *Event, id, answer string) error {
	if oncall.IsClaim(answer) {
		return c.claim(e, id, answer == oncall.ClaimReaction)
	}
	if length, ok := oncall.SnoozeOf(answer); ok {
		return c.snooze(e, id, length, answer == oncall.SnoozeReaction)
	}
	return nil
}

// onEscalationAnswer takes an answer to a reply that called people to an
// alert (a message in the alert's thread after it replies to it) as an
// answer to the alert itself: 👀 or `mine` claims it, and a halt's or an
// approval request's own answers do what they do there.
func (c *oncallCommands) onEscalationAnswer(e *Event, key, answer string) error {
	if id, ok := oncall.IncidentOfEscalation(key); ok {
		return c.toAlert(e, id, answer)
	}
	return nil
}

// toAlert takes an answer to a reply in an alert's thread as an answer to
// the alert itself, with the alert's own answers.
func (c *oncallCommands) toAlert(e *Event, id, answer string) error {
	inc, err := c.svc.Incident(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if fn, _ := e.Proc.answerFunc(inc.NoticeKey); fn != nil {
		return fn(e, inc.NoticeKey, answer)
	}
	return nil
}

// claim makes the sender the owner of incident id if nobody is: the
// alert is edited to name them. Only a Matrix account or a bridged
// account linked to one may claim. The owner claiming again renews the
// claim (a tap quietly); an admin, from their own Matrix account, takes
// it over; anyone else is told who has it.
func (c *oncallCommands) claim(e *Event, id string, tap bool) error {
	inc, err := c.svc.Incident(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if !e.Trust.AtLeast(core.TrustLinked) {
		alertReply(e, inc, tap)("Claims are taken from a Matrix account, or a bridged account linked to one (`%slink`); nothing changed.",
			e.Proc.Prefix())
		return nil
	}
	inc, first, err := c.svc.Claim(e.Ctx, id, e.Sender)
	if err != nil {
		return err
	}
	reply := alertReply(e, inc, tap)
	switch {
	case first:
		e.Send(oncall.ClaimEdit(inc))
	case !inc.ResolvedAt.IsZero() && inc.Owner == "":
		reply("This resolved at %s, before anyone claimed it.", core.TimeText(inc.ResolvedAt))
	case !inc.ResolvedAt.IsZero():
		reply("This resolved at %s; %s handled it.", core.TimeText(inc.ResolvedAt), core.EscapeMarkdown(inc.Owner))
	case inc.Owner == e.Sender:
		return c.renew(e, inc, tap)
	case e.Admin():
		return c.takeOver(e, inc, reply)
	default:
		reply("%s", oncall.HeldBy(inc))
	}
	return nil
}

// renew renews the owner's claim on inc: it holds oncall.claim_hold
// again from now.
func (c *oncallCommands) renew(e *Event, inc oncall.Incident, tap bool) error {
	inc, ok, err := c.svc.Reclaim(e.Ctx, inc.ID, e.Sender, e.Sender)
	if err != nil || !ok || tap {
		return err
	}
	e.Reply("Still yours: the claim holds until %s.", core.TimeText(inc.ClaimedAt.Add(c.svc.ClaimHold())))
	return nil
}

// takeOver makes the admin who answered the owner of inc instead of
// whoever claimed it.
func (c *oncallCommands) takeOver(e *Event, inc oncall.Incident, reply func(string, ...any)) error {
	from := inc.Owner
	inc, ok, err := c.svc.Reclaim(e.Ctx, inc.ID, from, e.Sender)
	switch {
	case err != nil:
		return err
	case !ok:
		// Resolved, or handed on, meanwhile.
		reply("%s", oncall.HeldBy(inc))
		return nil
	}
	e.Send(oncall.TakeOverEdit(inc))
	reply("You took this over from %s.", core.EscapeMarkdown(from))
	return nil
}

// alertReply answers who answered an alert: a reply to a text answer,
// or, to a tap (a reaction has no place in a conversation), a reply to
// the alert naming who tapped.
func alertReply(e *Event, inc oncall.Incident, tap bool) func(format string, args ...any) {
	if !tap {
		return e.Reply
	}
	return func(format string, args ...any) {
		e.Send(core.Notice{RoomID: inc.RoomID, Kind: core.NoticeMessage, Body: core.EscapeMarkdown(e.Sender) + ": " + fmt.Sprintf(format, args...),
			Mentions: []string{e.Sender}, Target: inc.NoticeKey})
	}
}
