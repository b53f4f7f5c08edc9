package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/jarvis-hmi/jarvis/config"
	"github.com/jarvis-hmi/jarvis/store"
)

// Backup copies the SQLite database of the configuration at configPath to
// the file to, consistently, while Jarvis runs (see store.BackupSQLite),
// and prints what it wrote. An existing file is ErrBackupExists unless
// force; errors name to as the --to flag.
func Backup(ctx context.Context, w io.Writer, configPath, to string, force bool) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return fail(ErrConfig, err)
	}
	if cfg.Store.Type != store.SQLite {
		return fail(ErrUsage, errors.New("store.type is postgres: back it up with pg_dump "+
			"(pg_dump --format=custom --file=jarvis.dump URI; see Backups in docs/operating.md)"))
	}
	if err := checkBackupTarget(to, cfg.Store.URI, force); err != nil {
		return err
	}
	return backup(ctx, w, cfg.Store.URI, to, force)
}

// checkBackupTarget refuses a PATH that cannot take the copy, before
// anything is written.
func checkBackupTarget(to, source string, force bool) error {
	if to == "" {
		return fail(ErrUsage, errors.New("--to is empty: name the file to write"))
	}
	dir := filepath.Dir(to)
	if fi, err := os.Stat(dir); err != nil {
		return fail(ErrUsage, fmt.Errorf("--to %s: the directory %s does not exist", to, dir))
	} else if !fi.IsDir() {
		return fail(ErrUsage, fmt.Errorf("--to %s: %s is not a directory", to, dir))
	}
	fi, err := os.Stat(to)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fail(ErrUsage, fmt.Errorf("--to %s: %w", to, err))
	case fi.IsDir():
		return fail(ErrUsage, fmt.Errorf("--to %s is a directory: name the file to write in it", to))
	}
	if src, err := os.Stat(source); err == nil && os.SameFile(src, fi) {
		return fail(ErrUsage, fmt.Errorf("--to %s is the workspace's database itself (store.uri)", to))
	}
	if !force {
		return fail(ErrBackupExists, fmt.Errorf("--to %s exists: pass --force to replace it", to))
	}
	return nil
}

// backup copies the database at source to to and prints what it wrote.
func backup(ctx context.Context, w io.Writer, source, to string, force bool) error {
	report, err := store.BackupSQLite(ctx, source, to, force)
	switch {
	case errors.Is(err, os.ErrExist):
		return fail(ErrBackupExists, fmt.Errorf("--to %s exists: pass --force to replace it", to))
	case err != nil:
		return fail(ErrStore, fmt.Errorf("backup: %w", err))
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
