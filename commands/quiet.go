package commands

import (
	"context"
	"strings"

	"github.com/jarvis-hmi/jarvis/core/quiet"
)

// meQuiet is `!me quiet 22:00-07:00` and `!me quiet off`.
func (c *reminderCommands) meQuiet(e *Event) error {
	svc := c.quiet
	if svc == nil {
		e.Reply("Quiet hours are not available here.")
		return nil
	}
	arg := strings.Join(e.Args, "")
	if arg == "" {
		e.Reply("From when to when? `%sme quiet 22:00-07:00` (your time zone), or `%sme quiet off`.", e.Proc.Prefix(), e.Proc.Prefix())
		return nil
	}
	return meSet(e, func() (quiet.Hours, error) {
		if strings.EqualFold(arg, "off") {
			return quiet.Off, nil
		}
		return quiet.ParseHours(arg)
	}, svc.SetHours, func(h quiet.Hours) {
		if h == quiet.Off {
			e.Reply("Quiet hours off: your tripwire pushes come when they trip. Anything held comes now, in one digest.")
			return
		}
		e.Reply("Quiet hours %s (%s): I hold your tripwire pushes then and bring them in one digest when they end. `%sme quiet off` ends them.",
			h, e.Proc.zone(e), e.Proc.Prefix())
	})
}

// meDigest is `!me digest daily 09:00` and `!me digest off`.
func (c *reminderCommands) meDigest(e *Event) error {
	svc := c.quiet
	if svc == nil {
		e.Reply("Daily digests are not available here.")
		return nil
	}
	off := len(e.Args) == 1 && strings.EqualFold(e.Args[0], "off")
	if !off && (len(e.Args) != 2 || !strings.EqualFold(e.Args[0], "daily")) {
		e.Reply("When? `%sme digest daily 09:00` (your time zone), or `%sme digest off`.", e.Proc.Prefix(), e.Proc.Prefix())
		return nil
	}
	return meSet(e, func() (int, error) {
		if off {
			return quiet.NoDigest, nil
		}
		return quiet.ParseClock(e.Args[1])
	}, svc.SetDigest, func(at int) {
		if at == quiet.NoDigest {
			e.Reply("Daily digest off. What it gathered comes now; journal-only trips stay in your journal (`%stw journal`).", e.Proc.Prefix())
			return
		}
		e.Reply("Daily digest at %s (%s): every morning one message lists what your journal-only tripwires noted since the last. `%sme digest off` ends it.",
			quiet.Clock(at), e.Proc.zone(e), e.Proc.Prefix())
	})
}

// meSet settles one of the sender's `!me` settings: parse reads what they
// wrote (a refusal is answered, naming why), store keeps it for them, and
// done replies with what it now is.
func meSet[T any](e *Event, parse func() (T, error), store func(ctx context.Context, who string, v T) error, done func(v T)) error {
	v, err := parse()
	if why, ok := refusal(err); ok {
		e.Reply("Not set: %s.", why)
		return nil
	}
	if err != nil {
		return err
	}
	if err := store(e.Ctx, e.Sender, v); err != nil {
		return err
	}
	done(v)
	return nil
}
