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
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/core/retention"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
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

// sysCommands are the admin verbs, on the System they report on and act
// on.
type sysCommands struct{ sys *System }

// handler is `!sys`: its verbs, the verbs of the status sections that
// have one, token when credentials are given, and help.
func (c *sysCommands) handler(token []*Handler) *Handler {
	sys := &Handler{
		Name:  "sys",
		Help:  "Admin verbs: status, logs, clear and restart of this Jarvis.",
		Admin: true,
	}
	help := &Handler{Name: "help", Help: "These verbs.", Func: func(e *Event) error {
		e.Reply("%s", e.Proc.helpFor(e.Proc.byName[sys.Name], sys.Name))
		return nil
	}}
	sys.Subcommands = slices.Concat([]*Handler{
		{Name: "clear", Help: "Forget this room's conversational context (pending proposals, drafts), after ✅. Never touches tripwires, journals or cards.", Func: func(e *Event) error {
			return e.AskConfirm(confirmClear, "", "Clear this room's conversational context: pending proposals and confirmations, draft card sets? Armed tripwires, journals and cards stay.")
		}},
		{Name: "restart", Help: "Drain the outbox, release the lease and restart, after ✅.", Func: func(e *Event) error {
			return e.AskConfirm(confirmRestart, "", "Restart Jarvis?")
		}},
		{Name: "status", Help: "Version, uptime, homeserver and sync state, outbox, and every feature's counts.", Func: c.status},
		{Name: "logs", Args: "[N] [level]", Help: fmt.Sprintf("The last N log lines (default %d, at most %d), secrets redacted.", defaultLogLines, maxLogLines), Func: c.logs},
	}, sectionVerbs(c.sys.Sections), token, []*Handler{help})
	return sys
}

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

// confirms are the confirmations of `!sys clear` and `!sys restart`.
func (c *sysCommands) confirms() []ConfirmKind {
	return []ConfirmKind{
		{Kind: confirmClear, TTL: 10 * time.Minute, Admin: true, YesDoes: "clear", NoDoes: "keep", OnConfirm: func(e *Event, pending core.Pending) (string, error) {
			return c.clear(e, pending.RoomID)
		}},
		{Kind: confirmRestart, TTL: 10 * time.Minute, Admin: true, YesDoes: "restart", NoDoes: "cancel", OnConfirm: func(e *Event, pending core.Pending) (string, error) {
			if err := c.sys.State.SetState(e.Ctx, StateRestartRoom, pending.RoomID); err != nil {
				return "", err
			}
			// Restarting drains the outbox and ends the process: it must not
			// begin before the confirmation and this reply are committed, or
			// the same ✅ would be handled again after the restart.
			core.AfterCommit(e.Ctx, c.sys.Restart)
			return fmt.Sprintf("Restarting, as %s asked: sending what is queued, then starting again. I'll say when I'm back.", e.Sender), nil
		}},
	}
}

