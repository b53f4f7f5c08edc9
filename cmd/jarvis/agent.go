package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// newAgentCommand is `jarvis agent`: the agents Jarvis watches beyond the
// configuration file's, in the database of the configuration file.
func newAgentCommand(configPath *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Add, list and remove the agents Jarvis watches, without an edit of the configuration file",
		Long: "The configuration file's fleet.agents stay the static set, changed only there; these commands add\n" +
			"agents beside them, as a supervisor's PUT /api/agents/NAME does. A running Jarvis watches an added\n" +
			"agent within a minute: its first report is expected within its cadence (or by its schedule's next\n" +
			"run) plus its grace. Issue its token with `jarvis token issue --role agent --agent NAME`.",
	}
	var a fleet.AddedAgent
	var cadence, grace time.Duration
	add := &cobra.Command{
		Use:   "add NAME",
		Short: "Add an agent, or change one added before",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a.Name, a.Cadence, a.Grace = args[0], cadence, grace
			return app.AddAgent(cmd.Context(), cmd.OutOrStdout(), *configPath, a)
		},
	}
	add.Flags().DurationVar(&cadence, "cadence", 0, "how often it reports (default 24h; not with --schedule)")
	add.Flags().DurationVar(&grace, "grace", 0, "how long past its expected time a report may come")
	add.Flags().StringVar(&a.Schedule, "schedule", "", `instead of a cadence, a cron schedule: "0 3 * * *", @daily, "@every 6h"`)
	add.Flags().StringVar(&a.TimeZone, "time-zone", "", "the IANA time zone of the schedule (default UTC)")
	add.Flags().StringSliceVar(&a.DependsOn, "depends-on", nil, "the agents it needs to work, comma-separated")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the agents Jarvis watches: the configuration file's and those added",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.ListAgents(cmd.Context(), cmd.OutOrStdout(), *configPath)
		},
	}
	remove := &cobra.Command{
		Use:   "remove NAME",
		Short: "Stop watching an added agent; its history and tokens stay",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.RemoveAgent(cmd.Context(), cmd.OutOrStdout(), *configPath, args[0])
		},
	}
	cmd.AddCommand(add, list, remove)
	return cmd
}
