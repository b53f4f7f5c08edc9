package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mattn/go-isatty"

	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/console"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
)

// ConsoleOptions are what `jarvis console` is asked.
type ConsoleOptions struct {
	// ConfigPath is the configuration file of the workspace.
	ConfigPath string
	// Command, when set, is the one command or sentence to run (-x): the
	// answer is printed and Console returns.
	Command string
	// Out is where a Command's answer is printed; nil is standard output.
	Out io.Writer
	// Wait is how long Command waits for a Jarvis to act on it.
	Wait time.Duration
	// History is the file that keeps what was typed, across sessions.
	History string
	// Version is this build's, for the log and `!sys status`.
	Version string
}

// DefaultConsoleHistory is where the console keeps what was typed unless
// told otherwise: $XDG_STATE_HOME/jarvis/console_history, ~/.local/state
// by default.
func DefaultConsoleHistory() string {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "jarvis", "console_history")
}

// Console opens the workspace, holds its lease while no Jarvis does, and
// runs the console: the one command of opts, else the terminal. With a
// command, a refusal is ErrRefused, and any failure of no other kind
// ErrConsole.
func Console(ctx context.Context, opts ConsoleOptions) error {
	err := runConsole(ctx, opts)
	if err != nil && opts.Command != "" && Kind(err) == nil {
		return fail(ErrConsole, err)
	}
	return err
}

// runConsole opens the workspace, holds its lease while no Jarvis does,
// and runs the console: one command with -c, else the terminal.
func runConsole(ctx context.Context, opts ConsoleOptions) error {
	cfg, err := config.Load(opts.ConfigPath)
	if err != nil {
		return fail(ErrConfig, err)
	}
	who, err := console.User()
	if err != nil {
		return fail(ErrConsole, err)
	}
	// The log goes to the ring `!sys logs` reads, not over the terminal.
	a, err := openApp(ctx, opts.ConfigPath, opts.Version, cfg, io.Discard)
	if err != nil {
		return err
	}
	defer a.Close()
	if err := a.initConsole(ctx); err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	var loops sync.WaitGroup
	defer func() {
		cancel()
		loops.Wait()
	}()
	// With no homeserver there is no `jarvis run`: the console serves the
	// agents' API, its writes refused while another console leads.
	if cfg.Homeserver.URL == "" {
		a.initAPI()
	}
	if a.api != nil {
		loops.Go(func() {
			if err := a.api.Run(ctx); err != nil && ctx.Err() == nil {
				a.log.Err(err).Msg("The API stopped")
				fmt.Fprintf(os.Stderr, "jarvis: the API stopped: %v\n", err)
			}
		})
	}
	// When no Jarvis holds the lease as the console opens, the console
	// takes it and leads as the holder would until it closes. Otherwise it
	// stays a client and never contends: a `jarvis run` restarting under
	// an open console gets its lease back, rather than finding the console
	// in charge and staying mute.
	switch _, err := a.lease.Acquire(ctx); {
	case err == nil:
		a.log.Info().Msg("This console holds the workspace lease")
		loops.Go(func() { a.keepLease(ctx, func(context.Context, bool, int64) {}) })
	case errors.Is(err, core.ErrLeaseHeld):
	default:
		return fail(ErrStore, fmt.Errorf("read the workspace lease: %w", err))
	}

	operator := cfg.Console.Operator
	if operator == "" && len(cfg.Bot.Admins) > 0 {
		operator = cfg.Bot.Admins[0]
	}
	sessionCfg := console.Config{User: who, Operator: operator}
	deps := console.Deps{Store: a.store, Notices: a.outbox, Clock: a.clock, Kick: a.relay.Kick,
		Describe: func(ctx context.Context, request string) (string, error) {
			img, err := a.drawChart(ctx, request)
			return img.Description, err
		}}
	if opts.Command == "" {
		sessionCfg.Style = true
		return console.Terminal{History: opts.History, Status: a.consoleStatus}.Run(ctx, func(out io.Writer) *console.Session {
			return console.NewSession(sessionCfg, deps, out)
		})
	}
	sessionCfg.Style = isatty.IsTerminal(os.Stdout.Fd())
	var ask func(string) (string, error)
	if isatty.IsTerminal(os.Stdin.Fd()) {
		ask = console.PromptLine
	}
	out := opts.Out
	if out == nil {
		out = os.Stdout
	}
	outcome, err := console.NewSession(sessionCfg, deps, out).Run(ctx, opts.Command, opts.Wait, ask)
	switch {
	case errors.Is(err, console.ErrNoAnswer):
		return fail(ErrConsole, fmt.Errorf("%w within %s: is the Jarvis holding the workspace lease stuck?", err, opts.Wait))
	case err != nil:
		return fail(ErrConsole, err)
	case outcome == commands.Refused:
		return fail(ErrRefused, errors.New("refused"))
	case outcome == commands.Failed:
		return fail(ErrConsole, errors.New("it failed on Jarvis's side; see `!sys logs`"))
	}
	return nil
}

// initConsole wires Jarvis without Matrix: the processor, the lease, the
// services and the commands. The dedicated room is the one the bot found
// when it last ran, where the room's notices wait for it; a workspace
// with no homeserver has the consoles' room instead.
func (a *App) initConsole(ctx context.Context) error {
	a.initProcessor()
	room, err := a.store.State(ctx, bot.StateRoomID)
	if err != nil {
		return fail(ErrStore, err)
	}
	a.room = room
	if a.room == "" {
		a.room = console.Room
	}
	a.initLease()
	if err := a.initServices(ctx); err != nil {
		return err
	}
	if err := a.initModel(); err != nil {
		return fail(ErrConfig, err)
	}
	a.initCommands()
	return nil
}

// consoleStatus is the figures of the console's status line.
func (a *App) consoleStatus(ctx context.Context) (console.Status, error) {
	var st console.Status
	rec, err := a.lease.Live(ctx)
	switch {
	case errors.Is(err, core.ErrNotFound):
	case err != nil:
		return st, err
	default:
		st.Holder, st.Here = rec.Holder, rec.Holder == a.lease.Holder()
	}
	if st.OutboxDepth, err = a.outbox.Depth(ctx); err != nil {
		return st, err
	}
	all, err := a.breakers.StatusAll(ctx)
	if err != nil {
		return st, err
	}
	for _, b := range all {
		if b.State != breaker.Closed {
			st.OpenBreakers = append(st.OpenBreakers, b.Agent)
		}
	}
	counts, err := cardCounts(ctx, a.cards)
	st.Questions = counts[string(card.NeedsDecision)]
	return st, err
}
