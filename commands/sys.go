package commands

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
)

// System is what the `!sys` verbs report on. Features add status lines
// through Sections as they land.
type System struct {
	Version string
	Started time.Time
	// Logs returns up to n of the newest log lines at or above level.
	Logs func(n int, level zerolog.Level) []string
	// Sections each contribute lines to `!sys status`, in order.
	Sections []StatusSection
	// Clearers each drop one kind of conversational context of a room
	// (draft card sets, the excerpt buffer) and say what they dropped;
	// pending confirmations are always cleared.
	Clearers []func(ctx context.Context, roomID string) (string, error)
	// Restart asks the process to drain the outbox, release the lease and
	// start again; it returns at once. It is called once the transaction
	// that records the confirmation has committed.
	Restart func()
	// State keeps the note that a restart was asked, so the new process
	// can say it is back.
	State StateStore
}

// StateStore keeps small values across restarts.
type StateStore interface {
	State(ctx context.Context, key string) (string, error)
	SetState(ctx context.Context, key, value string) error
}

// StateRestartRoom is the state key holding the room where a restart was
// asked for, until the new process says it is back.
const StateRestartRoom = "restart_room"

// Confirmation kinds of the !sys verbs.
const (
	confirmClear   = "sys-clear"
	confirmRestart = "sys-restart"
)

// StatusSection is one titled part of `!sys status`. One with a Verb is
// also a `!sys` verb of its own (`!sys lease`), registered with the rest.
type StatusSection struct {
	Title string
	Verb  string
	Help  string
	Lines func(ctx context.Context) ([]string, error)
}

// Limits of `!sys logs`.
const (
	defaultLogLines = 20
	maxLogLines     = 200
)

// cmdSys are the admin verbs. AddFeatures puts the verbs of the status
// sections that have one after them, then cmdSysHelp.
var cmdSys = &Handler{
	Name:  "sys",
	Help:  "Admin verbs: status, logs, clear and restart of this Jarvis.",
	Admin: true,
	Subcommands: []*Handler{
		{Name: "clear", Help: "Forget this room's conversational context (pending proposals, drafts), after ✅. Never touches tripwires, journals or cards.", Func: func(e *Event) error {
			return e.AskConfirm(confirmClear, "", "Clear this room's conversational context: pending proposals and confirmations, draft card sets? Armed tripwires, journals and cards stay.")
		}},
		{Name: "restart", Help: "Drain the outbox, release the lease and restart, after ✅.", Func: func(e *Event) error {
			return e.AskConfirm(confirmRestart, "", "Restart Jarvis?")
		}},
		{Name: "status", Help: "Version, uptime, homeserver and sync state, outbox, and every feature's counts.", Func: sysStatus},
		{Name: "logs", Args: "[N] [level]", Help: fmt.Sprintf("The last N log lines (default %d, at most %d), secrets redacted.", defaultLogLines, maxLogLines), Func: sysLogs},
	},
}

var cmdSysHelp = &Handler{Name: "help", Help: "These verbs.", Func: func(e *Event) error {
	e.Reply("%s", e.Proc.helpFor(e.Proc.byName[cmdSys.Name], cmdSys.Name))
	return nil
}}

// sectionVerbs are the `!sys` verbs of the status sections that have one
// (`!sys lease`).
func sectionVerbs(sections []StatusSection) []*Handler {
	var out []*Handler
	for _, section := range sections {
		if section.Verb != "" {
			out = append(out, &Handler{Name: section.Verb, Help: section.Help, Func: func(e *Event) error {
				e.Reply("%s", renderSections(e, section))
				return nil
			}})
		}
	}
	return out
}

