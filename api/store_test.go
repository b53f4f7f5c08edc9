package api_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/internal/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// openAPIStore opens a fresh store on engine: a SQLite file in
// t.TempDir(), or a new database on the PostgreSQL test server (skipped,
// saying why, when there is none).
func openAPIStore(t testing.TB, engine string) *store.Store {
	t.Helper()
	cfg := store.Config{Type: store.SQLite, URI: filepath.Join(t.TempDir(), "jarvis.db")}
	if engine == store.Postgres {
		cfg = store.Config{Type: store.Postgres, URI: testdb.Postgres(t)}
	}
	st, err := store.Open(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("open %s store: %v", engine, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// onEachEngine runs a benchmark once on SQLite and once on PostgreSQL.
func onEachEngine(b *testing.B, bench func(b *testing.B, engine string)) {
	for _, engine := range []string{store.SQLite, store.Postgres} {
		b.Run(engine, func(b *testing.B) { bench(b, engine) })
	}
}
