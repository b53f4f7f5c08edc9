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
		if err := svc.Set(e.Ctx, e.Sender, quiet.Off); err != nil {
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
	if err := svc.Set(e.Ctx, e.Sender, h); err != nil {
		e.Fail(err)
		return
	}
	e.Reply("Quiet hours %s (%s): I hold your tripwire pushes then and bring them in one digest when they end. `%sme quiet off` ends them.",
		h, e.Proc.zone(e), e.Proc.Prefix())
}
