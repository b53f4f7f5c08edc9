package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/store"
)

// BreakerStatus prints where the agent's breaker stands, in the database
// of the configuration at configPath; open is ErrBreakerOpen.
func BreakerStatus(ctx context.Context, w io.Writer, configPath, agent string) error {
	return withBreakers(ctx, configPath, func(cli *breakerCLI) error { return cli.status(ctx, w, agent) })
}

// BreakerEvents prints the agent's latest halts, at most limit (from 1 to
// breaker.MaxEvents, the --limit flag), with their audit trail.
func BreakerEvents(ctx context.Context, w io.Writer, configPath, agent string, limit int) error {
	if limit < 1 || limit > breaker.MaxEvents {
		return fail(ErrUsage, fmt.Errorf("--limit must be from 1 to %d, not %d", breaker.MaxEvents, limit))
	}
	return withBreakers(ctx, configPath, func(cli *breakerCLI) error { return cli.events(ctx, w, agent, limit) })
}

// BreakerReset overrules the agent's breaker as operator@<host>: it closes
// it at once, for the event eventID (empty: the one holding it now),
// unless a running Jarvis holds the workspace lease (ErrLeaseHeld).
func BreakerReset(ctx context.Context, w io.Writer, configPath, agent, eventID string) error {
	return withBreakers(ctx, configPath, func(cli *breakerCLI) error { return cli.reset(ctx, w, agent, eventID) })
}

// breakerCLI is the breaker service on Jarvis's database, with what the
// overrule needs to stay out of a running Jarvis's way.
type breakerCLI struct {
	st       *store.Store
	cfg      breaker.Config
	deps     breaker.Deps
	breakers *breaker.Service
	lease    *lease.Lease
}

// withBreakers opens the database of the configuration and runs fn on it.
func withBreakers(ctx context.Context, configPath string, fn func(cli *breakerCLI) error) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return fail(ErrConfig, err)
	}
	// Opening a database creates it: a missing file means the wrong
	// configuration, not an agent that was never halted.
	if cfg.Store.Type == store.SQLite {
		path := strings.TrimPrefix(cfg.Store.URI, "file:")
		path, _, _ = strings.Cut(path, "?")
		if _, err := os.Stat(path); err != nil {
			return fail(ErrStore, fmt.Errorf("no Jarvis database at %s (store.uri of %s): %w", path, configPath, err))
		}
	}
	st, err := store.Open(ctx, cfg.Store, zerolog.Nop())
	if err != nil {
		return fail(ErrStore, err)
	}
	defer st.Close()
	clock := core.SystemClock{}
	cli := &breakerCLI{st: st, cfg: cfg.Breaker,
		deps:  breaker.Deps{Store: st.Breakers(), Tx: st, Outbox: st.Outbox(), Clock: clock, Admins: cfg.Bot.Admins},
		lease: lease.New(cfg.Workspace.Lease(), lease.Deps{Store: st.Leases(), Tx: st, Outbox: st.Outbox(), Clock: clock})}
	cli.breakers = breaker.NewService(cli.cfg, cli.deps)
	return fn(cli)
}

// status prints where the agent's breaker stands; open is ErrBreakerOpen.
func (c *breakerCLI) status(ctx context.Context, w io.Writer, agent string) error {
	st, err := c.breakers.Status(ctx, agent)
	if err != nil {
		return breakerCLIError(err)
	}
	ev := st.Event
	switch {
	case st.State == breaker.Open && ev != nil:
		fmt.Fprintf(w, "%s: open since %s: the agent is halted\n", agent, cliTime(st.Since))
		printBreakerEvent(w, *ev)
		if ev.ReviewedBy != "" {
			fmt.Fprintf(w, "  reviewing: %s since %s\n", ev.ReviewedBy, cliTime(ev.ReviewedAt))
		}
		fmt.Fprintf(w, "Do not run %s. In the room, an admin resumes it with `!breaker resume %s` or overrules with `!breaker reset %s`;\n"+
			"while no Jarvis runs: jarvis circuit-breaker reset --agent %s\n", agent, ev.ID, ev.ID, agent)
		return fail(ErrBreakerOpen, fmt.Errorf("circuit breaker of %s is open (event %s): %s", agent, ev.ID, ev.Reason))
	case st.State == breaker.HalfOpen && ev != nil:
		fmt.Fprintf(w, "%s: half-open since %s: a trial run after a halt\n", agent, cliTime(st.Since))
		printBreakerEvent(w, *ev)
		fmt.Fprintf(w, "%s may run; the supervisor's verification closes the breaker or opens it again.\n", agent)
		return nil
	}
	fmt.Fprintf(w, "%s: closed\n", agent)
	last, err := c.breakers.Events(ctx, agent, 1)
	if err != nil {
		return breakerCLIError(err)
	}
	if len(last) == 0 {
		fmt.Fprintf(w, "%s has never been halted.\n", agent)
		return nil
	}
	fmt.Fprintf(w, "Last halt: %s at %s, %s.\n", last[0].ID, cliTime(last[0].At), cliOutcome(last[0], st))
	return nil
}

