package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mau.fi/util/dbutil"
)

// Copying a workspace from one database to another (`jarvis migrate`).
const (
	sqliteTablesQuery = `
		SELECT name FROM sqlite_master
		WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT IN ('version', 'database_owner')
		-- The notes' full-text index and its shadow tables are SQLite's
		-- own; PostgreSQL indexes the notes by itself.
		AND name NOT LIKE 'notebook_fts%'
		ORDER BY name`
	sqliteForeignKeysQuery = `SELECT DISTINCT "table" FROM pragma_foreign_key_list($1)`
	sqliteSequenceQuery    = `SELECT seq FROM sqlite_sequence WHERE name = $1`
	sqliteHasSequenceQuery = `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'sqlite_sequence'`
	postgresIdentityQuery  = `
		SELECT column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = $1 AND is_identity = 'YES'`
	liveLeaseQuery = `SELECT holder FROM workspace_lease WHERE expires_at > $1 ORDER BY expires_at DESC LIMIT 1`
)

// seededRows are the rows the schema upgrades themselves insert; a target that
// holds only these is empty.
var seededRows = map[string]int{"tripwire_rev": 1}

// TableCount is how many rows one table held in the source and holds in
// the target after a copy.
type TableCount struct {
	Table  string
	Source int
	Target int
}

// ErrTargetNotEmpty is returned by CopyTo when the target database holds
// data already.
var ErrTargetNotEmpty = errors.New("the target database is not empty")

// ErrSourceInUse is returned by CopyTo when a Jarvis holds a live lease on
// the source database: it must be stopped first.
var ErrSourceInUse = errors.New("a Jarvis holds a live workspace lease on the source database")

