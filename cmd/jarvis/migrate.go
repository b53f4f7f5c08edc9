package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/store"
)

// exitTargetNotEmpty: `jarvis migrate` refused a target that holds data.
const exitTargetNotEmpty = 12

// newMigrateCommand is `jarvis migrate`: copy a stopped workspace's data
// from its SQLite file into an empty PostgreSQL database.
func newMigrateCommand() *cobra.Command {
	var from, to string
	cmd := &cobra.Command{
		Use:   "migrate --from sqlite:PATH --to postgres:URI",
		Short: "Copy a stopped workspace from SQLite to PostgreSQL",
		Long: "Copies every table of a workspace's SQLite file into a PostgreSQL database, in one transaction,\n" +
			"and checks the row count of every table afterwards. Stop Jarvis first: a live workspace lease on\n" +
			"the source is refused. The target database must exist and hold no Jarvis data (exit code 12\n" +
			"otherwise); its tables are created. Then set store.type: postgres and store.uri to the target.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			src, err := parseStoreFlag("--from", from, store.SQLite)
			if err != nil {
				return fail(exitUsage, err)
			}
			dst, err := parseStoreFlag("--to", to, store.Postgres)
			if err != nil {
				return fail(exitUsage, err)
			}
			return migrate(cmd.Context(), cmd.OutOrStdout(), src, dst)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the source: sqlite:PATH (required)")
	cmd.Flags().StringVar(&to, "to", "", "the target: postgres:URI, or a postgres:// URL (required)")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// parseStoreFlag reads ENGINE:LOCATION; a postgres:// or postgresql:// URL
// stands for itself.
func parseStoreFlag(flag, value, want string) (store.Config, error) {
	if strings.HasPrefix(value, "postgres://") || strings.HasPrefix(value, "postgresql://") {
		value = "postgres:" + value
	}
	engine, location, ok := strings.Cut(value, ":")
	if engine == "sqlite" {
		engine = store.SQLite
	}
	if !ok || location == "" || engine != want {
		return store.Config{}, fmt.Errorf("%s must be %s:LOCATION, not %q", flag, strings.TrimSuffix(want, "3"), value)
	}
	return store.Config{Type: engine, URI: location}, nil
}

// migrate copies src into dst and prints the row count of every table.
func migrate(ctx context.Context, w io.Writer, srcCfg, dstCfg store.Config) error {
	if _, err := os.Stat(srcCfg.URI); err != nil {
		return fail(exitStore, fmt.Errorf("no SQLite database at %s: %w", srcCfg.URI, err))
	}
	src, err := store.Open(ctx, srcCfg, zerolog.Nop())
	if err != nil {
		return fail(exitStore, fmt.Errorf("open the source: %w", err))
	}
	defer src.Close()
	dst, err := store.Open(ctx, dstCfg, zerolog.Nop())
	if err != nil {
		return fail(exitStore, fmt.Errorf("open the target: %w", err))
	}
	defer dst.Close()
	start := time.Now()
	counts, err := src.CopyTo(ctx, dst, start)
	switch {
	case errors.Is(err, store.ErrTargetNotEmpty):
		return fail(exitTargetNotEmpty, err)
	case err != nil:
		return fail(exitFailure, fmt.Errorf("migrate: %w", err))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\tsqlite\tpostgres\t")
	total := 0
	for _, c := range counts {
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", c.Table, c.Source, c.Target)
		total += c.Target
	}
	tw.Flush()
	fmt.Fprintf(w, "Copied %d rows in %d tables in %s; every count matches.\n", total, len(counts), time.Since(start).Round(time.Millisecond))
	return nil
}
