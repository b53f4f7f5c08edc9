package store_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestSecretNoticeIsBlankedOnceSent sends a notice that shows a token and
// looks for the token afterwards: in the outbox row, and on store.SQLite in the
// bytes of the database file and its write-ahead log.
func TestSecretNoticeIsBlankedOnceSent(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	s := testdb.OpenConfig(t, cfg)
	const token = "jvs_SECRETTOKEN0123456789abcdefghijklmnop"
	o := s.Outbox()
	if err := o.Enqueue(ctx, core.Notice{Key: "reply:$tok:1", RoomID: "!dm:test", Kind: core.NoticeMessage, Secret: true,
		Body: "Your token: `" + token + "`"}); err != nil {
		t.Fatal(err)
	}
	if err := o.Enqueue(ctx, core.Notice{Key: "reply:$other:1", RoomID: "!dm:test", Kind: core.NoticeMessage, Body: "not a secret"}); err != nil {
		t.Fatal(err)
	}
	waiting, err := o.Waiting(ctx, 10)
	if err != nil || len(waiting) != 2 || !waiting[0].Secret || !strings.Contains(waiting[0].Body, token) {
		t.Fatalf("waiting = %+v (%v), want the secret notice first, marked secret, with its body", waiting, err)
	}
	if err := o.MarkSent(ctx, []string{waiting[0].Key, waiting[1].Key}, "$ev", time.Now()); err != nil {
		t.Fatal(err)
	}
	got, err := o.Get(ctx, waiting[0].Key)
	if err != nil || got.Body != "" || got.SentAt.IsZero() {
		t.Errorf("sent secret notice = %+v (%v), want the row kept with a blank body", got, err)
	}
	if other, err := o.Get(ctx, "reply:$other:1"); err != nil || other.Body != "not a secret" {
		t.Errorf("other notice = %+v (%v), want its body kept", other, err)
	}
	if cfg.Type != store.SQLite {
		return
	}
	var secureDelete int
	if err := s.DB.QueryRow(ctx, "PRAGMA secure_delete").Scan(&secureDelete); err != nil || secureDelete != 1 {
		t.Errorf("secure_delete = %d (%v), want 1", secureDelete, err)
	}
	for _, path := range []string{cfg.URI, cfg.URI + "-wal"} {
		data, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(data, []byte(token)) {
			t.Errorf("%s still holds the token's bytes", path)
		}
	}
}

// TestSizeNamesTheEngineOnly: `!sys status` reads the engine and size,
// never the URI with its credentials.
func TestSizeNamesTheEngineOnly(t *testing.T) {
	cfg := testdb.NewConfig(t, testEngine)
	s := testdb.OpenConfig(t, cfg)
	engine, size, err := s.Size(context.Background())
	want := map[string]string{store.SQLite: "SQLite", store.Postgres: "PostgreSQL"}[cfg.Type]
	if err != nil || engine != want || size <= 0 {
		t.Errorf("Size() = %q, %d, %v; want %q and a size", engine, size, err, want)
	}
}

// TestSQLiteFilesArePrivate opens a SQLite database in a directory that
// does not exist yet, under a umask that leaves new files readable by
// everyone, writes to it, and finds the directory 0700 and the database,
// its write-ahead log and its shared-memory index 0600.
func TestSQLiteFilesArePrivate(t *testing.T) {
	ctx := context.Background()
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "jarvis")
	cfg := store.Config{Type: store.SQLite, URI: filepath.Join(dir, "jarvis.db")}
	s := testdb.OpenConfig(t, cfg)
	if err := s.Outbox().Enqueue(ctx, core.Notice{Key: "k", RoomID: "!r:test", Kind: core.NoticeMessage, Body: "hello"}); err != nil {
		t.Fatal(err)
	}
	want := map[string]os.FileMode{dir: 0o700}
	for _, f := range cfg.Files() {
		want[f] = 0o600
	}
	for path, mode := range want {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != mode {
			t.Errorf("%s is %#o, want %#o", filepath.Base(path), got, mode)
		}
	}
}
