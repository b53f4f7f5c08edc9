// Command jarvis is the always-on human-machine interface of a workspace:
// a Matrix bot that people talk to and agents report to.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // history.time_zone names a zone even where the host has no zoneinfo

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// Exit codes, one per kind of start-up failure, so that a supervisor (and
// a person reading `systemctl status`) can tell them apart.
const (
	exitOK      = 0
	exitFailure = 1
	exitConfig  = 2
	exitStore   = 3
	exitMatrix  = 4
	exitAPI     = 5
	exitUsage   = 64
)

// exitError carries the exit code a failure should end the process with.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func fail(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err == nil {
		os.Exit(exitOK)
	}
	fmt.Fprintln(os.Stderr, "jarvis:", err)
	var ee *exitError
	if errors.As(err, &ee) {
		os.Exit(ee.code)
	}
	os.Exit(exitUsage)
}

func newRootCommand() *cobra.Command {
	var configPath string
	root := &cobra.Command{
		Use:           "jarvis",
		Short:         "Jarvis, the Matrix bot people talk to and agents report to",
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJarvis(cmd.Context(), configPath)
		},
	}
	root.PersistentFlags().StringVarP(&configPath, "config", "c", "config.yaml", "configuration file")
	root.AddCommand(
		newCircuitBreakerCommand(&configPath),
		newTokenCommand(&configPath),
		newMigrateCommand(),
		newBackupCommand(&configPath),
		newConsoleCommand(),
		&cobra.Command{
			Use:   "run",
			Short: "Run Jarvis (the default)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return runJarvis(cmd.Context(), configPath)
			},
		},
		&cobra.Command{
			Use:   "version",
			Short: "Print the version",
			Args:  cobra.NoArgs,
			Run: func(cmd *cobra.Command, _ []string) {
				fmt.Fprintln(cmd.OutOrStdout(), "jarvis", version)
			},
		},
	)
	return root
}
