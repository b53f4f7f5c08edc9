package app

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

// TestRunWithoutHomeserver: `jarvis run` refuses a workspace with no
// homeserver, naming homeserver.url.
func TestRunWithoutHomeserver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.yaml")
	text := "homeserver:\n  url: \"\"\nstore:\n  uri: " + filepath.Join(t.TempDir(), "jarvis.db") + "\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), path, "test")
	var fe *core.FieldError
	if !errors.As(err, &fe) || fe.Field != "homeserver.url" {
		t.Fatalf("jarvis run without a homeserver: %v, want an error naming homeserver.url", err)
	}
}
