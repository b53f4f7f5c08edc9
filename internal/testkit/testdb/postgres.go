package testdb

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the PostgreSQL driver, registered as "pgx"
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/store"
)

// errUnset is why PostgreSQL tests are skipped.
var errUnset = fmt.Errorf("%s is not set", EnvPostgres)

// postgres returns the connection string of a database of tb's own, a
// copy of the template with schema, else empty; it is dropped when tb
// ends.
func postgres(tb testing.TB, schema bool) string {
	tb.Helper()
	srv, err := connect()
	if errors.Is(err, errUnset) {
		tb.Skipf("PostgreSQL tests skipped: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	var name string
	if schema {
		name, err = srv.copy()
	} else {
		name, err = srv.create("")
	}
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { srv.drops <- name })
	count(tb)
	uri, err := withDatabase(srv.uri, name)
	if err != nil {
		tb.Fatalf("connection string for %s: %v", name, err)
	}
	return uri
}

// server is the PostgreSQL server of one test process.
//
// The process's databases are named jarvis_testdb_<number>_<n>, and the
// process holds a session advisory lock on its number for as long as it
// lives. It drops databases in the background once their tests end, and
// makes the next copies of the template while a test runs; those it has
// not dropped when it exits, the next test process that connects finds
// under a number nobody holds, and drops.
type server struct {
	db     *sql.DB
	uri    string
	owner  *sql.Conn // holds the lock on number
	number int32
	n      atomic.Int64
	drops  chan string

	copiesOnce sync.Once
	template   string
	copies     chan made // made ahead, while tests run
	copiesErr  error
}

// made is a database made ahead, or why it could not be.
type made struct {
	name string
	err  error
}

const (
	prefix = "jarvis_testdb_"
	// processLock is the class of the advisory locks on process numbers,
	// and templateLock the lock under which a process looks for the
	// template and builds it; both on the maintenance database.
	processLock  = 0x6a617276 // "jarv"
	templateLock = 0x6a61727669730003
)

var (
	serverOnce sync.Once
	theServer  *server
	serverErr  error
)

// connect connects to the server EnvPostgres names, once per process.
func connect() (*server, error) {
	serverOnce.Do(func() { theServer, serverErr = dial(os.Getenv(EnvPostgres)) })
	return theServer, serverErr
}

func dial(uri string) (*server, error) {
	if uri == "" {
		return nil, errUnset
	}
	db, err := sql.Open("pgx", uri)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvPostgres, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("no PostgreSQL server at %s: %w", EnvPostgres, err)
	}
	s := &server{db: db, uri: uri, drops: make(chan string, 256)}
	if err := s.claim(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("claim a process number: %w", err)
	}
	if err := s.sweep(ctx); err != nil {
		return nil, fmt.Errorf("drop databases of earlier test processes: %w", err)
	}
	go func() {
		for name := range s.drops {
			// What fails here is swept by a later process.
			_, _ = s.db.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)")
		}
	}()
	return s, nil
}

// claim takes a process number no other live process holds.
func (s *server) claim(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	for {
		number := rand.Int32()
		var ok bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1, $2)", processLock, number).Scan(&ok); err != nil {
			conn.Close()
			return err
		}
		if ok {
			s.owner, s.number = conn, number
			return nil
		}
	}
}

// sweep drops the databases of test processes that have exited.
func (s *server) sweep(ctx context.Context) error {
	rows, err := s.db.QueryContext(ctx, `SELECT datname FROM pg_database WHERE starts_with(datname, $1)`, prefix)
	if err != nil {
		return err
	}
	byNumber := map[int32][]string{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			return err
		}
		number, _, _ := strings.Cut(strings.TrimPrefix(name, prefix), "_")
		if n, err := strconv.ParseInt(number, 10, 32); err == nil && int32(n) != s.number {
			byNumber[int32(n)] = append(byNumber[int32(n)], name)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for number, names := range byNumber {
		var gone bool
		if err := s.owner.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1, $2)", processLock, number).Scan(&gone); err != nil {
			return err
		}
		if !gone {
			continue
		}
		for _, name := range names {
			if _, err := s.owner.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
				return err
			}
		}
		if _, err := s.owner.ExecContext(ctx, "SELECT pg_advisory_unlock($1, $2)", processLock, number); err != nil {
			return err
		}
	}
	return nil
}

// create makes a database of this process, a copy of template if one is
// named, else empty. A copy is made file by file: for a database this
// small that costs the server less than logging every page of it.
func (s *server) create(template string) (string, error) {
	name := fmt.Sprintf("%s%d_%d", prefix, s.number, s.n.Add(1))
	stmt := "CREATE DATABASE " + name
	if template != "" {
		stmt += " TEMPLATE " + template + " STRATEGY FILE_COPY"
	}
	if _, err := s.db.Exec(stmt); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return name, nil
}

// copy returns a fresh copy of the template, most often one made while
// the previous test ran.
func (s *server) copy() (string, error) {
	s.copiesOnce.Do(func() {
		s.template, s.copiesErr = s.makeTemplate()
		if s.copiesErr != nil {
			return
		}
		s.copies = make(chan made, 1)
		go func() {
			for {
				name, err := s.create(s.template)
				s.copies <- made{name, err}
			}
		}()
	})
	if s.copiesErr != nil {
		return "", fmt.Errorf("template database: %w", s.copiesErr)
	}
	m := <-s.copies
	return m.name, m.err
}

// makeTemplate returns the name of the template database for the current
// upgrade files, building it if no earlier process has. It is built under
// another name and renamed when complete, so a process that finds the
// name finds a whole schema; it takes no connections, as a template that
// anyone is connected to cannot be copied.
func (s *server) makeTemplate() (string, error) {
	hash, err := upgradesHash()
	if err != nil {
		return "", err
	}
	name := "jarvis_template_" + hash[:16]
	ctx := context.Background()
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(templateLock)); err != nil {
		return "", fmt.Errorf("lock: %w", err)
	}
	defer conn.ExecContext(ctx, "SELECT pg_advisory_unlock($1)", int64(templateLock))
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
	uri, err := withDatabase(s.uri, build)
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
