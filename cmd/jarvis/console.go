package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

// newConsoleCommand is `jarvis console`: the operator's conversation with
// Jarvis in a terminal. Its -c is --config, as everywhere; the one-shot
// command is -x.
func newConsoleCommand(config *configFlag) *cobra.Command {
	opts := app.ConsoleOptions{Version: version}
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Talk to Jarvis in this terminal: the same commands, sentences and confirmations as in its room",
		Long: "Opens a conversation with Jarvis on the workspace of the configuration file, with or without a homeserver.\n\n" +
			"What you type goes to the Jarvis that holds the workspace lease: a running `jarvis run`, or, when none runs as\n" +
			"it opens, this console, which then holds the lease and runs Jarvis's loops until it closes. The console never sends to\n" +
			"Matrix itself. You are the operator, an admin, named console:<your user> in what Jarvis records.\n\n" +
			"With -x it runs one command or sentence, prints the answer and exits 0 when answered, 1 when Jarvis\n" +
			"refused it, 2 on an error (or when no Jarvis acted on it within --wait).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.ConfigPath, opts.Out = *config.path, cmd.OutOrStdout()
			if line, path, ok := config.legacyCommand(opts.Command); ok {
				// Until the next release, `console -c '!fleet'` still
				// runs the command, as it did when -c was --command.
				fmt.Fprintf(cmd.ErrOrStderr(), "jarvis: warning: -c is --config now; this release still runs %q as a command, "+
					"the next one will not: write -x %q\n", line, line)
				opts.Command, opts.ConfigPath = line, path
			}
			return app.Console(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Command, "command", "x", "", "run one command or sentence, print the answer and exit (0 answered, 1 refused, 2 error)")
	cmd.Flags().DurationVar(&opts.Wait, "wait", 30*time.Second, "with -x, how long to wait for a Jarvis to act on it")
	cmd.Flags().StringVar(&opts.History, "history", app.DefaultConsoleHistory(), "file that keeps what was typed, across sessions")
	return cmd
}

// configFlag is --config/-c: the path the commands read, and every value
// it was given, in order (the old `console --config F -c '!fleet'` gives
// two).
type configFlag struct {
	path   *string
	values []string
}

func (f *configFlag) Set(v string) error {
	*f.path = v
	f.values = append(f.values, v)
	return nil
}

func (f *configFlag) String() string { return *f.path }
func (f *configFlag) Type() string   { return "string" }

// legacyCommand is what an old `console -c LINE` meant when -x is not
// given and the last --config/-c names no configuration file (no such
// file, and no .yaml or .yml name): LINE as the command, and the
// configuration file given before it, or the default.
func (f *configFlag) legacyCommand(command string) (line, path string, ok bool) {
	if command != "" || len(f.values) == 0 {
		return "", "", false
	}
	last := f.values[len(f.values)-1]
	if _, err := os.Stat(last); err == nil || strings.HasSuffix(last, ".yaml") || strings.HasSuffix(last, ".yml") {
		return "", "", false
	}
	path = defaultConfig
	if len(f.values) > 1 {
		path = f.values[len(f.values)-2]
	}
	return last, path, true
}
