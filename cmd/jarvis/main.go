// Command jarvis is the always-on human-machine interface of a workspace:
// a Matrix bot that people talk to and agents report to. This is its
// command line: the flags, each subcommand handing over to the app
// package, and the exit codes.
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

	"github.com/jarvis-hmi/jarvis/app"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

// exitCodes are the exit codes of the kinds of failure, one each, so that
// a supervisor, a script and a person reading `systemctl status` can tell
// them apart (see app.Kind). An error of no kind, such as a flag's, is
// exitUsage.
var exitCodes = map[error]int{
	app.ErrFailed:         1,
	app.ErrRefused:        1, // `console -c`: Jarvis refused the command
	app.ErrConfig:         2,
	app.ErrFileMode:       6,
	app.ErrConsole:        2, // `console -c`: failed on Jarvis's side, or no Jarvis acted on it in time
	app.ErrStore:          3,
	app.ErrMatrix:         4,
	app.ErrAPI:            5,
	app.ErrBreakerOpen:    10,
	app.ErrLeaseHeld:      11,
	app.ErrTargetNotEmpty: 12,
	app.ErrBackupExists:   13,
	app.ErrUsage:          exitUsage,
}

// exitUsage ends a command that was asked wrongly.
const exitUsage = 64

// exitCode is the exit code err ends the process with.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if code, ok := exitCodes[app.Kind(err)]; ok {
		return code
	}
	return exitUsage
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	err := newRootCommand().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "jarvis:", err)
	}
	os.Exit(exitCode(err))
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
		newAgentCommand(&configPath),
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

// runJarvis runs Jarvis until a signal, a failure, or `!sys restart`,
// which starts the same binary again once the store is closed.
func runJarvis(ctx context.Context, configPath string) error {
	a, err := app.New(ctx, configPath, version)
	if errors.Is(err, app.ErrStopped) {
		return nil
	}
	if err != nil {
		return err
	}
	err = a.Run(ctx)
	a.Close()
	switch {
	case errors.Is(err, app.ErrRestart):
		a.Log().Info().Msg("Restarting")
		return app.Reexec()
	case err != nil:
		return err
	}
	a.Log().Info().Msg("Jarvis stopped")
	return nil
}
