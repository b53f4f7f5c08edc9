package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

// newConsoleCommand is `jarvis console`: the operator's conversation with
// Jarvis in a terminal.
func newConsoleCommand() *cobra.Command {
	opts := app.ConsoleOptions{Version: version}
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
			return app.Console(cmd.Context(), opts)
		},
	}
	// The console's own --config, so that -c can name the command.
	cmd.Flags().StringVar(&opts.ConfigPath, "config", "config.yaml", "configuration file")
	cmd.Flags().StringVarP(&opts.Command, "command", "c", "", "run one command or sentence, print the answer and exit (0 answered, 1 refused, 2 error)")
	cmd.Flags().DurationVar(&opts.Wait, "wait", 30*time.Second, "with -c, how long to wait for a Jarvis to act on it")
	cmd.Flags().StringVar(&opts.History, "history", app.DefaultConsoleHistory(), "file that keeps what was typed, across sessions")
	return cmd
}
