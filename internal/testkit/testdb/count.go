package testdb

import (
	"fmt"
	"os"
	"testing"
)

// EnvCount names the environment variable holding a file to which every
// test that gets a PostgreSQL database appends its name, one a line, so
// that CI can tell how many tests ran on PostgreSQL (and that some did).
const EnvCount = "JARVIS_TEST_POSTGRES_COUNT"

// count records that tb runs on PostgreSQL.
func count(tb testing.TB) {
	tb.Helper()
	path := os.Getenv(EnvCount)
	if path == "" {
		return
	}
	// Test processes of several packages append at once: one short
	// O_APPEND write each keeps their lines whole.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		tb.Fatalf("%s: %v", EnvCount, err)
	}
	defer f.Close()
	if _, err := fmt.Fprintln(f, tb.Name()); err != nil {
		tb.Fatalf("%s: %v", EnvCount, err)
	}
}