var (
	confirmSysClear = ConfirmKind{Kind: confirmClear, TTL: 10 * time.Minute, Admin: true, YesDoes: "clear", NoDoes: "keep", OnConfirm: func(e *Event, pending core.Pending) (string, error) {
		return sysClear(e, pending.RoomID)
	}}
	confirmSysRestart = ConfirmKind{Kind: confirmRestart, TTL: 10 * time.Minute, Admin: true, YesDoes: "restart", NoDoes: "cancel", OnConfirm: func(e *Event, pending core.Pending) (string, error) {
		sys := e.Proc.sys
		if err := sys.State.SetState(e.Ctx, StateRestartRoom, pending.RoomID); err != nil {
			return "", err
		}
		// Restarting drains the outbox and ends the process: it must not
		// begin before the confirmation and this reply are committed, or the
		// same ✅ would be handled again after the restart.
		core.AfterCommit(e.Ctx, sys.Restart)
		return fmt.Sprintf("Restarting, as %s asked: sending what is queued, then starting again. I'll say when I'm back.", e.Sender), nil
	}}
)

func sysStatus(e *Event) error {
	sys := e.Proc.sys
	uptime := e.Proc.deps.Clock.Now().Sub(sys.Started).Round(time.Second)
	e.Reply("**Jarvis %s**, up %s\n\n%s", sys.Version, uptime, renderSections(e, sys.Sections...))
	return nil
}

// renderSections renders status sections; one that fails says so and the
// rest still show.
func renderSections(e *Event, sections ...StatusSection) string {
	var b strings.Builder
	for _, section := range sections {
		lines, err := section.Lines(e.Ctx)
		if err != nil {
			zerolog.Ctx(e.Ctx).Err(err).Str("section", section.Title).Msg("Failed to read status section")
			lines = []string{"unavailable: " + ErrorText(err.Error())}
		}
		fmt.Fprintf(&b, "**%s**\n", section.Title)
		for _, line := range lines {
			fmt.Fprintf(&b, "- %s\n", line)
		}
		b.WriteString("\n")
	}
	return strings.TrimSpace(b.String())
}

// ErrorText shows an error's text as data: it may come from the homeserver
// or the database, so it is truncated and can format nothing.
func ErrorText(s string) string {
	return core.CodeSpan(core.Truncate(s, maxErrorText))
}

// maxErrorText is how much of an error's text a status line shows.
const maxErrorText = 300

func sysLogs(e *Event) error {
	sys := e.Proc.sys
	n, level := defaultLogLines, zerolog.TraceLevel
	for _, arg := range e.Args {
		if v, err := strconv.Atoi(arg); err == nil {
			if v < 1 || v > maxLogLines {
				e.Reply("N must be between 1 and %d.", maxLogLines)
				return nil
			}
			n = v
			continue
		}
		l, err := zerolog.ParseLevel(strings.ToLower(arg))
		if err != nil || arg == "" {
			e.Reply("`%s` is neither a number of lines nor a level (trace, debug, info, warn, error).", arg)
			return nil
		}
		level = l
	}
	lines := sys.Logs(n, level)
	if len(lines) == 0 {
		e.Reply("No log lines at %s or above yet.", level)
		return nil
	}
	e.Reply("Last %d log lines:\n```\n%s\n```", len(lines), strings.Join(lines, "\n"))
	return nil
}

// sysClear drops the room's pending confirmations and whatever the
// clearers hold, and says what it dropped.
func sysClear(e *Event, roomID string) (string, error) {
	sys := e.Proc.sys
	counts, err := e.Proc.deps.Pending.ClearPending(e.Ctx, roomID, e.Proc.deps.Clock.Now())
	if err != nil {
		return "", err
	}
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%d pending %s", counts[kind], kind))
	}
	for _, clear := range sys.Clearers {
		what, err := clear(e.Ctx, roomID)
		if err != nil {
			return "", err
		}
		if what != "" {
			parts = append(parts, what)
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("Cleared, as %s asked: there was nothing to forget. Tripwires, journals and cards are untouched.", e.Sender), nil
	}
	return fmt.Sprintf("Cleared, as %s asked: %s. Tripwires, journals and cards are untouched.", e.Sender, strings.Join(parts, ", ")), nil
}
