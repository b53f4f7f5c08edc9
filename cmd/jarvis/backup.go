package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/store"
)

// exitBackupExists: `jarvis backup` refused to replace an existing file.
const exitBackupExists = 13

// newBackupCommand is `jarvis backup`: a consistent copy of a workspace's
// SQLite database, taken while Jarvis runs.
func newBackupCommand(configPath *string) *cobra.Command {
	var to string
	var force bool
	cmd := &cobra.Command{
		Use:   "backup --to PATH",
		Short: "Copy the workspace's SQLite database to PATH, consistently, while Jarvis runs",
		Long: "Copies the SQLite database named by store.uri to PATH with VACUUM INTO: one read transaction on\n" +
			"the database opened read-only, so the copy is consistent while Jarvis runs and the source is never\n" +
			"written (no lease is taken). The copy is written to a temporary file beside PATH (mode 0600: it\n" +
			"holds hashed API tokens and, with encryption on, Jarvis's keys), checked (PRAGMA integrity_check,\n" +
			"the same schema version as the source), flushed to disk, and only then renamed to PATH.\n" +
			"An existing PATH is refused (exit code 13) unless --force.\n\n" +
			"To restore: stop Jarvis, put the file where store.uri points, start Jarvis with the same\n" +
			"bot.encryption.pickle_key. On PostgreSQL, use pg_dump instead (see Backups in the README).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := config.Load(*configPath)
			if err != nil {
				return fail(exitConfig, err)
			}
			if cfg.Store.Type != store.SQLite {
				return fail(exitUsage, errors.New("store.type is postgres: back it up with pg_dump "+
					"(pg_dump --format=custom --file=jarvis.dump URI; see Backups in the README)"))
			}
			if err := checkBackupTarget(to, cfg.Store.URI, force); err != nil {
				return err
			}
			return backup(cmd.Context(), cmd.OutOrStdout(), cfg.Store.URI, to, force)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the file to write (required); its directory must exist")
	cmd.Flags().BoolVar(&force, "force", false, "replace PATH if it exists")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}

// checkBackupTarget refuses a PATH that cannot take the copy, before
// anything is written.
func checkBackupTarget(to, source string, force bool) error {
	if to == "" {
		return fail(exitUsage, errors.New("--to is empty: name the file to write"))
	}
	dir := filepath.Dir(to)
	if fi, err := os.Stat(dir); err != nil {
		return fail(exitUsage, fmt.Errorf("--to %s: the directory %s does not exist", to, dir))
	} else if !fi.IsDir() {
		return fail(exitUsage, fmt.Errorf("--to %s: %s is not a directory", to, dir))
	}
	fi, err := os.Stat(to)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fail(exitUsage, fmt.Errorf("--to %s: %w", to, err))
	case fi.IsDir():
		return fail(exitUsage, fmt.Errorf("--to %s is a directory: name the file to write in it", to))
	}
	if src, err := os.Stat(source); err == nil && os.SameFile(src, fi) {
		return fail(exitUsage, fmt.Errorf("--to %s is the workspace's database itself (store.uri)", to))
	}
	if !force {
		return fail(exitBackupExists, fmt.Errorf("--to %s exists: pass --force to replace it", to))
	}
	return nil
}

// backup copies the database at source to to and prints what it wrote.
func backup(ctx context.Context, w io.Writer, source, to string, force bool) error {
	report, err := store.BackupSQLite(ctx, source, to, force)
	switch {
	case errors.Is(err, os.ErrExist):
		return fail(exitBackupExists, fmt.Errorf("--to %s exists: pass --force to replace it", to))
	case err != nil:
		return fail(exitStore, fmt.Errorf("backup: %w", err))
	}
	fmt.Fprintf(w, "Wrote %s: %d bytes (%.1f MiB), schema version %d, integrity checked.\n",
		to, report.Bytes, float64(report.Bytes)/(1<<20), report.Version)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "table\trows\t")
	keys := false
	for _, t := range report.Rows {
		fmt.Fprintf(tw, "%s\t%d\t\n", t.Table, t.Rows)
		keys = keys || t.Table == "crypto_account" && t.Rows > 0
	}
	tw.Flush()
	if keys {
		fmt.Fprintln(w, "It holds Jarvis's encryption keys: restoring it needs the same bot.encryption.pickle_key. Keep the key, apart from the file.")
	}
	return nil
}
