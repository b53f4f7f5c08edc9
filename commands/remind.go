package commands

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/quiet"
	"github.com/jarvis-hmi/jarvis/core/reminder"
)

// DefaultSnooze is how long ⏰ puts a reminder off unless configured.
const DefaultSnooze = 10 * time.Minute

// reminderCommands are what `!remind` and `!me` act on.
type reminderCommands struct {
	svc    *reminder.Service
	people PersonStore
	quiet  *quiet.Service
}

// handlers are `!remind` ("remind me to call the bank tomorrow at 10",
// said to Jarvis, becomes it too) and `!me`, what a person set about
// themselves.
func (c *reminderCommands) handlers() []*Handler {
	return []*Handler{{
		Name:    "remind",
		Aliases: []string{"reminder", "reminders"},
		Args:    "<what> <when>",
		Help:    "Remind you in our direct room: `!remind me to call the bank tomorrow at 10`, `in 20 minutes`, `every Monday at 9`.",
		Func:    c.add,
		Subcommands: []*Handler{
			{Name: "list", Aliases: []string{"ls"}, Help: "Your reminders still to come.", Func: c.list},
			{Name: "cancel", Aliases: []string{"rm", "delete"}, Args: "<id>", Help: "Cancel one of your reminders.", Func: c.cancel},
		},
	}, {
		Name: "me",
		Help: "What you set about yourself: your time zone, quiet hours and daily digest.",
		Func: c.meShow,
		Subcommands: []*Handler{
			{Name: "tz", Aliases: []string{"timezone"}, Args: "<zone>", Help: "Set your time zone, e.g. `Europe/Berlin`: reminders and times are read and said in it.",
				Func: c.meTimeZone},
			{Name: "quiet", Args: "<from-to>|off", Help: "Hold your tripwire pushes during quiet hours, e.g. `22:00-07:00` in your time zone, and get them as one digest when they end.",
				Func: c.meQuiet},
			{Name: "digest", Args: "daily <time>|off", Help: "One message a day, e.g. `daily 09:00` in your time zone, with what your journal-only tripwires noted.",
				Func: c.meDigest},
		},
	}}
}

// zone is the time zone of the sender: their own, or the configured
// default.
func (p *Processor) zone(e *Event) *time.Location {
	if r := p.features.reminders; r != nil {
		name, err := r.people.TimeZone(e.Ctx, e.Sender)
		if err != nil {
			zerolog.Ctx(e.Ctx).Err(err).Msg("Failed to read a time zone")
		} else if loc, err := time.LoadLocation(name); err == nil && name != "" {
			return loc
		}
	}
	if p.cfg.Zone != nil {
		return p.cfg.Zone
	}
	return time.UTC
}

// remindIntent turns "remind me to …" said to Jarvis into `!remind`.
func remindIntent(text string) (string, []string, bool) {
	if !intent.IsReminder(text) {
		return "", nil, false
	}
	return "remind", strings.Fields(text), true
}

func (c *reminderCommands) add(e *Event) error {
	if strings.TrimSpace(e.RawArgs) == "" {
		e.Reply("Remind you of what, and when? Say `%sremind me to call the bank tomorrow at 10`.", e.Proc.Prefix())
		return nil
	}
	loc := e.Proc.zone(e)
	now := e.Proc.deps.Clock.Now()
	w := intent.Reminder(e.RawArgs, now, loc)
	if w.Question != "" {
		e.Reply("%s", w.Question)
		return nil
	}
	r, err := c.svc.Add(e.Ctx, reminder.Reminder{Owner: e.Sender, Text: w.What, Due: w.At,
		Every: reminder.Repeat(w.Every), Zone: loc.String()})
	if why, ok := refusal(err); ok {
		e.Reply("Not set: %s.", why)
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("%s", reminderSet(e, r, now, loc))
	return nil
}

// reminderSet says a reminder is set, when and how to cancel it.
func reminderSet(e *Event, r reminder.Reminder, now time.Time, loc *time.Location) string {
	return fmt.Sprintf("Okay: I'll remind you %s%s to %s, in our direct room. `%sremind list` shows your reminders, `%sremind cancel %d` cancels this one.",
		reminder.When(r.Due, now, loc), reminderRepeat(r, loc), remindQuote(r.Text), e.Proc.Prefix(), e.Proc.Prefix(), r.ID)
}

func reminderRepeat(r reminder.Reminder, loc *time.Location) string {
	switch r.Every {
	case reminder.Daily:
		return ", and every day at that time"
	case reminder.Weekly:
		return ", and every " + r.Due.In(loc).Weekday().String() + " at that time"
	}
	return ""
}

// A reminder a model proposes waits for the person's ✅ this long.
const (
	confirmReminder     = "reminder"
	proposedReminderTTL = time.Hour
)

// proposeReminder asks the person to confirm a reminder read from a
// model's words the way `!remind` reads a sentence; the ✅ sets it.
func (c *reminderCommands) proposeReminder(e *Event, r reminder.Reminder, loc *time.Location) error {
	payload, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode reminder proposal: %w", err)
	}
	return e.AskConfirm(confirmReminder, string(payload), fmt.Sprintf("Shall I remind you %s%s to %s, in our direct room?",
		reminder.When(r.Due, e.Proc.deps.Clock.Now(), loc), reminderRepeat(r, loc), remindQuote(r.Text)))
}

