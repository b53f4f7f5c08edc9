package store

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// backupTables are the tables whose row counts a backup reports: what
// people and agents set up, and, with encryption on, Jarvis's own keys.
// A table the database does not have (no crypto tables while encryption
// has never been on) is left out of the report.
var backupTables = []string{
	"tripwire", "tripwire_journal", "breaker", "breaker_event", "card", "outbox",
	"api_credential", "workspace_lease",
	"crypto_account", "crypto_olm_session", "crypto_megolm_inbound_session",
}

// BackupReport is what BackupSQLite wrote.
type BackupReport struct {
	// Bytes is the size of the copy.
	Bytes int64
	// Version is the schema version of the source and of the copy.
	Version int
	// Rows has the row count of each of backupTables in the copy.
	Rows []TableRows
}

// TableRows is one table's row count.
type TableRows struct {
	Table string
	Rows  int
}

// BackupSQLite copies the SQLite database at src to dst with VACUUM INTO,
// while a Jarvis may be running on it. The source is opened read-only:
// the copy is one read transaction, so it is a consistent snapshot, and
// the source is never written (no lease, no upgrade). The copy is written
// to a temporary file (mode 0600) beside dst, checked (integrity_check,
// the same schema version as the source), flushed to disk and only then
// put in place. The copy leaves out one thing: the outbound megolm
// sessions (see dropOutboundSessions). An existing dst is refused with an error that wraps
// os.ErrExist unless overwrite is set.
func BackupSQLite(ctx context.Context, src, dst string, overwrite bool) (BackupReport, error) {
	if fi, err := os.Stat(src); err != nil {
		return BackupReport{}, fmt.Errorf("the source: %w", err)
	} else if !fi.Mode().IsRegular() {
		return BackupReport{}, fmt.Errorf("the source %s is not a file", src)
	}
	srcDB, err := openReadOnly(src)
	if err != nil {
		return BackupReport{}, fmt.Errorf("open the source: %w", err)
	}
	defer srcDB.Close()
	version, err := schemaVersion(ctx, srcDB)
	if err != nil {
		return BackupReport{}, fmt.Errorf("the source %s: %w", src, err)
	}

	tmp, err := os.CreateTemp(filepath.Dir(dst), "."+filepath.Base(dst)+".*.tmp")
	if err != nil {
		return BackupReport{}, fmt.Errorf("create the copy: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	done := false
	defer func() {
		if !done {
			os.Remove(tmpPath)
			os.Remove(tmpPath + "-journal")
		}
	}()
	// VACUUM INTO writes into an empty file that exists, keeping its mode
	// (0600 from CreateTemp): the copy holds hashed tokens and, with
	// encryption on, Jarvis's keys.
	if _, err := srcDB.ExecContext(ctx, "VACUUM INTO ?", tmpPath); err != nil {
		return BackupReport{}, fmt.Errorf("copy the database: %w", err)
	}
	if err := dropOutboundSessions(ctx, tmpPath); err != nil {
		return BackupReport{}, err
	}
	report, err := verifyBackup(ctx, tmpPath, version)
	if err != nil {
		return BackupReport{}, fmt.Errorf("check the copy: %w", err)
	}
	// SQLite does not flush what VACUUM INTO wrote; a copy that a power
	// cut could leave half on disk must not be renamed into place.
	if err := syncFile(tmpPath); err != nil {
		return BackupReport{}, err
	}
	if overwrite {
		err = os.Rename(tmpPath, dst)
	} else if err = os.Link(tmpPath, dst); err == nil {
		// A hard link fails if dst exists, atomically; the temporary name
		// is then dropped.
		err = os.Remove(tmpPath)
	}
	if err != nil {
		return BackupReport{}, fmt.Errorf("put the copy in place: %w", err)
	}
	done = true
	if err := syncFile(filepath.Dir(dst)); err != nil {
		return BackupReport{}, err
	}
	fi, err := os.Stat(dst)
	if err != nil {
		return BackupReport{}, err
	}
	report.Bytes = fi.Size()
	return report, nil
}

// dropOutboundSessions deletes, from the copy, the megolm sessions Jarvis
// encrypts its room messages with. The running Jarvis goes on using them
// after the copy is taken; a Jarvis restored from the copy would encrypt
// again at message indexes people's clients have already seen, and a
// client refuses those as replays (and the same keys would encrypt two
// messages). Without one, the restored Jarvis starts a new session and
// shares it with the room on its first message. Everything that decrypts
// (the olm account and sessions, the inbound megolm sessions) is kept.
func dropOutboundSessions(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer db.Close()
	var n int
	err = db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'crypto_megolm_outbound_session'").Scan(&n)
	if err != nil || n == 0 {
		return err
	}
	if _, err := db.ExecContext(ctx, "DELETE FROM crypto_megolm_outbound_session"); err != nil {
		return fmt.Errorf("drop the outbound megolm sessions from the copy: %w", err)
	}
	return nil
}

// openReadOnly opens a SQLite file so that nothing can be written to it.
func openReadOnly(path string) (*sql.DB, error) {
	q := url.Values{}
	q.Set("mode", "ro")
	q.Set("_busy_timeout", "10000")
	db, err := sql.Open("sqlite3", "file:"+strings.TrimPrefix(path, "file:")+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

// schemaVersion is the version the schema upgrades brought db to.
func schemaVersion(ctx context.Context, db *sql.DB) (int, error) {
	var version int
	err := db.QueryRowContext(ctx, "SELECT version FROM version LIMIT 1").Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("not a Jarvis database (no schema version): %w", err)
	}
	return version, nil
}

// verifyBackup checks the copy at path and counts its rows.
func verifyBackup(ctx context.Context, path string, version int) (BackupReport, error) {
	db, err := openReadOnly(path)
	if err != nil {
		return BackupReport{}, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return BackupReport{}, fmt.Errorf("integrity check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			rows.Close()
			return BackupReport{}, err
		}
		problems = append(problems, line)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return BackupReport{}, fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) != 1 || problems[0] != "ok" {
		return BackupReport{}, fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	got, err := schemaVersion(ctx, db)
	if err != nil {
		return BackupReport{}, err
	}
	if got != version {
		return BackupReport{}, fmt.Errorf("schema version %d, the source's is %d", got, version)
	}
	report := BackupReport{Version: version}
	for _, table := range backupTables {
		var n int
		err := db.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", table).Scan(&n)
		if err != nil {
			return BackupReport{}, err
		}
		if n == 0 {
			continue
		}
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			return BackupReport{}, fmt.Errorf("count %s: %w", table, err)
		}
		report.Rows = append(report.Rows, TableRows{Table: table, Rows: n})
	}
	return report, nil
}

// syncFile flushes a file, or a directory's entries, to disk.
func syncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("flush %s: %w", path, err)
	}
	return nil
}
