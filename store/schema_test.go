package store_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestLatestSchemaMatchesNumberedUpgrades: an empty database that Open
// upgrades runs 00-latest-schema.sql alone, from version 0 to the latest,
// and ends with the schema and the rows that the numbered upgrades, run one
// after another from version 0, leave: the same tables, columns (type,
// nullability, default, order), indexes, constraints, triggers, functions
// and sequences, and the same rows in every table.
func TestLatestSchemaMatchesNumberedUpgrades(t *testing.T) {
	ctx := context.Background()
	var latestLog, numberedLog bytes.Buffer
	latest, err := store.Open(ctx, testdb.EmptyConfig(t, testEngine), zerolog.New(&latestLog))
	if err != nil {
		t.Fatalf("open through 00-latest-schema.sql: %v", err)
	}
	defer latest.Close()
	numbered, err := store.OpenThroughNumberedUpgrades(ctx, testdb.EmptyConfig(t, testEngine), zerolog.New(&numberedLog))
	if err != nil {
		t.Fatalf("open through the numbered upgrades: %v", err)
	}
	defer numbered.Close()

	if got, want := upgradesRun(t, &latestLog), []string{fmt.Sprintf("v0 -> v%d", store.LatestVersion)}; !slices.Equal(got, want) {
		t.Errorf("Open ran the upgrades %q on an empty database, want %q", got, want)
	}
	if got := upgradesRun(t, &numberedLog); len(got) != store.LatestVersion {
		t.Errorf("the numbered path ran %d upgrades, want %d: %q", len(got), store.LatestVersion, got)
	}

	want := describeSchema(t, numbered.DB.RawDB, testEngine)
	got := describeSchema(t, latest.DB.RawDB, testEngine)
	for _, line := range got {
		if _, found := slices.BinarySearch(want, line); !found {
			t.Errorf("only from 00-latest-schema.sql: %s", line)
		}
	}
	for _, line := range want {
		if _, found := slices.BinarySearch(got, line); !found {
			t.Errorf("only from the numbered upgrades: %s", line)
		}
	}
}

