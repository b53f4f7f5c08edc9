package commands

import (
	"errors"
	"fmt"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// oncallCommands take the claims on the alerts Jarvis raises in its room.
type oncallCommands struct {
	svc *oncall.Service
}

// onFleetAnswer takes a 👀 on, or a reply `mine` to, a fleet alert.
func (c *oncallCommands) onFleetAnswer(e *Event, key, answer string) {
	id, ok := fleet.IncidentOf(key)
	if !ok || !oncall.IsClaim(answer) {
		return
	}
	c.claim(e, id, answer == oncall.ClaimReaction)
}

// onAlertAnswer takes a 👀 on, or a reply `mine` to, an alert that is
// its own incident (a crash loop, a budget alert, a shared tripwire's
// trip).
func (c *oncallCommands) onAlertAnswer(e *Event, key, answer string) {
	if oncall.IsClaim(answer) {
		c.claim(e, key, answer == oncall.ClaimReaction)
	}
}

// onEscalationAnswer takes an answer to a reply that called people to an
// alert (a message in the alert's thread after it replies to it) as an
// answer to the alert itself: 👀 or `mine` claims it, and a halt's or an
// approval request's own answers do what they do there.
func (c *oncallCommands) onEscalationAnswer(e *Event, key, answer string) {
	id, ok := oncall.IncidentOfEscalation(key)
	if !ok {
		return
	}
	inc, err := c.svc.Incident(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return
	}
	if err != nil {
		e.Fail(err)
		return
	}
	if fn, _ := e.Proc.answerFunc(inc.NoticeKey); fn != nil {
		fn(e, inc.NoticeKey, answer)
	}
}

// claim makes the sender the owner of incident id if nobody is: the
// alert is edited to name them. Anyone else is told who has it; the owner
// tapping again changes nothing and says nothing.
func (c *oncallCommands) claim(e *Event, id string, tap bool) {
	inc, first, err := c.svc.Claim(e.Ctx, id, e.Sender)
	if errors.Is(err, core.ErrNotFound) {
		return
	}
	if err != nil {
		e.Fail(err)
		return
	}
	reply := e.Reply
	if tap {
		// A reaction has no place in a conversation: the answer goes to
		// the alert, naming who tapped.
		reply = func(format string, args ...any) {
			e.Send(core.Notice{RoomID: inc.RoomID, Kind: core.NoticeMessage, Body: core.EscapeMarkdown(e.Sender) + ": " + fmt.Sprintf(format, args...),
				Mentions: []string{e.Sender}, Target: inc.NoticeKey})
		}
	}
	switch {
	case first:
		e.Send(oncall.ClaimEdit(inc))
	case inc.Owner == e.Sender:
	case !inc.ResolvedAt.IsZero() && inc.Owner == "":
		reply("This resolved at %s, before anyone claimed it.", inc.ResolvedAt.UTC().Format("Jan 2 15:04 MST"))
	case !inc.ResolvedAt.IsZero():
		reply("This resolved at %s; %s handled it.", inc.ResolvedAt.UTC().Format("Jan 2 15:04 MST"), core.EscapeMarkdown(inc.Owner))
	default:
		reply("%s", oncall.HeldBy(inc))
	}
}
