package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// openTestStore opens a fresh store on a real SQLite file in t.TempDir().
func openTestStore(t testing.TB) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Type: "sqlite3", URI: filepath.Join(t.TempDir(), "jarvis.db")}, zerolog.Nop())
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
