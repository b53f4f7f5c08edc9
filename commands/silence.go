package commands

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// silenceHandler is `!silence`: maintenance windows.
func (c *oncallCommands) silenceHandler() *Handler {
	return &Handler{
		Name: "silence",
		Args: "<agent|source|fleet|label=value> for 2h|until 18:00|--until-resolved [--because \"…\"]",
		Help: "Hold the alerts about an agent (admins; `fleet` for all; an Alertmanager label as `alertname=DiskFull`) and the trips of tripwires reading it from the room and pushes, " +
			"journaled instead, for a time or until it resolves; its end says what it held. Your own tripwires' sources: yours alone.",
		Func:  c.silenceAdd,
		Check: c.silenceCheck,
		Subcommands: []*Handler{
			{Name: "list", Aliases: []string{"ls"}, Help: "The silences that hold now.", Func: c.silenceList},
			{Name: "end", Args: "<id>", Help: "End a silence now, with its summary.", Func: c.silenceEnd},
		},
	}
}

// silenceUsage says how to set a silence.
const silenceUsage = "Say what and for how long: `%ssilence EVE for 2h --because \"deploy\"`, `… until 18:00`, or `… --until-resolved`."

func (c *oncallCommands) silenceAdd(e *Event) error {
	prefix := e.Proc.Prefix()
	sil, ok, err := c.readSilence(e)
	if !ok || err != nil {
		return err
	}
	now := sil.StartedAt
	sil, err = c.svc.Silence(e.Ctx, sil)
	if why, ok := refusal(err); ok {
		e.Reply("Not silenced: %s.", why)
		return nil
	}
	if err != nil {
		return err
	}
	held := "the alerts about it and the trips of tripwires reading it"
	switch {
	case sil.Scope != "":
		held = "the trips of your tripwires reading it"
	case strings.EqualFold(sil.Target, oncall.FleetTarget):
		held = "every fleet alert"
	}
	ends := "until " + oncall.UntilText(sil.EndsAt, now, e.Proc.zone(e))
	if sil.UntilResolved {
		ends = fmt.Sprintf("until it resolves, and %s at the latest (%s)", ends, core.HumanDuration(oncall.MaxUntilResolved))
	}
	e.Reply("🔕 Silence %d: I hold %s on %s %s; they are journaled, not posted or pushed. When it ends I'll say what it held. `%ssilence end %d` ends it now.",
		sil.ID, held, core.EscapeMarkdown(sil.Target), ends, prefix, sil.ID)
	return nil
}

// readSilence reads `!silence`'s arguments and checks that the sender
// may silence what they name, answering a problem; ok says the silence
// may be set.
func (c *oncallCommands) readSilence(e *Event) (sil oncall.Silence, ok bool, err error) {
	prefix := e.Proc.Prefix()
	words, err := splitArgs(e.RawArgs)
	if err != nil || len(words) == 0 {
		e.Reply(silenceUsage, prefix)
		return oncall.Silence{}, false, nil
	}
	if _, isFlag := flagName(words[0]); isFlag {
		e.Reply("Name what to silence first. "+silenceUsage, prefix)
		return oncall.Silence{}, false, nil
	}
	var rest []string
	var because string
	untilResolved := false
	for i := 1; i < len(words); i++ {
		name, isFlag := flagName(words[i])
		switch {
		case !isFlag:
			rest = append(rest, words[i].text)
		case name == "until-resolved":
			untilResolved = true
		case (name == "because" || name == "reason") && i+1 < len(words):
			because = words[i+1].text
			i++
		default:
			e.Reply("%s is not a flag of `silence`; it takes --because \"…\" and --until-resolved. "+silenceUsage, twCode(words[i].text), prefix)
			return oncall.Silence{}, false, nil
		}
	}
	now := e.Proc.deps.Clock.Now()
	sil = oncall.Silence{Target: words[0].text, Reason: because, By: e.Sender, RoomID: e.RoomID, UntilResolved: untilResolved, StartedAt: now}
	switch {
	case untilResolved && len(rest) == 0:
		sil.EndsAt = now.Add(oncall.MaxUntilResolved)
	case !untilResolved && len(rest) > 0:
		at, ok := intent.Until(strings.Join(rest, " "), now, e.Proc.zone(e))
		if !ok {
			e.Reply("I can't read %s as a time. "+silenceUsage, twCode(strings.Join(rest, " ")), prefix)
			return oncall.Silence{}, false, nil
		}
		sil.EndsAt = at
	default:
		e.Reply(silenceUsage, prefix)
		return oncall.Silence{}, false, nil
	}
	ok, err = c.mayTarget(e, &sil)
	return sil, ok && err == nil, err
}

