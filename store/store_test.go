package store_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// testEngine is the engine the current run of the package's tests uses:
// TestMain runs every test and benchmark once on SQLite, then once more on
// PostgreSQL when JARVIS_TEST_POSTGRES is set (one of them alone when
// JARVIS_TEST_ENGINE names it, as `make test` runs the two side by side).
var testEngine = store.SQLite

func TestMain(m *testing.M) {
	code := 0
	for _, engine := range testdb.Engines() {
		testEngine = engine
		fmt.Printf("=== store tests on %s\n", engine)
		if c := m.Run(); code == 0 {
			code = c
		}
	}
	if only := os.Getenv(testdb.EnvEngine); only != "" {
		fmt.Printf("=== store tests on %s alone: %s is set\n", only, testdb.EnvEngine)
	} else if len(testdb.Engines()) == 1 {
		fmt.Printf("=== store tests on PostgreSQL skipped: %s is not set\n", testdb.EnvPostgres)
	}
	os.Exit(code)
}