// CopyTo copies every row of s, a SQLite store, into dst, a freshly created
// PostgreSQL store with the same schema version, in one transaction on dst:
// tables in foreign-key order, identity sequences moved past the copied
// keys, and the row count of every table verified. It refuses a target
// that holds data and a source that a running Jarvis holds the lease of.
func (s *Store) CopyTo(ctx context.Context, dst *Store, now time.Time) ([]TableCount, error) {
	if s.DB.Dialect != dbutil.SQLite || dst.DB.Dialect != dbutil.Postgres {
		return nil, fmt.Errorf("copy from %s to %s: only SQLite to PostgreSQL is supported", s.DB.Dialect, dst.DB.Dialect)
	}
	var holder string
	err := s.DB.QueryRow(ctx, liveLeaseQuery, now.UnixMilli()).Scan(&holder)
	if err == nil {
		return nil, fmt.Errorf("%w (%s); stop it first", ErrSourceInUse, holder)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("read the source lease: %w", err)
	}
	tables, err := s.sqliteTablesInForeignKeyOrder(ctx)
	if err != nil {
		return nil, err
	}
	for _, table := range tables {
		n, err := countRows(ctx, dst.DB, table)
		if err != nil {
			return nil, fmt.Errorf("count %s in the target: %w", table, err)
		}
		if n > seededRows[table] {
			return nil, fmt.Errorf("%w: table %s has %d rows", ErrTargetNotEmpty, table, n)
		}
	}
	counts := make([]TableCount, 0, len(tables))
	err = dst.DB.DoTxn(ctx, nil, func(ctx context.Context) error {
		for _, table := range tables {
			if seededRows[table] > 0 {
				if _, err := dst.DB.Exec(ctx, "DELETE FROM "+table); err != nil {
					return fmt.Errorf("clear %s: %w", table, err)
				}
			}
			n, err := copyTable(ctx, s.DB, dst.DB, table)
			if err != nil {
				return fmt.Errorf("copy %s: %w", table, err)
			}
			if err := s.fixSequences(ctx, dst.DB, table); err != nil {
				return fmt.Errorf("sequences of %s: %w", table, err)
			}
			got, err := countRows(ctx, dst.DB, table)
			if err != nil {
				return fmt.Errorf("count %s in the target: %w", table, err)
			}
			counts = append(counts, TableCount{Table: table, Source: n, Target: got})
			if got != n {
				return fmt.Errorf("table %s: copied %d rows but the target holds %d", table, n, got)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// Verify again outside the transaction, against the source as it is now.
	for i, c := range counts {
		if c.Source, err = countRows(ctx, s.DB, c.Table); err != nil {
			return nil, fmt.Errorf("count %s in the source: %w", c.Table, err)
		}
		if c.Target, err = countRows(ctx, dst.DB, c.Table); err != nil {
			return nil, fmt.Errorf("count %s in the target: %w", c.Table, err)
		}
		if c.Source != c.Target {
			return counts, fmt.Errorf("table %s: %d rows in the source, %d in the target", c.Table, c.Source, c.Target)
		}
		counts[i] = c
	}
	return counts, nil
}

// sqliteTablesInForeignKeyOrder lists the source's tables so that every
// table comes after the tables its foreign keys refer to.
func (s *Store) sqliteTablesInForeignKeyOrder(ctx context.Context) ([]string, error) {
	rows, err := s.DB.Query(ctx, sqliteTablesQuery)
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	names, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], nil).AsList()
	if err != nil {
		return nil, fmt.Errorf("list tables: %w", err)
	}
	deps := make(map[string][]string, len(names))
	for _, name := range names {
		rows, err := s.DB.Query(ctx, sqliteForeignKeysQuery, name)
		if err != nil {
			return nil, fmt.Errorf("foreign keys of %s: %w", name, err)
		}
		if deps[name], err = dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], nil).AsList(); err != nil {
			return nil, fmt.Errorf("foreign keys of %s: %w", name, err)
		}
	}
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case 1:
			return fmt.Errorf("foreign keys form a cycle through %s", name)
		case 2:
			return nil
		}
		state[name] = 1
		for _, dep := range deps[name] {
			if dep != name && slices.Contains(names, dep) {
				if err := visit(dep); err != nil {
					return err
				}
			}
		}
		state[name] = 2
		order = append(order, name)
		return nil
	}
	for _, name := range names {
		if err := visit(name); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// copyBatch is how many rows one INSERT carries.
const copyBatch = 200

// copyTable copies every row of table from src to dst, in batches, and
// returns how many it copied.
func copyTable(ctx context.Context, src, dst *dbutil.Database, table string) (int, error) {
	rows, err := src.Query(ctx, "SELECT * FROM "+table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	columns, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	insert := func(batch [][]any) error {
		if len(batch) == 0 {
			return nil
		}
		var q strings.Builder
		fmt.Fprintf(&q, "INSERT INTO %s (%s) OVERRIDING SYSTEM VALUE VALUES ", table, strings.Join(columns, ", "))
		args := make([]any, 0, len(batch)*len(columns))
		for i, row := range batch {
			if i > 0 {
				q.WriteString(", ")
			}
			q.WriteByte('(')
			for j, v := range row {
				if j > 0 {
					q.WriteString(", ")
				}
				args = append(args, v)
				fmt.Fprintf(&q, "$%d", len(args))
			}
			q.WriteByte(')')
		}
		_, err := dst.Exec(ctx, q.String(), args...)
		return err
	}
	var batch [][]any
	n := 0
	for rows.Next() {
		values := make([]any, len(columns))
		ptrs := make([]any, len(columns))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		for i, v := range values {
			// SQLite hands TEXT back as bytes at times; PostgreSQL would
			// take bytes for bytea.
			if b, ok := v.([]byte); ok {
				values[i] = string(b)
			}
		}
		batch = append(batch, values)
		n++
		if len(batch) == copyBatch {
			if err := insert(batch); err != nil {
				return n, err
			}
			batch = batch[:0]
		}
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, insert(batch)
}

// fixSequences moves the identity sequences of table in dst past the
// largest key copied and past every key SQLite ever handed out (its
// AUTOINCREMENT never reuses the key of a deleted row, and neither may we).
func (s *Store) fixSequences(ctx context.Context, dst *dbutil.Database, table string) error {
	rows, err := dst.Query(ctx, postgresIdentityQuery, table)
	if err != nil {
		return err
	}
	columns, err := dbutil.NewRowIterWithError(rows, dbutil.ScanSingleColumn[string], nil).AsList()
	if err != nil {
		return err
	}
	if len(columns) == 0 {
		return nil
	}
	var used int64
	var hasSequence int
	if err := s.DB.QueryRow(ctx, sqliteHasSequenceQuery).Scan(&hasSequence); err != nil {
		return err
	}
	if hasSequence > 0 {
		if err := s.DB.QueryRow(ctx, sqliteSequenceQuery, table).Scan(&used); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
	}
	for _, column := range columns {
		q := fmt.Sprintf("SELECT setval(pg_get_serial_sequence('%[1]s', '%[2]s'), GREATEST(COALESCE(MAX(%[2]s), 0), $1::BIGINT) + 1, false) FROM %[1]s", table, column)
		if _, err := dst.Exec(ctx, q, used); err != nil {
			return err
		}
	}
	return nil
}

// countRows counts the rows of table.
func countRows(ctx context.Context, db *dbutil.Database, table string) (int, error) {
	var n int
	err := db.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n)
	return n, err
}
