package main

import (
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

// defaultCLIEvents is how many events `circuit-breaker events` lists
// without --limit.
const defaultCLIEvents = 10

// newCircuitBreakerCommand is `jarvis circuit-breaker`: the operator's view
// of the agents' breakers on Jarvis's own database, and the overrule while
// no Jarvis runs.
func newCircuitBreakerCommand(configPath *string) *cobra.Command {
	var agent, eventID string
	var limit int
	cmd := &cobra.Command{
		Use:   "circuit-breaker",
		Short: "Show an agent's circuit breaker and its halts, or overrule it while Jarvis is stopped",
		Long: "Reads the agents' circuit breakers in the database of the configuration file.\n\n" +
			"status exits with code 10 while the agent is halted (the breaker is open), so that scripts and\n" +
			"scheduled turns can refuse to run it; closed and half-open exit 0.\n" +
			"reset overrules the breaker only when no Jarvis holds the workspace lease (exit code 11 otherwise):\n" +
			"a running Jarvis is asked in its room with `!breaker reset <event>`.",
	}
	cmd.PersistentFlags().StringVar(&agent, "agent", "", "the agent whose breaker to use (required)")
	_ = cmd.MarkPersistentFlagRequired("agent")

	status := &cobra.Command{
		Use:   "status",
		Short: "Print the breaker's state, and the reason when open (exit code 10)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.BreakerStatus(cmd.Context(), cmd.OutOrStdout(), *configPath, agent)
		},
	}
	events := &cobra.Command{
		Use:   "events",
		Short: "List the agent's recent halts, newest first, with their history",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.BreakerEvents(cmd.Context(), cmd.OutOrStdout(), *configPath, agent, limit)
		},
	}
	events.Flags().IntVar(&limit, "limit", defaultCLIEvents, "how many halts to list")
	reset := &cobra.Command{
		Use:   "reset",
		Short: "Overrule: close the breaker at once, as operator@<host>, while no Jarvis runs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.BreakerReset(cmd.Context(), cmd.OutOrStdout(), *configPath, agent, eventID)
		},
	}
	reset.Flags().StringVar(&eventID, "event", "", "the event to overrule (default: the one holding the breaker now)")
	cmd.AddCommand(status, events, reset)
	return cmd
}
