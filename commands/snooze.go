package commands

import (
	"errors"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// snoozeHelp says how to snooze for another length.
const snoozeHelp = "Say how long: `snooze 4h`, `snooze until 18:00` or `snooze until tomorrow 9:00` (in your time zone)."

// snoozeUntil is when a snooze of length (as the person wrote it, ""
// for oncall.snooze_default) ends, read in the sender's time zone.
func (c *oncallCommands) snoozeUntil(e *Event, length string) (time.Time, bool) {
	now := e.Proc.deps.Clock.Now()
	if length == "" {
		return now.Add(c.svc.SnoozeDefault()), true
	}
	return intent.Until(length, now, e.Proc.zone(e))
}

// snooze has the sender snooze incident id: nobody is called to it until
// the snooze ends, and the alert is edited to say who snoozed it until
// when. Only the alert's owner, or an admin from their own Matrix
// account, may: anyone else is told so once, and nothing changes.
func (c *oncallCommands) snooze(e *Event, id, length string, tap bool) error {
	inc, err := c.svc.Incident(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if inc.Parent != "" {
		if inc, err = c.svc.Incident(e.Ctx, inc.Parent); err != nil {
			return err
		}
	}
	if inc.ResolvedAt.IsZero() && !e.Admin() && (inc.Owner != e.Sender || !e.Trust.AtLeast(core.TrustLinked)) {
		alertReply(e, inc, tap)("Only whoever claimed this alert, or an admin, can snooze it; nothing changed. Claim it first: tap %s or reply `%s`.",
			oncall.ClaimReaction, oncall.ClaimWord)
		return nil
	}
	until, ok := c.snoozeUntil(e, length)
	if !ok {
		e.Reply("%s", snoozeHelp)
		return nil
	}
	inc, snoozed, err := c.svc.Snooze(e.Ctx, id, e.Sender, until)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if why, ok := refusal(err); ok {
		e.Reply("Not snoozed: %s.", why)
		return nil
	}
	if err != nil {
		return err
	}
	if !snoozed {
		alertReply(e, inc, tap)("This resolved at %s; there is nothing left to snooze.", core.TimeText(inc.ResolvedAt))
		return nil
	}
	e.Send(oncall.SnoozeEdit(inc))
	return nil
}

// onTripAnswer takes an answer to a trip. A shared tripwire's trip,
// posted to the room, is an incident: its answers are an alert's. A 💤 on,
// or a reply `snooze 4h` to, a trip pushed to a person stops the tripwire
// pushing to them until the snooze ends (its trips are still journaled).
// Only its owner (and their linked identities, who answer as them) may.
func (c *oncallCommands) onTripAnswer(e *Event, key, answer string) error {
	switch _, err := c.svc.Incident(e.Ctx, key); {
	case err == nil:
		return c.answer(e, key, answer)
	case !errors.Is(err, core.ErrNotFound):
		return err
	}
	id, ok := tripwire.TripOf(key)
	length, snooze := oncall.SnoozeOf(answer)
	if !ok || !snooze || c.tripwires == nil {
		return nil
	}
	// The answer goes under the push, in the room it was pushed to.
	reply := func(format string, args ...any) {
		e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, Body: fmt.Sprintf(format, args...), Target: key})
	}
	until, ok := c.snoozeUntil(e, length)
	if !ok {
		reply("%s", snoozeHelp)
		return nil
	}
	now := e.Proc.deps.Clock.Now()
	if err := oncall.CheckSnooze(until, now); err != nil {
		reply("Not snoozed: %s.", reasonOf(err))
		return nil
	}
	err := c.tripwires.tw.Snooze(e.Ctx, e.Sender, id, until)
	if errors.Is(err, core.ErrNotFound) {
		reply("Only the owner of this tripwire can snooze it.")
		return nil
	}
	if err != nil {
		return err
	}
	reply("💤 Snoozed: %s won't push to you until %s; its trips are still journaled (`%stw journal`).",
		core.CodeSpan(id), oncall.UntilText(until, now, e.Proc.zone(e)), e.Proc.Prefix())
	return nil
}
