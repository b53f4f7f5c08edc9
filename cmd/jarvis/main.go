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
	"runtime"
	"syscall"
	_ "time/tzdata" // history.time_zone names a zone even where the host has no zoneinfo

	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// The build's version (the VERSION file), commit and date, set by `make`
// with -ldflags "-X main.version=… -X main.commit=… -X main.date=…".
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// versionLine is what `jarvis version` and `jarvis --version` print.
func versionLine() string {
	return fmt.Sprintf("jarvis %s (commit %s, built %s)", version, commit, date)
}

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

// defaultConfig is the configuration file of a command given no --config.
const defaultConfig = "config.yaml"

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
		Version:       version,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runJarvis(cmd.Context(), configPath)
		},
	}
	root.SetVersionTemplate(versionLine() + "\n")
	configPath = defaultConfig
	config := &configFlag{path: &configPath}
	root.PersistentFlags().VarP(config, "config", "c", "configuration file")
	root.AddCommand(
		newCircuitBreakerCommand(&configPath),
		newTokenCommand(&configPath),
		newAgentCommand(&configPath),
		newMigrateCommand(),
		newBackupCommand(&configPath),
		newConsoleCommand(config),
		newConfigCommand(&configPath),
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
			Short: "Print the version, the commit and the build date",
			Args:  cobra.NoArgs,
			Run: func(cmd *cobra.Command, _ []string) {
				fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			},
		},
	)
	return root
}

// runJarvis runs Jarvis until a signal, a failure, or `!sys restart`,
// which starts the same binary again once the store is closed.
func runJarvis(ctx context.Context, configPath string) error {
	metrics.BuildInfo.WithLabelValues(version, commit, runtime.Version()).Set(1)
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
