package main

import (
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

// newConfigCommand is `jarvis config`: the example configuration, and a
// check of a file without starting Jarvis.
func newConfigCommand(configPath *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Print the example configuration, or check a configuration file",
	}
	cmd.AddCommand(
		&cobra.Command{
			Use:   "example",
			Short: "Print the example configuration: every key, its comment and its default (jarvis config example > config.yaml)",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return app.ConfigExample(cmd.OutOrStdout())
			},
		},
		&cobra.Command{
			Use:   "check",
			Short: "Check the configuration file as `jarvis run` reads it, without starting; exit 2 naming each key that is wrong and its line",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				return app.CheckConfig(cmd.OutOrStdout(), *configPath)
			},
		},
	)
	return cmd
}