// events prints the agent's latest halts with their audit trail.
func (c *breakerCLI) events(ctx context.Context, w io.Writer, agent string, limit int) error {
	st, err := c.breakers.Status(ctx, agent)
	if err != nil {
		return breakerCLIError(err)
	}
	evs, err := c.breakers.Events(ctx, agent, limit)
	if err != nil {
		return breakerCLIError(err)
	}
	if len(evs) == 0 {
		fmt.Fprintf(w, "%s has never been halted.\n", agent)
		return nil
	}
	for i, ev := range evs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s  %s  %s\n", ev.ID, cliTime(ev.At), cliOutcome(ev, st))
		printBreakerEvent(w, ev)
		history, err := c.breakers.History(ctx, ev.ID)
		if err != nil {
			return breakerCLIError(err)
		}
		fmt.Fprintln(w, "  history:")
		for _, t := range history {
			fmt.Fprintf(w, "    %s  %s by %s (%s -> %s)", cliTime(t.At), t.Action, t.Actor, t.From, t.To)
			if t.Why != "" && t.Action != breaker.ActOpen {
				fmt.Fprintf(w, ": %s", oneLine(t.Why))
			}
			fmt.Fprintln(w)
		}
	}
	return nil
}

// reset overrules the breaker as operator@<host>, unless a running Jarvis
// holds the workspace lease: that Jarvis must make the change, so that
// it is fenced and announced at once.
func (c *breakerCLI) reset(ctx context.Context, w io.Writer, agent, eventID string) error {
	if err := c.noLiveLease(ctx, eventID); err != nil {
		return err
	}
	st, err := c.breakers.Status(ctx, agent)
	if err != nil {
		return breakerCLIError(err)
	}
	if eventID == "" {
		if st.Event == nil {
			fmt.Fprintf(w, "%s: closed, nothing to reset.\n", agent)
			return nil
		}
		eventID = st.Event.ID
	}
	ev, err := c.breakers.Event(ctx, eventID)
	if err != nil {
		return breakerCLIError(err)
	}
	if ev.Agent != agent {
		return fail(ErrFailed, fmt.Errorf("event %s is a halt of %s, not of %s; nothing changed", eventID, ev.Agent, agent))
	}
	// The edits and replies go to the room of the halt notice; a Jarvis
	// sends them when it next runs.
	notice, err := c.st.Outbox().Get(ctx, ev.NoticeKey())
	if err != nil {
		return fail(ErrFailed, fmt.Errorf("find the halt notice of %s: %w", eventID, err))
	}
	deps := c.deps
	deps.Room = notice.RoomID
	c.st.SetFence(func(ctx context.Context) error { return c.noLiveLease(ctx, eventID) })
	c.breakers = breaker.NewService(c.cfg, deps)
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	who := "operator@" + host
	if _, err := c.breakers.Reset(ctx, eventID, who); err != nil {
		if errors.Is(err, core.ErrIllegalTransition) {
			return fail(ErrFailed, fmt.Errorf("event %s no longer holds the breaker of %s (it is %s); nothing changed. "+
				"See: jarvis circuit-breaker events --agent %s", eventID, agent, st.State, agent))
		}
		return breakerCLIError(err)
	}
	fmt.Fprintf(w, "%s: closed. Overruled event %s as %s; the audit trail records it, and Jarvis tells the room when it next runs.\n",
		agent, eventID, who)
	return nil
}

// noLiveLease refuses when a Jarvis holds the workspace lease now. Inside
// the reset's transaction it also keeps a Jarvis from taking the lease
// before the reset commits.
func (c *breakerCLI) noLiveLease(ctx context.Context, eventID string) error {
	// The store judges the expiry by the clock that judges leases (the
	// database's on PostgreSQL), not this host's.
	rec, err := c.lease.Live(ctx)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fail(ErrStore, err)
	}
	event := eventID
	if event == "" {
		event = "<event>"
	}
	return fail(ErrLeaseHeld, fmt.Errorf("%w: Jarvis %s holds the lease of workspace %q until %s and must make this change. "+
		"Reset the breaker in its room with `!breaker reset %s` (admins), or stop that Jarvis first. Nothing changed",
		core.ErrLeaseHeld, rec.Holder, rec.WorkspaceID, cliTime(rec.ExpiresAt), event))
}

// printBreakerEvent prints an event's details, indented.
func printBreakerEvent(w io.Writer, ev breaker.Event) {
	fmt.Fprintf(w, "  event:     %s (%s), opened %s by %s\n", ev.ID, ev.Severity, cliTime(ev.At), ev.OpenedBy)
	fmt.Fprintf(w, "  reason:    %s\n", oneLine(ev.Reason))
	for i, e := range ev.Evidence {
		fmt.Fprintf(w, "  evidence:  [%d] %s\n", i+1, oneLine(e))
	}
	if ev.PreviousID != "" {
		fmt.Fprintf(w, "  follows:   %s, whose trial failed\n", ev.PreviousID)
	}
}

// cliOutcome says how an event ended, or that it holds the breaker now.
func cliOutcome(ev breaker.Event, st breaker.Status) string {
	switch ev.Resolution {
	case breaker.Verified:
		return fmt.Sprintf("verified by %s at %s", ev.ResolvedBy, cliTime(ev.ResolvedAt))
	case breaker.Overruled:
		return fmt.Sprintf("overruled by %s at %s", ev.ResolvedBy, cliTime(ev.ResolvedAt))
	case breaker.Superseded:
		return fmt.Sprintf("trial failed at %s, continued as %s", cliTime(ev.ResolvedAt), ev.NextID)
	}
	if st.EventID == ev.ID && st.State != breaker.Closed {
		return string(st.State) + " now"
	}
	return "unresolved"
}

// breakerCLIError gives core's errors their kind.
func breakerCLIError(err error) error {
	switch {
	case Kind(err) != nil:
		return err
	case errors.Is(err, core.ErrLeaseHeld):
		return fail(ErrLeaseHeld, err)
	case errors.Is(err, core.ErrInvalid):
		return fail(ErrUsage, err)
	}
	return fail(ErrFailed, err)
}

func cliTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
