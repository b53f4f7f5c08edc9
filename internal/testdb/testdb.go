// Package testdb gives tests a fresh PostgreSQL database on the server that
// JARVIS_TEST_POSTGRES names, so that store code runs against both engines.
package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/lib/pq" // the PostgreSQL driver
)

// EnvPostgres names the environment variable holding the connection string
// of a PostgreSQL server on which tests may create and drop databases.
const EnvPostgres = "JARVIS_TEST_POSTGRES"

var (
	adminOnce sync.Once
	admin     *sql.DB
	adminErr  error
	counter   atomic.Int64
)

// server connects to the server EnvPostgres names, once per process.
func server() (*sql.DB, error) {
	adminOnce.Do(func() {
		uri := os.Getenv(EnvPostgres)
		if uri == "" {
			adminErr = fmt.Errorf("%s is not set", EnvPostgres)
			return
		}
		db, err := sql.Open("postgres", uri)
		if err != nil {
			adminErr = err
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

// Available reports whether a PostgreSQL server is reachable, and why not.
func Available() error {
	_, err := server()
	return err
}

// Postgres creates a uniquely named, empty database for t and returns its
// connection string; the database is dropped when t ends. Without a
// reachable server t is skipped, saying why.
func Postgres(t testing.TB) string {
	t.Helper()
	db, err := server()
	if err != nil {
		t.Skipf("PostgreSQL tests skipped: %v", err)
	}
	name := fmt.Sprintf("jarvis_test_%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e6, counter.Add(1))
	if _, err := db.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	count(t)
	t.Cleanup(func() {
		if _, err := db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)"); err != nil {
			t.Logf("drop database %s: %v", name, err)
		}
	})
	uri, err := withDatabase(os.Getenv(EnvPostgres), name)
	if err != nil {
		t.Fatalf("connection string for %s: %v", name, err)
	}
	return uri
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