// confirmProposed sets a proposed reminder on its ✅, through the same
// checks as `!remind`.
func (c *reminderCommands) confirmProposed(e *Event, p core.Pending) (string, error) {
	var r reminder.Reminder
	if err := json.Unmarshal([]byte(p.Payload), &r); err != nil {
		return "", fmt.Errorf("read reminder proposal %s: %w", p.Key, err)
	}
	r.Owner = p.Requester
	loc, err := time.LoadLocation(r.Zone)
	if err != nil {
		loc = time.UTC
	}
	set, err := c.svc.Add(e.Ctx, r)
	if why, ok := refusal(err); ok {
		return fmt.Sprintf("Not set: %s.", why), nil
	}
	if err != nil {
		return "", err
	}
	return reminderSet(e, set, e.Proc.deps.Clock.Now(), loc), nil
}

// remindQuote shows a reminder's text, as its owner wrote it, on one line
// in quotes.
func remindQuote(s string) string { return "“" + core.EscapeMarkdown(core.Truncate(s, 200)) + "”" }

func (c *reminderCommands) list(e *Event) error {
	list, err := c.svc.List(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		e.Reply("You have no reminders to come. Say “remind me to … tomorrow at 10” to set one.")
		return nil
	}
	loc, now := e.Proc.zone(e), e.Proc.deps.Clock.Now()
	var b strings.Builder
	fmt.Fprintf(&b, "**Your reminders** (%s):\n\n", loc)
	for _, r := range list[:min(len(list), listCap)] {
		every := ""
		if r.Every != reminder.Once {
			every = ", every " + map[reminder.Repeat]string{reminder.Daily: "day", reminder.Weekly: r.Due.In(loc).Weekday().String()}[r.Every]
		}
		fmt.Fprintf(&b, "- `%d` %s%s: %s\n", r.ID, reminder.When(r.Due, now, loc), every, remindQuote(r.Text))
	}
	if more := len(list) - listCap; more > 0 {
		fmt.Fprintf(&b, "- and %d more\n", more)
	}
	fmt.Fprintf(&b, "\n`%sremind cancel <id>` cancels one.", e.Proc.Prefix())
	e.Private("%s", b.String())
	return nil
}

func (c *reminderCommands) cancel(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("Which one? `%sremind cancel <id>`; `%sremind list` shows the ids.", e.Proc.Prefix(), e.Proc.Prefix())
		return nil
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(e.Args[0], "#"), 10, 64)
	if err != nil {
		e.Reply("`%s` is not a reminder id; `%sremind list` shows them.", core.EscapeMarkdown(e.Args[0]), e.Proc.Prefix())
		return nil
	}
	r, err := c.svc.Cancel(e.Ctx, e.Sender, id)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("You have no reminder %d to cancel; `%sremind list` shows yours.", id, e.Proc.Prefix())
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("Cancelled reminder %d: %s.", r.ID, remindQuote(r.Text))
	return nil
}

