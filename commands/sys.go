package commands

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"
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
}

// StatusSection is one titled part of `!sys status`.
type StatusSection struct {
	Title string
	Lines func(ctx context.Context) ([]string, error)
}

// Limits of `!sys logs`.
const (
	defaultLogLines = 20
	maxLogLines     = 200
)

// CmdSys builds the `!sys` admin verbs.
func CmdSys(sys *System) *Handler {
	return &Handler{
		Name:  "sys",
		Help:  "Admin verbs: status and logs of this Jarvis.",
		Admin: true,
		Subcommands: []*Handler{
			{Name: "status", Help: "Version, uptime, homeserver and sync state, outbox, and every feature's counts.", Func: func(e *Event) { sysStatus(e, sys) }},
			{Name: "logs", Args: "[N] [level]", Help: fmt.Sprintf("The last N log lines (default %d, at most %d), secrets redacted.", defaultLogLines, maxLogLines), Func: func(e *Event) { sysLogs(e, sys) }},
		},
	}
}

func sysStatus(e *Event, sys *System) {
	var b strings.Builder
	uptime := e.Proc.deps.Clock.Now().Sub(sys.Started).Round(time.Second)
	fmt.Fprintf(&b, "**Jarvis %s**, up %s\n", sys.Version, uptime)
	for _, section := range sys.Sections {
		lines, err := section.Lines(e.Ctx)
		if err != nil {
			zerolog.Ctx(e.Ctx).Err(err).Str("section", section.Title).Msg("Failed to read status section")
			lines = []string{"unavailable: " + err.Error()}
		}
		fmt.Fprintf(&b, "\n**%s**\n", section.Title)
		for _, line := range lines {
			fmt.Fprintf(&b, "- %s\n", line)
		}
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
}

func sysLogs(e *Event, sys *System) {
	n, level := defaultLogLines, zerolog.TraceLevel
	for _, arg := range e.Args {
		if v, err := strconv.Atoi(arg); err == nil {
			if v < 1 || v > maxLogLines {
				e.Reply("N must be between 1 and %d.", maxLogLines)
				return
			}
			n = v
			continue
		}
		l, err := zerolog.ParseLevel(strings.ToLower(arg))
		if err != nil || arg == "" {
			e.Reply("`%s` is neither a number of lines nor a level (trace, debug, info, warn, error).", arg)
			return
		}
		level = l
	}
	lines := sys.Logs(n, level)
	if len(lines) == 0 {
		e.Reply("No log lines at %s or above yet.", level)
		return
	}
	e.Reply("Last %d log lines:\n```\n%s\n```", len(lines), strings.Join(lines, "\n"))
}