// upgradesRun reads the upgrades dbutil logged running, as "vFROM -> vTO".
func upgradesRun(t *testing.T, log *bytes.Buffer) []string {
	t.Helper()
	var ran []string
	for line := range strings.Lines(log.String()) {
		var entry struct {
			Message  string `json:"message"`
			From, To int
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if entry.Message == "Upgrading database" {
			ran = append(ran, fmt.Sprintf("v%d -> v%d", entry.From, entry.To))
		}
	}
	return ran
}

// describeSchema lists the schema of db and the rows of its tables, one
// fact a line, sorted: what the catalogue says of each object rather than
// the text that created it, which differs between a CREATE TABLE and the
// CREATE TABLE and ALTER TABLEs that lead to the same table.
func describeSchema(t *testing.T, db *sql.DB, engine string) []string {
	t.Helper()
	var lines, tables []string
	if engine == store.SQLite {
		lines, tables = describeSQLite(t, db)
	} else {
		lines, tables = describePostgres(t, db)
	}
	for _, table := range tables {
		lines = append(lines, queryLines(t, db, "row "+table, "SELECT * FROM "+table)...)
	}
	slices.Sort(lines)
	return lines
}

// describeSQLite lists each object of sqlite_master with, for a table, its
// columns, foreign keys, kind (WITHOUT ROWID, STRICT) and CHECK
// constraints, which only its SQL holds; for an index, its columns, where
// it comes from and its SQL, which holds the WHERE of a partial index; for
// anything else (a virtual table, a trigger, a view), its SQL. SQL is
// compared without comments and with its white space collapsed. It
// returns the tables too.
func describeSQLite(t *testing.T, db *sql.DB) (lines, tables []string) {
	t.Helper()
	type object struct{ kind, name, table, sql string }
	var objects []object
	for _, row := range queryRows(t, db, "SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master") {
		objects = append(objects, object{row[0], row[1], row[2], normalizeSQL(row[3])})
	}
	for _, o := range objects {
		what := o.kind + " " + o.name
		lines = append(lines, fmt.Sprintf("%s on %s", what, o.table))
		switch {
		case o.kind == "table" && strings.HasPrefix(o.sql, "CREATE VIRTUAL TABLE"):
			lines = append(lines, what+" sql "+o.sql)
			lines = append(lines, queryLines(t, db, what+" column", `SELECT cid, name, type, "notnull", quote(dflt_value), pk, hidden FROM pragma_table_xinfo(?)`, o.name)...)
		case o.kind == "table":
			tables = append(tables, o.name)
			lines = append(lines, queryLines(t, db, what+" column", `SELECT cid, name, type, "notnull", quote(dflt_value), pk, hidden FROM pragma_table_xinfo(?)`, o.name)...)
			lines = append(lines, queryLines(t, db, what+" foreign key", `SELECT id, seq, "table", "from", quote("to"), on_update, on_delete, "match" FROM pragma_foreign_key_list(?)`, o.name)...)
			lines = append(lines, queryLines(t, db, what+" kind", `SELECT type, ncol, wr, strict FROM pragma_table_list WHERE schema = 'main' AND name = ?`, o.name)...)
			for _, check := range checkConstraints(o.sql) {
				lines = append(lines, what+" "+check)
			}
		case o.kind == "index":
			lines = append(lines, queryLines(t, db, what, `SELECT "unique", origin, partial FROM pragma_index_list(?) WHERE name = ?`, o.table, o.name)...)
			lines = append(lines, queryLines(t, db, what+" column", `SELECT seqno, cid, quote(name), "desc", coll, "key" FROM pragma_index_xinfo(?)`, o.name)...)
			if o.sql != "" {
				lines = append(lines, what+" sql "+o.sql)
			}
		default:
			lines = append(lines, what+" sql "+o.sql)
		}
	}
	return lines, tables
}

// describePostgres lists the current schema's relations, columns,
// indexes, constraints, sequences, triggers, views and functions as
// PostgreSQL's catalogue describes them. It returns the tables too.
func describePostgres(t *testing.T, db *sql.DB) (lines, tables []string) {
	t.Helper()
	for _, q := range []struct{ what, query string }{
		{"relation", `SELECT relname, relkind, relpersistence FROM pg_class WHERE relnamespace = current_schema()::regnamespace`},
		{"column", `SELECT table_name, ordinal_position, column_name, data_type, is_nullable, coalesce(column_default, 'NULL'),
			is_identity, coalesce(identity_generation, ''), coalesce(collation_name, '')
			FROM information_schema.columns WHERE table_schema = current_schema()`},
		{"index", `SELECT tablename, indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()`},
		{"constraint", `SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
			FROM pg_constraint WHERE connamespace = current_schema()::regnamespace`},
		{"sequence", `SELECT sequence_name, data_type, start_value, minimum_value, maximum_value, increment, cycle_option
			FROM information_schema.sequences WHERE sequence_schema = current_schema()`},
		{"trigger", `SELECT tgrelid::regclass::text, tgname, pg_get_triggerdef(oid) FROM pg_trigger
			WHERE NOT tgisinternal AND tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace = current_schema()::regnamespace)`},
		{"view", `SELECT viewname, definition FROM pg_views WHERE schemaname = current_schema()`},
		{"function", `SELECT proname, pg_get_function_identity_arguments(oid), pg_get_functiondef(oid)
			FROM pg_proc WHERE pronamespace = current_schema()::regnamespace AND prokind IN ('f', 'p')`},
	} {
		lines = append(lines, queryLines(t, db, q.what, q.query)...)
	}
	for _, row := range queryRows(t, db, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`) {
		tables = append(tables, row[0])
	}
	return lines, tables
}

// queryLines runs query and returns each row as one line: what, then the
// row's values.
func queryLines(t *testing.T, db *sql.DB, what, query string, args ...any) []string {
	t.Helper()
	var lines []string
	for _, row := range queryRows(t, db, query, args...) {
		lines = append(lines, what+" "+strings.Join(row, " | "))
	}
	return lines
}

// queryRows runs query and returns its rows, each value as text.
func queryRows(t *testing.T, db *sql.DB, query string, args ...any) [][]string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var out [][]string
	for rows.Next() {
		values := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range values {
			ptrs[i] = &values[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		row := make([]string, len(values))
		for i, v := range values {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			row[i] = fmt.Sprint(v)
		}
		out = append(out, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return out
}

var (
	sqlComment = regexp.MustCompile(`--[^\n]*`)
	whiteSpace = regexp.MustCompile(`\s+`)
	checkStart = regexp.MustCompile(`(?i)\bCHECK\s*\(`)
)

// normalizeSQL is SQL without comments, its white space collapsed.
func normalizeSQL(sql string) string {
	return strings.TrimSpace(whiteSpace.ReplaceAllString(sqlComment.ReplaceAllString(sql, ""), " "))
}

// checkConstraints returns the CHECK (…) clauses of a normalised CREATE
// TABLE, in order.
func checkConstraints(sql string) []string {
	var checks []string
	for _, loc := range checkStart.FindAllStringIndex(sql, -1) {
		depth, end := 0, len(sql)
		for i := loc[1] - 1; i < len(sql); i++ {
			if sql[i] == '(' {
				depth++
			} else if sql[i] == ')' {
				if depth--; depth == 0 {
					end = i + 1
					break
				}
			}
		}
		checks = append(checks, sql[loc[0]:end])
	}
	return checks
}
