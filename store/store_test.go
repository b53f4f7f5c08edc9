package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/internal/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// testEngine is the engine the current run of the package's tests uses:
// TestMain runs every test and benchmark once on SQLite, then once more on
// PostgreSQL when a server is reachable (JARVIS_TEST_POSTGRES).
var testEngine = store.SQLite

func TestMain(m *testing.M) {
	fmt.Println("=== store tests on SQLite")
	code := m.Run()
	if err := testdb.Available(); err != nil {
		fmt.Printf("=== store tests on PostgreSQL skipped: %v\n", err)
		os.Exit(code)
	}
	testEngine = store.Postgres
	fmt.Println("=== store tests on PostgreSQL")
	if pgCode := m.Run(); code == 0 {
		code = pgCode
	}
	os.Exit(code)
}

// newTestConfig returns the config of a fresh, empty database for t on the
// engine of this run: a SQLite file in t.TempDir(), or a new database on
// the PostgreSQL test server. Opening it twice gives two stores on one
// database, as two Jarvis processes or a restart would.
func newTestConfig(t testing.TB) store.Config {
	t.Helper()
	if testEngine == store.Postgres {
		return store.Config{Type: store.Postgres, URI: testdb.Postgres(t)}
	}
	return store.Config{Type: store.SQLite, URI: filepath.Join(t.TempDir(), "jarvis.db")}
}

// openTestConfig opens a store on cfg, closed when t ends.
func openTestConfig(t testing.TB, cfg store.Config) *store.Store {
	t.Helper()
	s, err := store.Open(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("open %s store: %v", cfg.Type, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// openTestStore opens a fresh store on the engine of this run.
func openTestStore(t testing.TB) *store.Store {
	t.Helper()
	return openTestConfig(t, newTestConfig(t))
}
