package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/store"
)

// newTokenCommand is `jarvis token`: the HTTP API's credentials, one per
// agent and per role, in the database of the configuration file.
func newTokenCommand(configPath *string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue, list and revoke the HTTP API's tokens (one per agent and per role)",
		Long: "Every caller of the HTTP API has its own bearer token: an agent token reports for one agent only\n" +
			"(heartbeats, journal, attestations, its cards), a supervisor token opens and verifies breakers, an\n" +
			"orchestrator token publishes card sets. A token is shown once, when it is issued, and kept as its\n" +
			"SHA-256. A revoked token stops working within " + credential.CacheTTL.String() + ", in a running Jarvis too.",
	}
	var role, agent string
	issue := &cobra.Command{
		Use:   "issue",
		Short: "Issue a token and print it (the last word of the output); it is never shown again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCredentials(cmd.Context(), *configPath, func(creds *credential.Service) error {
				return issueToken(cmd.Context(), cmd.OutOrStdout(), creds, credential.Role(role), agent)
			})
		},
	}
	issue.Flags().StringVar(&role, "role", "", "agent, supervisor or orchestrator (required)")
	issue.Flags().StringVar(&agent, "agent", "", "the agent an agent token reports for (one of fleet.agents)")
	_ = issue.MarkFlagRequired("role")
	list := &cobra.Command{
		Use:   "list",
		Short: "List the tokens: id, role, agent, created, last used (never the secret)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withCredentials(cmd.Context(), *configPath, func(creds *credential.Service) error {
				return listTokens(cmd.Context(), cmd.OutOrStdout(), creds)
			})
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke ID",
		Short: "Revoke a token by its id (see list)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withCredentials(cmd.Context(), *configPath, func(creds *credential.Service) error {
				if err := creds.Revoke(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Revoked %s; it stops working within %s.\n", args[0], credential.CacheTTL)
				return nil
			})
		},
	}
	cmd.AddCommand(issue, list, revoke)
	return cmd
}

// withCredentials opens the database of the configuration (creating it if
// it is new, so that tokens can be issued before the first start) and runs
// fn with the credential service on it.
func withCredentials(ctx context.Context, configPath string, fn func(creds *credential.Service) error) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return fail(exitConfig, err)
	}
	st, err := store.Open(ctx, cfg.Store, zerolog.Nop())
	if err != nil {
		return fail(exitStore, err)
	}
	defer st.Close()
	agents := make([]string, len(cfg.Fleet.Agents))
	for i, a := range cfg.Fleet.Agents {
		agents[i] = a.Name
	}
	return fn(credential.NewService(credential.Deps{Store: st.Credentials(), Clock: core.SystemClock{},
		Agents: func() []string { return agents }}))
}

// issueToken issues a token and prints it as the last word.
func issueToken(ctx context.Context, w io.Writer, creds *credential.Service, role credential.Role, agent string) error {
	token, c, err := creds.Issue(ctx, role, agent)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "Issued %s. It is shown only now; give it to its holder and keep it secret:\n%s\n", describeCredential(c), token)
	return nil
}

// describeCredential names a credential in a sentence: "supervisor token
// cred_…", "agent token cred_… for EVE".
func describeCredential(c credential.Credential) string {
	s := fmt.Sprintf("%s token %s", c.Role, c.ID)
	if c.Agent != "" {
		s += " for " + c.Agent
	}
	return s
}

func listTokens(ctx context.Context, w io.Writer, creds *credential.Service) error {
	list, err := creds.List(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "No tokens. Issue one with `jarvis token issue --role agent --agent NAME`.")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tROLE\tAGENT\tCREATED\tLAST USED")
	for _, c := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.ID, c.Role, dashIfEmpty(c.Agent), cliTime(c.CreatedAt), usedText(c.LastUsedAt))
	}
	return tw.Flush()
}

func dashIfEmpty(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}

func usedText(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return cliTime(t)
}
