package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleRefusesFilesOpenToOthers: a configuration file or a SQLite
// database (or its write-ahead log) that its group or others may read is
// refused before anything is opened, naming the files and the chmod that
// fixes them; once fixed, the console starts.
func TestConsoleRefusesFilesOpenToOthers(t *testing.T) {
	for _, tt := range []struct {
		name       string
		config, db os.FileMode
		wal        os.FileMode // 0: no write-ahead log
		open       []string
	}{
		{name: "a world-readable config", config: 0o644, db: 0o600, open: []string{"config.yaml"}},
		{name: "a group-readable database", config: 0o600, db: 0o640, open: []string{"jarvis.db"}},
		{name: "a world-readable write-ahead log", config: 0o600, db: 0o600, wal: 0o644, open: []string{"jarvis.db-wal"}},
		{name: "both", config: 0o604, db: 0o644, open: []string{"config.yaml", "jarvis.db"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			cfgPath, db := filepath.Join(dir, "config.yaml"), filepath.Join(dir, "jarvis.db")
			write := func(path string, text string, mode os.FileMode) {
				if err := os.WriteFile(path, []byte(text), mode); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(path, mode); err != nil {
					t.Fatal(err)
				}
			}
			write(cfgPath, "homeserver:\n  url: \"\"\nstore:\n  uri: "+db+"\n", tt.config)
			write(db, "", tt.db)
			if tt.wal != 0 {
				write(db+"-wal", "", tt.wal)
			}
			err := Console(context.Background(), ConsoleOptions{ConfigPath: cfgPath, Command: "!ping", Version: "test"})
			if !errors.Is(err, ErrFileMode) {
				t.Fatalf("got %v, want ErrFileMode", err)
			}
			var chmod []string
			for _, name := range tt.open {
				chmod = append(chmod, filepath.Join(dir, name))
			}
			if want := "run `chmod 600 " + strings.Join(chmod, " ") + "`"; !strings.HasSuffix(err.Error(), want) {
				t.Errorf("the refusal reads %q, want it to end %q", err, want)
			}
			fi, err := os.Stat(db)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Size() != 0 {
				t.Errorf("the database was opened: %d bytes", fi.Size())
			}
		})
	}
}