// onAnswer acts on a reaction or reply to a delivered reminder: ⏰
// (or `10m`) snoozes it chat.snooze (10 minutes), 🕐 (`1h`) an hour, 🌅 (`tomorrow`)
// a day, ✅ (`done`) marks it done. Only its owner's answers count.
func (c *reminderCommands) onAnswer(e *Event, key, answer string) error {
	id, ok := reminder.ParseNoticeKey(key)
	if !ok {
		return nil
	}
	svc := c.svc
	loc, now := e.Proc.zone(e), e.Proc.deps.Clock.Now()
	reply := func(format string, args ...any) {
		e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, Body: fmt.Sprintf(format, args...), TargetEvent: e.EventID})
	}
	var until time.Time
	switch a := strings.ToLower(strings.Trim(answer, " .!")); a {
	case reminder.SnoozeShort, "snooze", "10m", "10 min", "10 mins", "10 minutes", "later":
		until = now.Add(e.Proc.cfg.Snooze)
	case reminder.SnoozeHour, "1h", "1 h", "an hour", "1 hour", "hour":
		until = now.Add(time.Hour)
	case reminder.SnoozeTomorrow, "tomorrow":
		until = now.In(loc).AddDate(0, 0, 1)
	case reminder.MarkDone, "done", "✔️", "☑️", "ok", "thanks", "thank you":
		r, err := svc.Finish(e.Ctx, e.Sender, id)
		if errors.Is(err, core.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if r.Status == reminder.Waiting {
			reply("Done for now; next time %s.", reminder.When(r.Due, now, loc))
			return nil
		}
		reply("Done: %s.", remindQuote(r.Text))
		return nil
	default:
		if strings.IndexFunc(a, unicode.IsLetter) >= 0 {
			reply("Reply `10m`, `1h` or `tomorrow` to snooze this reminder, or `done`.")
		}
		return nil
	}
	r, err := svc.Snooze(e.Ctx, e.Sender, id, until)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	reply("Snoozed: I'll remind you again %s.", reminder.When(r.Due, now, loc))
	return nil
}

func (c *reminderCommands) meShow(e *Event) error {
	zone, err := c.people.TimeZone(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	tz := fmt.Sprintf("Your time zone: %s. `%sme tz <zone>` changes it.", core.EscapeMarkdown(zone), e.Proc.Prefix())
	if zone == "" {
		tz = fmt.Sprintf("Your time zone: %s (the default; `%sme tz Europe/Berlin` sets yours).", e.Proc.zone(e), e.Proc.Prefix())
	}
	if c.quiet == nil {
		e.Reply("%s", tz)
		return nil
	}
	set, _, err := c.quiet.Settings(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	hours := fmt.Sprintf("Quiet hours: none. `%sme quiet 22:00-07:00` holds your tripwire pushes overnight.", e.Proc.Prefix())
	if set.Hours.Set {
		hours = fmt.Sprintf("Quiet hours: %s; your tripwire pushes wait for their end and come as one digest. `%sme quiet off` ends them.", set.Hours, e.Proc.Prefix())
	}
	daily := fmt.Sprintf("Daily digest: none. `%sme digest daily 09:00` sums up your journal-only trips each morning.", e.Proc.Prefix())
	if set.Digest != quiet.NoDigest {
		daily = fmt.Sprintf("Daily digest: at %s. `%sme digest off` ends it.", quiet.Clock(set.Digest), e.Proc.Prefix())
	}
	e.Reply("%s\n\n%s\n\n%s", tz, hours, daily)
	return nil
}

func (c *reminderCommands) meTimeZone(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("Which time zone? `%sme tz Europe/Berlin` (an IANA name).", e.Proc.Prefix())
		return nil
	}
	loc, err := time.LoadLocation(e.Args[0])
	if err != nil || strings.EqualFold(e.Args[0], "local") {
		e.Reply("I know no time zone `%s`; give an IANA name such as `Europe/Berlin`, `America/New_York` or `UTC`.",
			strings.ReplaceAll(core.Truncate(e.Args[0], 60), "`", "'"))
		return nil
	}
	if err := c.people.SetTimeZone(e.Ctx, e.Sender, loc.String()); err != nil {
		return err
	}
	e.Reply("Your time zone is %s now: it is %s there. Reminders you set from now on follow it.", loc, e.Proc.deps.Clock.Now().In(loc).Format("15:04 MST"))
	return nil
}
