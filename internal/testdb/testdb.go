// Package testdb gives tests a store on a fresh database of either engine:
// a SQLite file in the test's temporary directory, or a database of its
// own on the PostgreSQL server that JARVIS_TEST_POSTGRES names.
//
// A PostgreSQL test database is a copy of a template that already has the
// latest schema, so a test does not wait for the upgrades. The template is
// named after a hash of the upgrade files: the first test process that
// needs it builds it, under an advisory lock, and later runs (and other
// worktrees with the same upgrades) reuse it.
package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/lib/pq" // the PostgreSQL driver
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/store"
)

// EnvPostgres names the environment variable holding the connection string
// of a PostgreSQL server on which tests may create and drop databases.
// When it is set, a server that cannot be reached fails the tests that
// need it; when it is not, they are skipped.
const EnvPostgres = "JARVIS_TEST_POSTGRES"

// Engines returns the engines tests run on: SQLite, and PostgreSQL when
// EnvPostgres is set.
func Engines() []string {
	if os.Getenv(EnvPostgres) == "" {
		return []string{store.SQLite}
	}
	return []string{store.SQLite, store.Postgres}
}

// OpenStore opens a store on a fresh database of engine with the latest
// schema; it is closed, and a PostgreSQL database dropped, when tb ends.
func OpenStore(tb testing.TB, engine string) *store.Store {
	tb.Helper()
	return OpenConfig(tb, NewConfig(tb, engine))
}

// OpenConfig opens a store on cfg, closed when tb ends. Opening one config
// twice gives two stores on one database, as two Jarvis processes or a
// restart would.
func OpenConfig(tb testing.TB, cfg store.Config) *store.Store {
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
		return store.Config{Type: store.Postgres, URI: postgres(tb, schema)}
	}
	tb.Fatalf("no engine %q", engine)
	return store.Config{}
}

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
	counter   atomic.Int64

	templateOnce sync.Once
	template     string
	templateErr  error
)

// errUnset is why PostgreSQL tests are skipped.
var errUnset = fmt.Errorf("%s is not set", EnvPostgres)

// postgres creates a uniquely named database for tb, dropped when tb ends,
// and returns its connection string. With schema it is a copy of the
// template, else empty.
func postgres(tb testing.TB, schema bool) string {
	tb.Helper()
	db, err := server()
	if errors.Is(err, errUnset) {
		tb.Skipf("PostgreSQL tests skipped: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	create := "CREATE DATABASE %s"
	if schema {
		templateOnce.Do(func() { template, templateErr = makeTemplate(db) })
		if templateErr != nil {
			tb.Fatalf("template database: %v", templateErr)
		}
		create += " TEMPLATE " + template
	}
	name := fmt.Sprintf("jarvis_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, counter.Add(1))
	if _, err := db.Exec(fmt.Sprintf(create, name)); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			tb.Logf("drop database %s: %v", name, err)
		}
	})
	uri, err := withDatabase(os.Getenv(EnvPostgres), name)
	if err != nil {
		tb.Fatalf("connection string for %s: %v", name, err)
	}
	return uri
}

// server connects to the server EnvPostgres names, once per process.
func server() (*sql.DB, error) {
	adminOnce.Do(func() {
		uri := os.Getenv(EnvPostgres)
		if uri == "" {
			adminErr = errUnset
			return
		}
		db, err := sql.Open("postgres", uri)
		if err != nil {
			adminErr = fmt.Errorf("%s: %w", EnvPostgres, err)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			adminErr = fmt.Errorf("no PostgreSQL server at %s: %w", EnvPostgres, err)
			return
		}
		admin = db
	})
	return admin, adminErr
}

// templateLockKey is the advisory lock, on the server's maintenance
// database, that test processes take to look for and build a template.
const templateLockKey = 0x6a61727669730003 // "jarvis" 3

// makeTemplate returns the name of the template database for the current
// upgrade files, building it if no earlier process has. It is built under
// another name and renamed when complete, so a process that finds the
// name finds a whole schema; it takes no connections, as a template that
// anyone is connected to cannot be copied.
func makeTemplate(db *sql.DB) (string, error) {
	hash, err := upgradesHash()
	if err != nil {
		return "", err
	}
	name := "jarvis_template_" + hash[:16]
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(templateLockKey)); err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", int64(templateLockKey))
	var exists bool
	if err := conn.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&exists); err != nil {
		return "", err
	}
	if exists {
		return name, nil
	}
	// A process that died while building left this behind.
	build := name + "_build"
	if _, err := conn.ExecContext(ctx, "DROP DATABASE IF EXISTS "+build+" WITH (FORCE)"); err != nil {
		return "", err
	}
	if _, err := conn.ExecContext(ctx, "CREATE DATABASE "+build); err != nil {
		return "", err
	}
	uri, err := withDatabase(os.Getenv(EnvPostgres), build)
	if err != nil {
		return "", err
	}
	st, err := store.Open(ctx, store.Config{Type: store.Postgres, URI: uri}, zerolog.Nop())
	if err != nil {
		return "", fmt.Errorf("upgrade %s: %w", build, err)
	}
	if err := st.Close(); err != nil {
		return "", err
	}
	for _, stmt := range []string{
		"ALTER DATABASE " + build + " WITH IS_TEMPLATE true ALLOW_CONNECTIONS false",
		"ALTER DATABASE " + build + " RENAME TO " + name,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return "", err
		}
	}
	return name, nil
}

// upgradesHash is a hex SHA-256 of the upgrade files' names and contents.
func upgradesHash() (string, error) {
	h := sha256.New()
	upgrades := store.Upgrades()
	err := fs.WalkDir(upgrades, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(upgrades, path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", path, len(body))
		h.Write(body)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash the upgrades: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// withDatabase replaces the database in a connection string, in either the
// URL or the key=value form.
func withDatabase(uri, name string) (string, error) {
	if strings.HasPrefix(uri, "postgres://") || strings.HasPrefix(uri, "postgresql://") {
		u, err := url.Parse(uri)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		return u.String(), nil
	}
	return uri + " dbname=" + name, nil
}
