package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/schedule"
	"github.com/jarvis-hmi/jarvis/store"
)

// AddAgent adds an agent, or changes one added before, in the database of
// the configuration at configPath, without an edit of the file; a running
// Jarvis watches it from its next sweep of the fleet.
func AddAgent(ctx context.Context, w io.Writer, configPath string, a fleet.AddedAgent) error {
	return withFleet(ctx, configPath, func(f *fleet.Service) error {
		a.By = "cli"
		created, err := f.PutAgent(ctx, a)
		if err != nil {
			return err
		}
		verb := "Changed"
		if created {
			verb = "Added"
		}
		fmt.Fprintf(w, "%s %s. A running Jarvis watches it within a minute; issue its token with "+
			"`jarvis token issue --role agent --agent %s`.\n", verb, a.Name, a.Name)
		return nil
	})
}

// ListAgents prints the agents Jarvis watches: the configuration file's
// and those added over the API or the CLI.
func ListAgents(ctx context.Context, w io.Writer, configPath string) error {
	return withFleet(ctx, configPath, func(f *fleet.Service) error {
		added := map[string]fleet.AddedAgent{}
		for _, a := range f.AddedAgents() {
			added[a.Name] = a
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NAME\tEXPECTED\tGRACE\tDEPENDS ON\tSOURCE")
		for _, a := range f.Agents() {
			expected := "every " + core.HumanDuration(a.Cadence)
			if a.Schedule != "" {
				expected = a.Schedule
				if a.TimeZone != "" {
					expected += " " + a.TimeZone
				}
			}
			source := "config"
			if ad, ok := added[a.Name]; ok {
				source = "added by " + ad.By + " at " + cliTime(ad.At)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a.Name, expected, core.HumanDuration(a.Grace), dashIfEmpty(strings.Join(a.DependsOn, ",")), source)
		}
		return tw.Flush()
	})
}

// RemoveAgent stops watching an agent added over the API or the CLI; its
// history and tokens stay (revoke those with `jarvis token revoke`).
func RemoveAgent(ctx context.Context, w io.Writer, configPath, name string) error {
	return withFleet(ctx, configPath, func(f *fleet.Service) error {
		if err := f.RemoveAgent(ctx, name); err != nil {
			return err
		}
		fmt.Fprintf(w, "Removed %s; a running Jarvis stops watching it within a minute. Its tokens still work: "+
			"revoke them with `jarvis token revoke ID` (see `jarvis token list`).\n", name)
		return nil
	})
}

// withFleet opens the database of the configuration and runs fn with the
// fleet service on it, its added agents read.
func withFleet(ctx context.Context, configPath string, fn func(f *fleet.Service) error) error {
	return withStore(ctx, configPath, func(cfg *config.Config, st *store.Store) error {
		clock := core.SystemClock{}
		incidents := oncall.NewService(cfg.Oncall, oncall.Deps{Store: st.Incidents(), Tx: st, Outbox: st.Outbox(), Clock: clock})
		f, err := fleet.NewService(cfg.Fleet, fleet.Deps{Tx: st, Heartbeats: st.Heartbeats(), Outbox: st.Outbox(), Clock: clock,
			Room: "cli", Incidents: incidents, Agents: st.AddedAgents(), ParseSchedule: schedule.Parse})
		if err != nil {
			return fail(ErrConfig, err)
		}
		if err := f.ReadAgents(ctx); err != nil {
			return fail(ErrStore, err)
		}
		return fn(f)
	})
}

// withStore loads the configuration and opens its database (creating it if
// it is new) for fn, the way every command but run and the console starts.
func withStore(ctx context.Context, configPath string, fn func(cfg *config.Config, st *store.Store) error) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return fail(ErrConfig, err)
	}
	st, err := store.Open(ctx, cfg.Store, zerolog.Nop())
	if err != nil {
		return fail(ErrStore, err)
	}
	defer st.Close()
	return fn(cfg, st)
}
