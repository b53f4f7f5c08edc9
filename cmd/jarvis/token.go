package main

import (
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

// newTokenCommand is `jarvis token`: the HTTP API's credentials, one per
// agent and per role, in the database of the configuration file.
func newTokenCommand(configPath *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue, list and revoke the HTTP API's tokens (one per agent and per role)",
		Long: "Every caller of the HTTP API has its own bearer token: an agent token reports for one agent only\n" +
			"(heartbeats, journal, attestations, its cards), a supervisor token opens and verifies breakers, an\n" +
			"orchestrator token publishes card sets, a receiver token delivers Alertmanager's notifications and\n" +
			"sets silences. A token is shown once, when it is issued, and kept as its SHA-256. A revoked token stops working within " + app.RevokedTokenTTL.String() + ", in a running Jarvis too.",
	}
	var role, agent string
	issue := &cobra.Command{
		Use:   "issue",
		Short: "Issue a token and print it (the last word of the output); it is never shown again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.IssueToken(cmd.Context(), cmd.OutOrStdout(), *configPath, role, agent)
		},
	}
	issue.Flags().StringVar(&role, "role", "", "agent, supervisor, orchestrator or receiver (required)")
	issue.Flags().StringVar(&agent, "agent", "", "the agent an agent token reports for (one of fleet.agents)")
	_ = issue.MarkFlagRequired("role")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens: id, role, agent, created, last used (never the secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.ListTokens(cmd.Context(), cmd.OutOrStdout(), *configPath)
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token by its id (see list)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return app.RevokeToken(cmd.Context(), cmd.OutOrStdout(), *configPath, args[0])
		},
	}
	cmd.AddCommand(issue, list, revoke)
	return cmd
}