// silenceCheck is `!silence`'s Check: its arguments read, its
// authority and its span checked as silenceAdd checks them, nothing set.
func (c *oncallCommands) silenceCheck(e *Event) error {
	sil, ok, err := c.readSilence(e)
	if !ok || err != nil {
		return err
	}
	if why, ok := refusal(oncall.CheckSilence(sil)); ok {
		e.Reply("Not silenced: %s.", why)
	}
	return nil
}

// mayTarget checks that the sender may silence sil's target: an admin
// anything, for everyone; anyone else a source one of their own
// tripwires reads, for their own trips (sil.Scope). It answers a refusal.
func (c *oncallCommands) mayTarget(e *Event, sil *oncall.Silence) (bool, error) {
	if e.Admin() {
		if a := matchAgent(sil.Target, e.Proc.agentNames()); a != "" {
			sil.Target = a
		}
		return true, nil
	}
	if c.tripwires != nil {
		defs, err := c.tripwires.tw.List(e.Ctx, e.Sender)
		if err != nil {
			return false, err
		}
		for _, d := range defs {
			if oncall.Names(sil.Target, d.Sources()) {
				sil.Scope = e.Sender
				return true, nil
			}
		}
	}
	e.Reply("Only an admin silences an agent or the fleet; you may silence a source one of your own tripwires reads (`%stw list`).", e.Proc.Prefix())
	return false, nil
}

// matchAgent is the configured name of the agent name names, "" for none.
func matchAgent(name string, agents []string) string {
	for _, a := range agents {
		if strings.EqualFold(a, name) {
			return a
		}
	}
	return ""
}

func (c *oncallCommands) silenceList(e *Event) error {
	list, err := c.svc.Silences(e.Ctx)
	if err != nil {
		return err
	}
	now, loc := e.Proc.deps.Clock.Now(), e.Proc.zone(e)
	var b strings.Builder
	for _, s := range list {
		if s.Scope != "" && s.Scope != e.Sender && !e.Admin() {
			continue
		}
		fmt.Fprintf(&b, "- `%d` %s until %s", s.ID, core.EscapeMarkdown(s.Target), oncall.UntilText(s.EndsAt, now, loc))
		if s.UntilResolved {
			b.WriteString(" or until it resolves")
		}
		fmt.Fprintf(&b, ", by %s", core.EscapeMarkdown(s.By))
		if s.Reason != "" {
			fmt.Fprintf(&b, " because “%s”", core.EscapeMarkdown(s.Reason))
		}
		fmt.Fprintf(&b, "; held %s and %s so far\n", core.Plural(s.HeldAlerts, "alert", "alerts"), core.Plural(s.HeldTrips, "trip", "trips"))
	}
	if b.Len() == 0 {
		e.Reply("No silences hold. "+silenceUsage, e.Proc.Prefix())
		return nil
	}
	e.Reply("**Silences**\n\n%s\n`%ssilence end <id>` ends one.", b.String(), e.Proc.Prefix())
	return nil
}

func (c *oncallCommands) silenceEnd(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("Which one? `%ssilence end <id>`; `%ssilence list` shows them.", e.Proc.Prefix(), e.Proc.Prefix())
		return nil
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(e.Args[0], "#"), 10, 64)
	if err != nil {
		e.Reply("%s is not a silence id; `%ssilence list` shows them.", twCode(e.Args[0]), e.Proc.Prefix())
		return nil
	}
	sil, err := c.svc.SilenceByID(e.Ctx, id)
	if errors.Is(err, core.ErrNotFound) || err == nil && sil.Scope != "" && sil.Scope != e.Sender && !e.Admin() {
		e.Reply("There is no silence %d of yours; `%ssilence list` shows them.", id, e.Proc.Prefix())
		return nil
	}
	if err != nil {
		return err
	}
	if sil.Scope == "" && !e.Admin() {
		e.Reply("Only an admin ends silence %d.", id)
		return nil
	}
	ended, err := c.svc.EndSilence(e.Ctx, id, "ended by "+core.EscapeMarkdown(e.Sender))
	if err != nil {
		return err
	}
	if !ended {
		e.Reply("Silence %d ended at %s.", id, oncall.UntilText(sil.EndedAt, e.Proc.deps.Clock.Now(), e.Proc.zone(e)))
	}
	return nil
}