func (c *sysCommands) status(e *Event) error {
	sys := c.sys
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

func (c *sysCommands) logs(e *Event) error {
	sys := c.sys
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
	// A logged field is anyone's text (an agent's, a feed's): the one
	// code-block helper fences it so that no line of it can close the
	// block and be read as Jarvis's Markdown.
	e.Reply("Last %d log lines:\n%s", len(lines), core.CodeBlock(strings.Join(lines, "\n")))
	return nil
}

// clear drops the room's pending confirmations and whatever the clearers
// hold, and says what it dropped.
func (c *sysCommands) clear(e *Event, roomID string) (string, error) {
	sys := c.sys
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

// Status is where the figures of `!sys status` come from: the wiring
// supplies them, and StatusSections writes them out, section by section.
type Status struct {
	// Homeserver is the URL of the homeserver Jarvis lives on.
	Homeserver string
	// Matrix is how the connection to the homeserver fares; nil in the
	// console, which never talks to Matrix itself.
	Matrix func() MatrixHealth
	Lease  LeaseStatus
	Outbox OutboxStatus
	Store  StoreStatus
	Fleet  FleetReader
	// Breakers gives every agent's breaker.
	Breakers interface {
		StatusAll(ctx context.Context) ([]breaker.Status, error)
	}
	// Cards counts the cards in each state.
	Cards func(ctx context.Context) (map[string]int, error)
	// LastTick is the tripwire evaluator's last pass; nil before the first.
	LastTick func() *TickSummary
	// LastRetention is the retention loop's last pass; nil before the
	// first.
	LastRetention func() *retention.Report
	// Watchdog is the dead-man's switch as it stands, and Jarvis's
	// restarts; nil in the console, which pings nothing itself.
	Watchdog func(ctx context.Context) (WatchdogStatus, error)
}

// WatchdogStatus is the dead-man's switch: where it pings, how often,
// and its last round; and Jarvis's own restarts.
type WatchdogStatus struct {
	// Up is when this Jarvis started.
	Up time.Time
	// Boots is how many times Jarvis started in the last 24 hours, this
	// start included; Crashes how many of the others ended without a
	// clean stop.
	Boots, Crashes int
	// Host is the ping URL's host (the rest of a Healthchecks URL is its
	// secret); empty when no ping URL is configured.
	Host   string
	Period time.Duration
	// At is the last round's time; zero before the first.
	At      time.Time
	Healthy bool
	Reason  string
	// Status is the receiver's answer; 0 when the ping did not arrive.
	Status int
	Err    string
}

// MatrixHealth is the connection to the homeserver.
type MatrixHealth struct {
	UserID     string
	RoomID     string
	DeviceID   string
	Encryption bool
	// LastSync is when the last sync succeeded; zero before the first.
	LastSync time.Time
	// SyncError is why syncing fails, empty while it works.
	SyncError string
}

// LeaseStatus is the workspace lease as `!sys lease` shows it.
type LeaseStatus interface {
	Current(ctx context.Context) (lease.Record, error)
	Holding() (epoch int64, held bool)
}

// OutboxStatus is the outbox as `!sys status` shows it: what waits, the
// last send error, and the notices the sender gave up on.
type OutboxStatus interface {
	Depth(ctx context.Context) (int, error)
	LastError(ctx context.Context) (string, error)
	GivenUp(ctx context.Context) (int, *core.OutboxEntry, error)
}

// StoreStatus is the database as `!sys status` shows it.
type StoreStatus interface {
	Size(ctx context.Context) (engine string, bytes int64, err error)
	TripwireStatusCounts(ctx context.Context) (map[string]int, error)
}

// TickSummary is the tripwire evaluator's last pass.
type TickSummary struct {
	At     time.Time
	Report tripwire.TickReport
	Err    error
}

// StatusSections are the sections of `!sys status`, in order, written
// from the figures s supplies: Matrix, the lease (also `!sys lease`), the
// outbox, the database, the fleet (also `!sys fleet`), and what Jarvis
// keeps for people.
func StatusSections(s Status) []StatusSection {
	return []StatusSection{
		{Title: "Matrix", Lines: func(context.Context) ([]string, error) {
			if s.Matrix == nil {
				return []string{consoleMatrixLine(s.Homeserver)}, nil
			}
			return matrixLines(s.Homeserver, s.Matrix()), nil
		}},
		{Title: "Lease", Verb: "lease", Help: "Who holds the workspace lease, under which epoch, until when.", Lines: func(ctx context.Context) ([]string, error) {
			rec, err := s.Lease.Current(ctx)
			if err != nil {
				return nil, err
			}
			_, held := s.Lease.Holding()
			return []string{fmt.Sprintf("workspace %s, epoch %d, held by %s (this one: %v) since %s, until %s",
				rec.WorkspaceID, rec.Epoch, rec.Holder, held, rec.AcquiredAt.UTC().Format(time.RFC3339), rec.ExpiresAt.UTC().Format(time.RFC3339))}, nil
		}},
		{Title: "Outbox", Lines: func(ctx context.Context) ([]string, error) { return outboxLines(ctx, s.Outbox) }},
		{Title: "Database", Lines: func(ctx context.Context) ([]string, error) {
			engine, size, err := s.Store.Size(ctx)
			if err != nil {
				return nil, err
			}
			return []string{fmt.Sprintf("%s, %.1f MiB", engine, float64(size)/(1<<20))}, nil
		}},
		{Title: "Fleet", Verb: "fleet", Help: "What every agent is doing, from heartbeats.", Lines: func(ctx context.Context) ([]string, error) {
			rows, err := s.Fleet.FleetStatus(ctx)
			return strings.Split(fleet.Render(rows), "\n"), err
		}},
		{Title: "Tripwires, breakers, cards", Lines: s.domainLines},
		{Title: "Watchdog", Lines: func(ctx context.Context) ([]string, error) {
			if s.Watchdog == nil {
				return []string{"the console pings nothing itself; Jarvis's own `!sys status` shows its watchdog"}, nil
			}
			w, err := s.Watchdog(ctx)
			return watchdogLines(w), err
		}},
	}
}

// watchdogLines are the lines of the Watchdog section.
func watchdogLines(w WatchdogStatus) []string {
	lines := []string{fmt.Sprintf("up since %s; %s in the last 24 hours, %s without a clean stop",
		w.Up.UTC().Format(time.RFC3339), core.Plural(w.Boots, "start", "starts"), core.Plural(w.Crashes, "earlier one", "earlier ones"))}
	if w.Host == "" {
		return append(lines, "no ping URL: nothing outside Jarvis hears when it stops (set watchdog.ping_url)")
	}
	line := fmt.Sprintf("pinging %s every %s", w.Host, w.Period)
	if w.At.IsZero() {
		return append(lines, line+"; no ping yet")
	}
	what := "healthy"
	if !w.Healthy {
		what = "unhealthy, sent to /fail: " + ErrorText(w.Reason)
	}
	answer := fmt.Sprintf("answered %d", w.Status)
	if w.Err != "" {
		answer = "not received: " + ErrorText(w.Err)
	}
	return append(lines, line, fmt.Sprintf("last ping %s: %s; %s", w.At.UTC().Format(time.RFC3339), what, answer))
}

// matrixLines are the lines of the Matrix section.
func matrixLines(homeserver string, h MatrixHealth) []string {
	lines := []string{fmt.Sprintf("homeserver %s as %s in %s", homeserver, h.UserID, h.RoomID)}
	if h.Encryption {
		lines = append(lines, fmt.Sprintf("device %s, end-to-end encryption on", h.DeviceID))
	} else {
		lines = append(lines, fmt.Sprintf("device %s, end-to-end encryption off", h.DeviceID))
	}
	if !h.LastSync.IsZero() {
		lines = append(lines, fmt.Sprintf("last sync %s", h.LastSync.Format(time.RFC3339Nano)))
	}
	if h.SyncError != "" {
		lines = append(lines, "sync failing: "+ErrorText(h.SyncError))
	}
	return lines
}

// consoleMatrixLine is the Matrix section in the console, which has no
// connection of its own: the Jarvis running beside it has one.
func consoleMatrixLine(homeserver string) string {
	if homeserver == "" {
		return "no homeserver: this workspace is used from the console alone"
	}
	return fmt.Sprintf("the console does not talk to %s itself; Jarvis's own `!sys status` shows its connection", homeserver)
}

// outboxLines are the lines of the Outbox section.
func outboxLines(ctx context.Context, outbox OutboxStatus) ([]string, error) {
	depth, err := outbox.Depth(ctx)
	if err != nil {
		return nil, err
	}
	lastErr, err := outbox.LastError(ctx)
	if err != nil {
		return nil, err
	}
	if lastErr == "" {
		lastErr = "none"
	} else {
		lastErr = ErrorText(lastErr)
	}
	lines := []string{fmt.Sprintf("%d waiting, last send error: %s", depth, lastErr)}
	given, last, err := outbox.GivenUp(ctx)
	if err != nil || last == nil {
		return lines, err
	}
	return append(lines, givenUpLine(given, *last)), nil
}

// givenUpLine is the `!sys status` line of the notices the sender gave up
// on: how many, and the latest with where it was going and why. The
// destination and the refusal are shown as data: a user ID or the
// homeserver's words may hold anything.
func givenUpLine(n int, last core.OutboxEntry) string {
	return fmt.Sprintf("%s given up after %d refusals in a row (kept, not retried); the latest, %s for %s at %s: %s",
		core.Plural(n, "notice", "notices"), core.MaxRefusals, core.CodeSpan(last.Key), core.CodeSpan(last.Destination()),
		last.FailedAt.UTC().Format(time.RFC3339), ErrorText(last.LastError))
}

// domainLines are the lines about what Jarvis keeps for people:
// tripwires by status, the evaluator's and the retention loop's last
// passes, open breakers, cards by state and the decisions waiting.
func (s Status) domainLines(ctx context.Context) ([]string, error) {
	counts, err := s.Store.TripwireStatusCounts(ctx)
	if err != nil {
		return nil, err
	}
	lines := []string{fmt.Sprintf("tripwires: %d armed, %d tripped, %d quarantined, %d disabled",
		counts["armed"], counts["tripped"], counts["quarantined"], counts["disabled"])}
	if tick := s.LastTick(); tick != nil {
		line := fmt.Sprintf("evaluator: last pass %s, %d tripwires, %d sources, %d fired, %d reset",
			tick.At.UTC().Format(time.RFC3339), tick.Report.Evaluated, tick.Report.Sources, tick.Report.Fired, tick.Report.Reset)
		if tick.Err != nil {
			line += ", failed: " + tick.Err.Error()
		}
		lines = append(lines, line)
	}
	if r := s.LastRetention(); r != nil {
		lines = append(lines, retentionLine(*r))
	}
	all, err := s.Breakers.StatusAll(ctx)
	if err != nil {
		return nil, err
	}
	var open []string
	for _, b := range all {
		if b.State != breaker.Closed {
			open = append(open, fmt.Sprintf("%s (%s)", b.Agent, b.State))
		}
	}
	if len(open) == 0 {
		lines = append(lines, "breakers: all closed")
	} else {
		lines = append(lines, "breakers not closed: "+strings.Join(open, ", "))
	}
	byState, err := s.Cards(ctx)
	if err != nil {
		return nil, err
	}
	var parts []string
	for _, state := range card.States {
		if n := byState[string(state)]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, state))
		}
	}
	if len(parts) == 0 {
		parts = []string{"none"}
	}
	return append(lines, "cards: "+strings.Join(parts, ", ")+fmt.Sprintf("; decisions waiting: %d", byState[string(card.NeedsDecision)])), nil
}

// retentionLine is the `!sys status` line of the last retention pass.
func retentionLine(r retention.Report) string {
	line := fmt.Sprintf("retention: last pass %s, %s removed (%d sent messages, %d handled events, %d confirmations, %d link codes, %d journal entries, "+
		"%d agent boots and days of spend, %d approval requests, %d attestation subjects, %d deleted tripwires, %d heartbeats, %d resolved incidents, "+
		"%d reminders and tasks, %d consumed events)",
		r.At.UTC().Format(time.RFC3339), core.Plural(r.Removed(), "row", "rows"), r.Notices, r.Events, r.Pending, r.LinkCodes, r.Journal,
		r.Meter, r.Approvals, r.Attestations, r.Tripwires, r.Heartbeats, r.Incidents, r.Reminders, r.Consumed)
	if r.Err != nil {
		line += ", failed: " + r.Err.Error()
	}
	return line
}
