package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/bot"
	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/console"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
)

// Exit statuses of `jarvis console -c`, for scripts: 0 when Jarvis
// answered.
const (
	// exitRefused: Jarvis refused the command (unknown, not allowed,
	// bad arguments).
	exitRefused = 1
	// exitConsoleError: it failed on Jarvis's side, no Jarvis acted on it
	// in time, or the console could not start.
	exitConsoleError = 2
)

// consoleOptions are the flags of `jarvis console`.
type consoleOptions struct {
	config  string
	command string
	wait    time.Duration
	history string
}

// newConsoleCommand is `jarvis console`: the operator's conversation with
// Jarvis in a terminal.
func newConsoleCommand() *cobra.Command {
	var opts consoleOptions
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Talk to Jarvis in this terminal: the same commands, sentences and confirmations as in its room",
		Long: "Opens a conversation with Jarvis on the workspace of the configuration file, with or without a homeserver.\n\n" +
			"What you type goes to the Jarvis that holds the workspace lease: a running `jarvis run`, or, when none runs as\n" +
			"it opens, this console, which then holds the lease and runs Jarvis's loops until it closes. The console never sends to\n" +
			"Matrix itself. You are the operator, an admin, named console:<your user> in what Jarvis records.\n\n" +
			"With -c it runs one command or sentence, prints the answer and exits 0 when answered, 1 when Jarvis\n" +
			"refused it, 2 on an error (or when no Jarvis acted on it within --wait).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			err := runConsole(cmd.Context(), opts)
			var ee *exitError
			if err != nil && opts.command != "" && !errors.As(err, &ee) {
				return fail(exitConsoleError, err)
			}
			return err
		},
	}
	// The console's own --config, so that -c can name the command.
	cmd.Flags().StringVar(&opts.config, "config", "config.yaml", "configuration file")
	cmd.Flags().StringVarP(&opts.command, "command", "c", "", "run one command or sentence, print the answer and exit (0 answered, 1 refused, 2 error)")
	cmd.Flags().DurationVar(&opts.wait, "wait", 30*time.Second, "with -c, how long to wait for a Jarvis to act on it")
	cmd.Flags().StringVar(&opts.history, "history", defaultHistory(), "file that keeps what was typed, across sessions")
	return cmd
}

// runConsole opens the workspace, holds its lease while no Jarvis does,
// and runs the console: one command with -c, else the terminal.
func runConsole(ctx context.Context, opts consoleOptions) error {
	cfg, err := config.Load(opts.config)
	if err != nil {
		return fail(exitConfig, err)
	}
	who, err := osUser()
	if err != nil {
		return fail(exitConsoleError, err)
	}
	// The log goes to the ring `!sys logs` reads, not over the terminal.
	a, err := openApp(ctx, opts.config, cfg, io.Discard)
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
		return fail(exitStore, fmt.Errorf("read the workspace lease: %w", err))
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
	if opts.command == "" {
		sessionCfg.Style = true
		return console.Terminal{History: opts.history, Status: a.consoleStatus}.Run(ctx, func(out io.Writer) *console.Session {
			return console.NewSession(sessionCfg, deps, out)
		})
	}
	sessionCfg.Style = isatty.IsTerminal(os.Stdout.Fd())
	var ask func(string) (string, error)
	if isatty.IsTerminal(os.Stdin.Fd()) {
		ask = promptLine
	}
	outcome, err := console.NewSession(sessionCfg, deps, os.Stdout).Run(ctx, opts.command, opts.wait, ask)
	switch {
	case errors.Is(err, console.ErrNoAnswer):
		return fail(exitConsoleError, fmt.Errorf("%w within %s: is the Jarvis holding the workspace lease stuck?", err, opts.wait))
	case err != nil:
		return fail(exitConsoleError, err)
	case outcome == commands.Refused:
		return &exitError{code: exitRefused, err: errors.New("refused")}
	case outcome == commands.Failed:
		return fail(exitConsoleError, errors.New("it failed on Jarvis's side; see `!sys logs`"))
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
		return fail(exitStore, err)
	}
	a.room = room
	if a.room == "" {
		a.room = console.Room
	}
	a.initLease()
	if err := a.initServices(); err != nil {
		return err
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

// osUser names the person at the terminal.
func osUser() (string, error) {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username, nil
	}
	if name := os.Getenv("USER"); name != "" {
		return name, nil
	}
	return "", errors.New("who is at this terminal? neither the user database nor $USER says")
}

// defaultHistory is where the console keeps what was typed:
// $XDG_STATE_HOME/jarvis/console_history, ~/.local/state by default.
func defaultHistory() string {
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

// promptLine asks a question on the terminal for `-c` and reads the
// answer.
func promptLine(prompt string) (string, error) {
	fmt.Print(prompt)
	var b strings.Builder
	buf := make([]byte, 1)
	for {
		n, err := os.Stdin.Read(buf)
		if n == 1 && buf[0] != '\n' {
			b.WriteByte(buf[0])
		}
		if n == 1 && buf[0] == '\n' || err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			return b.String(), err
		}
	}
}
