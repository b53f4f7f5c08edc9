// Package testdb gives tests a store on a fresh database of either engine:
// a SQLite file in the test's temporary directory, or a database of its
// own on the PostgreSQL server that JARVIS_TEST_POSTGRES names.
//
// A PostgreSQL test database is a copy of a template that already has the
// latest schema, so a test does not wait for the upgrades. The template is
// named after a hash of the upgrade files: the first test process that
// needs it builds it, under an advisory lock, and later runs (and other
// worktrees with the same upgrades) reuse it. The next copy is made while
// a test runs, and a test's database is dropped in the background after
// it; what a process leaves behind when it exits, the next one drops.
package testdb

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/store"
)

// EnvPostgres names the environment variable holding the connection string
// of a PostgreSQL server on which tests may create and drop databases.
// When it is set, a server that cannot be reached fails the tests that
// need it; when it is not, they are skipped.
const EnvPostgres = "JARVIS_TEST_POSTGRES"

// EnvEngine names the environment variable that keeps a test process to
// one engine ("sqlite" or "postgres"), so that a suite can run on both
// side by side, one process each.
const EnvEngine = "JARVIS_TEST_ENGINE"

// Engines returns the engines tests run on: SQLite, and PostgreSQL when
// EnvPostgres is set; only the one EnvEngine names when it is set.
func Engines() []string {
	engines := []string{store.SQLite}
	if os.Getenv(EnvPostgres) != "" {
		engines = append(engines, store.Postgres)
	}
	if only := os.Getenv(EnvEngine); only != "" {
		return slices.DeleteFunc(engines, func(e string) bool { return e != only })
	}
	return engines
}

// OpenStore opens a store on a fresh database of engine with the latest
// schema; it is closed, and a PostgreSQL database dropped, when tb ends.
func OpenStore(tb testing.TB, engine string) *store.Store {
	tb.Helper()
	return OpenConfig(tb, NewConfig(tb, engine))
}

// OpenConfig opens a store on cfg, closed when tb ends. Opening one config
// twice gives two stores on one database, as two Jarvis processes or a
// restart would. The store judges the lease by the clock its callers
// pass, which tests set by hand, on both engines.
func OpenConfig(tb testing.TB, cfg store.Config) *store.Store {
	tb.Helper()
	st := OpenDBClock(tb, cfg)
	st.JudgeLeasesByCallerClock()
	return st
}

// OpenDBClock opens a store on cfg as Jarvis does, judging the lease by
// the database's clock on PostgreSQL; it is closed when tb ends.
func OpenDBClock(tb testing.TB, cfg store.Config) *store.Store {
	tb.Helper()
	st, err := store.Open(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		tb.Fatalf("open %s store: %v", cfg.Type, err)
	}
	tb.Cleanup(func() { st.Close() })
	return st
}

// NewConfig returns the config of a fresh database of engine that
// store.Open finds at the latest schema (a SQLite file gets it on the
// first open, which is quick). A PostgreSQL database is dropped when tb
// ends.
func NewConfig(tb testing.TB, engine string) store.Config {
	tb.Helper()
	return newConfig(tb, engine, true)
}

// EmptyConfig returns the config of a fresh database of engine without any
// schema, for tests of the upgrades themselves and of what a first start
// on an empty database does.
func EmptyConfig(tb testing.TB, engine string) store.Config {
	tb.Helper()
	return newConfig(tb, engine, false)
}

func newConfig(tb testing.TB, engine string, schema bool) store.Config {
	tb.Helper()
	switch engine {
	case store.SQLite:
		return store.Config{Type: store.SQLite, URI: filepath.Join(tb.TempDir(), "jarvis.db")}
	case store.Postgres:
		// The pool config.example.yaml sets.
		return store.Config{Type: store.Postgres, URI: postgres(tb, schema), MaxOpenConns: 16,
			IdleInTransactionTimeout: 30 * time.Second, TCPKeepalive: 15 * time.Second}
	}
	tb.Fatalf("no engine %q", engine)
	return store.Config{}
}

// Rows counts the rows of table in st; table may go on with a WHERE
// clause.
func Rows(tb testing.TB, st *store.Store, table string) int {
	tb.Helper()
	var n int
	if err := st.DB.QueryRow(context.Background(), "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		tb.Fatalf("count %s: %v", table, err)
	}
	return n
}
