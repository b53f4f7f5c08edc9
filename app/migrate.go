package app

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

	"github.com/jarvis-hmi/jarvis/store"
)

// Migrate copies a stopped workspace's SQLite file, from (sqlite:PATH, the
// --from flag), into an empty PostgreSQL database, to (postgres:URI or a
// postgres:// URL, the --to flag), in one transaction, and prints the row
// count of every table. A target that holds data is ErrTargetNotEmpty.
func Migrate(ctx context.Context, w io.Writer, from, to string) error {
	src, err := parseStoreFlag("--from", from, store.SQLite)
	if err != nil {
		return fail(ErrUsage, err)
	}
	dst, err := parseStoreFlag("--to", to, store.Postgres)
	if err != nil {
		return fail(ErrUsage, err)
	}
	return migrate(ctx, w, src, dst)
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
		return fail(ErrStore, fmt.Errorf("no SQLite database at %s: %w", srcCfg.URI, err))
	}
	src, err := store.Open(ctx, srcCfg, zerolog.Nop())
	if err != nil {
		return fail(ErrStore, fmt.Errorf("open the source: %w", err))
	}
	defer src.Close()
	dst, err := store.Open(ctx, dstCfg, zerolog.Nop())
	if err != nil {
		return fail(ErrStore, fmt.Errorf("open the target: %w", err))
	}
	defer dst.Close()
	start := time.Now()
	counts, err := src.CopyTo(ctx, dst, start)
	switch {
	case errors.Is(err, store.ErrTargetNotEmpty):
		return fail(ErrTargetNotEmpty, err)
	case err != nil:
		return fail(ErrFailed, fmt.Errorf("migrate: %w", err))
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
