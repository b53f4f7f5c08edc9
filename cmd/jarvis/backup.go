package main

import (
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

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
			"bot.encryption.pickle_key. On PostgreSQL, use pg_dump instead (see Backups in docs/operating.md).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.Backup(cmd.Context(), cmd.OutOrStdout(), *configPath, to, force)
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the file to write (required); its directory must exist")
	cmd.Flags().BoolVar(&force, "force", false, "replace PATH if it exists")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
