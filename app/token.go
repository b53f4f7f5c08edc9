package app

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/store"
)

// RevokedTokenTTL is how long a revoked token may still work: the API
// caches what it checked for that long, in a running Jarvis too.
const RevokedTokenTTL = credential.CacheTTL

// IssueToken issues a token of role (for agent, with an agent token) in
// the database of the configuration at configPath, and prints it as the
// last word of the output; it is never shown again.
func IssueToken(ctx context.Context, w io.Writer, configPath, role, agent string) error {
	return withCredentials(ctx, configPath, func(creds *credential.Service) error {
		return issueToken(ctx, w, creds, credential.Role(role), agent)
	})
}

// ListTokens prints the tokens: id, role, agent, created, last used (never
// the secret).
func ListTokens(ctx context.Context, w io.Writer, configPath string) error {
	return withCredentials(ctx, configPath, func(creds *credential.Service) error { return listTokens(ctx, w, creds) })
}

// RevokeToken revokes the token with the id (see ListTokens).
func RevokeToken(ctx context.Context, w io.Writer, configPath, id string) error {
	return withCredentials(ctx, configPath, func(creds *credential.Service) error {
		if err := creds.Revoke(ctx, id); err != nil {
			return err
		}
		fmt.Fprintf(w, "Revoked %s; it stops working within %s.\n", id, credential.CacheTTL)
		return nil
	})
}

// withCredentials opens the database of the configuration (creating it if
// it is new, so that tokens can be issued before the first start) and runs
// fn with the credential service on it.
func withCredentials(ctx context.Context, configPath string, fn func(creds *credential.Service) error) error {
	return withStore(ctx, configPath, func(cfg *config.Config, st *store.Store) error {
		agents := make([]string, len(cfg.Fleet.Agents))
		for i, a := range cfg.Fleet.Agents {
			agents[i] = a.Name
		}
		added, err := st.AddedAgents().AddedAgents(ctx)
		if err != nil {
			return fail(ErrStore, err)
		}
		for _, a := range added {
			if !slices.ContainsFunc(agents, func(name string) bool { return strings.EqualFold(name, a.Name) }) {
				agents = append(agents, a.Name)
			}
		}
		return fn(credential.NewService(credential.Deps{Store: st.Credentials(), Clock: core.SystemClock{},
			Agents: func() []string { return agents }}))
	})
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
