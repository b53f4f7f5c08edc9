package main

import (
	"github.com/spf13/cobra"

	"github.com/jarvis-hmi/jarvis/app"
)

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
			return app.Migrate(cmd.Context(), cmd.OutOrStdout(), from, to)
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the source: sqlite:PATH (required)")
	cmd.Flags().StringVar(&to, "to", "", "the target: postgres:URI, or a postgres:// URL (required)")
	_ = cmd.MarkFlagRequired("from")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
