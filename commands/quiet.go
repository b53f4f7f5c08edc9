package commands

import (
	"strings"

	"github.com/jarvis-hmi/jarvis/core/quiet"
)

// meQuiet is `!me quiet 22:00-07:00` and `!me quiet off`.
func meQuiet(e *Event) {
	svc := e.Proc.reminders.quiet
	if svc == nil {
		e.Reply("Quiet hours are not available here.")
		return
	}
	arg := strings.Join(e.Args, "")
	if arg == "" {
		e.Reply("From when to when? `%sme quiet 22:00-07:00` (your time zone), or `%sme quiet off`.", e.Proc.Prefix(), e.Proc.Prefix())
		return
	}
	if strings.EqualFold(arg, "off") {
		if err := svc.SetHours(e.Ctx, e.Sender, quiet.Off); err != nil {
			e.Fail(err)
			return
		}
		e.Reply("Quiet hours off: your tripwire pushes come when they trip. Anything held comes now, in one digest.")
		return
	}
	h, err := quiet.ParseHours(arg)
	if why, ok := refusal(err); ok {
		e.Reply("Not set: %s.", why)
		return
	}
	if err != nil {
		e.Fail(err)
		return
	}
	if err := svc.SetHours(e.Ctx, e.Sender, h); err != nil {
		e.Fail(err)
		return
	}
	e.Reply("Quiet hours %s (%s): I hold your tripwire pushes then and bring them in one digest when they end. `%sme quiet off` ends them.",
		h, e.Proc.zone(e), e.Proc.Prefix())
}

// meDigest is `!me digest daily 09:00` and `!me digest off`.
func meDigest(e *Event) {
	svc := e.Proc.reminders.quiet
	if svc == nil {
		e.Reply("Daily digests are not available here.")
		return
	}
	if len(e.Args) == 1 && strings.EqualFold(e.Args[0], "off") {
		if err := svc.SetDigest(e.Ctx, e.Sender, quiet.NoDigest); err != nil {
			e.Fail(err)
			return
		}
		e.Reply("Daily digest off. What it gathered comes now; journal-only trips stay in your journal (`%stw journal`).", e.Proc.Prefix())
		return
	}
	if len(e.Args) != 2 || !strings.EqualFold(e.Args[0], "daily") {
		e.Reply("When? `%sme digest daily 09:00` (your time zone), or `%sme digest off`.", e.Proc.Prefix(), e.Proc.Prefix())
		return
	}
	at, err := quiet.ParseClock(e.Args[1])
	if why, ok := refusal(err); ok {
		e.Reply("Not set: %s.", why)
		return
	}
	if err != nil {
		e.Fail(err)
		return
	}
	if err := svc.SetDigest(e.Ctx, e.Sender, at); err != nil {
		e.Fail(err)
		return
	}
	e.Reply("Daily digest at %s (%s): every morning one message lists what your journal-only tripwires noted since the last. `%sme digest off` ends it.",
		quiet.Clock(at), e.Proc.zone(e), e.Proc.Prefix())
}
