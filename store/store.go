// Package store keeps Jarvis's state in SQLite or PostgreSQL. It implements
// the store interfaces that core declares.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"strings"
	"sync"

	_ "github.com/lib/pq"           // the PostgreSQL driver, registered as "postgres"
	_ "github.com/mattn/go-sqlite3" // the SQLite driver
	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

//go:embed upgrades/*.sql
var upgrades embed.FS

var upgradeTable = dbutil.BuildUpgradeTable().WithFSPath(upgrades, "upgrades").Finish()

// Upgrades returns the numbered .sql files that Open applies, in order, to
// bring a database to the latest schema.
func Upgrades() fs.FS {
	sub, err := fs.Sub(upgrades, "upgrades")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// Config selects the database.
type Config struct {
	// Type is the engine: "sqlite3" or "postgres".
	Type string
	// URI is the SQLite file path, or a PostgreSQL connection string
	// (postgres://user:password@host:port/db?sslmode=disable, or the
	// key=value form).
	URI string
}

// The engines Config.Type names.
const (
	SQLite   = "sqlite3"
	Postgres = "postgres"
)

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Type != SQLite && c.Type != Postgres:
		return core.Invalid("store.type", "must be sqlite3 or postgres, not %q", c.Type)
	case strings.TrimSpace(c.URI) == "":
		return core.Invalid("store.uri", "is required")
	}
	return nil
}

// Store is the database and every query Jarvis makes of it.
type Store struct {
	DB *dbutil.Database

	// fence runs first in every write transaction: see SetFence.
	fence func(ctx context.Context) error
	// leaseClock: see JudgeLeasesByCallerClock.
	callerClock bool

	outboxOnce sync.Once
	outbox     *Outbox
}

var _ core.Transactor = (*Store)(nil)

// sqliteDSN turns a file path into a go-sqlite3 DSN with WAL, foreign keys,
// immediate transactions and a busy timeout.
func sqliteDSN(path string) string {
	path = strings.TrimPrefix(path, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	q := url.Values{}
	q.Set("_journal_mode", "WAL")
	q.Set("_foreign_keys", "on")
	q.Set("_txlock", "immediate")
	q.Set("_busy_timeout", "10000")
	q.Set("_synchronous", "NORMAL")
	// Deleted and blanked rows (a token's message in the outbox) are
	// overwritten with zeros, so no secret lingers in free pages.
	q.Set("_secure_delete", "on")
	// Hot paths (the evaluator pass, heartbeat batches) run the same few
	// statements over and over; keep them prepared per connection.
	q.Set("_stmt_cache_size", "64")
	return "file:" + path + "?" + q.Encode()
}

// Open opens the database and brings its schema to the latest version.
func Open(ctx context.Context, cfg Config, log zerolog.Logger) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	db, err := openDB(cfg)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.Owner = "jarvis"
	db.UpgradeTable = upgradeTable
	db.Log = dbutil.ZeroLogger(log.With().Str("component", "store").Logger())
	if err := upgrade(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("upgrade database: %w", err)
	}
	return &Store{DB: db}, nil
}

// Size says the store's engine ("SQLite" or "PostgreSQL") and how many
// bytes its database takes, for `!sys status`: never its URI, which may
// hold credentials.
func (s *Store) Size(ctx context.Context) (engine string, bytes int64, err error) {
	query := "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
	engine = "SQLite"
	if s.DB.Dialect == dbutil.Postgres {
		query, engine = "SELECT pg_database_size(current_database())", "PostgreSQL"
	}
	if err := s.DB.QueryRow(ctx, query).Scan(&bytes); err != nil {
		return engine, 0, fmt.Errorf("read the database size: %w", err)
	}
	return engine, bytes, nil
}

// upgradeLockKey is the PostgreSQL advisory lock that Jarvis processes
// starting together on one database take around the schema upgrade.
const upgradeLockKey = 0x6a61727669730001 // "jarvis" 1

// upgrade brings the schema to the latest version. On PostgreSQL a standby
// on another host may start at the same moment as the holder; the advisory
// lock lets one of them upgrade while the other waits and then finds
// nothing left to do.
func upgrade(ctx context.Context, db *dbutil.Database) error {
	if db.Dialect != dbutil.Postgres {
		return db.Upgrade(ctx)
	}
	conn, err := db.RawDB.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(upgradeLockKey)); err != nil {
		return fmt.Errorf("lock for the upgrade: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(upgradeLockKey))
	return db.Upgrade(ctx)
}

// openDB opens the engine cfg names with a pool sized for it.
func openDB(cfg Config) (*dbutil.Database, error) {
	if cfg.Type == Postgres {
		db, err := dbutil.NewWithDialect(cfg.URI, "postgres")
		if err != nil {
			return nil, err
		}
		db.RawDB.SetMaxOpenConns(16)
		db.RawDB.SetMaxIdleConns(4)
		return db, nil
	}
	db, err := dbutil.NewWithDialect(sqliteDSN(cfg.URI), "sqlite3")
	if err != nil {
		return nil, err
	}
	// One writer at a time is all SQLite allows; a small pool keeps
	// readers from waiting on it.
	db.RawDB.SetMaxOpenConns(4)
	return db, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.DB.Close() }

// InTx runs fn in one transaction; store calls made with fn's context join
// it. After a commit the outbox sender is woken, since a notice enqueued
// inside the transaction was invisible to it until then.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := s.tx(ctx, fn); err != nil {
		return err
	}
	s.Outbox().wake()
	return nil
}

// SetFence makes every write transaction run fence first, inside the
// transaction: a Jarvis that no longer holds the workspace lease gets the
// fence's error (core.ErrStaleEpoch) and writes nothing. Contexts marked
// core.Unfenced skip it, and so do the schema upgrades, which do not run
// through InTx. Call it once, before the store is used.
func (s *Store) SetFence(fence func(ctx context.Context) error) { s.fence = fence }

type inTxKey struct{}

// tx runs fn in one transaction, or in the one ctx is in already. The
// outermost transaction runs the fence first and, once it has committed,
// what core.AfterCommit was given inside it.
func (s *Store) tx(ctx context.Context, fn func(ctx context.Context) error) error {
	if ctx.Value(inTxKey{}) != nil {
		return fn(ctx)
	}
	ctx, afterCommit := core.WithCommitHooks(context.WithValue(ctx, inTxKey{}, true))
	err := doTxn(ctx, s.DB, func(ctx context.Context) error {
		if s.fence != nil && !core.IsUnfenced(ctx) {
			if err := s.fence(ctx); err != nil {
				return err
			}
		}
		return fn(ctx)
	})
	if err != nil {
		return err
	}
	afterCommit()
	return nil
}

// writeLockKey is the PostgreSQL advisory lock every write transaction
// takes first.
const writeLockKey = 0x6a61727669730002 // "jarvis" 2

// doTxn runs fn in one transaction, joining the one in ctx if there is one.
//
// The code above the store was written against SQLite's immediate
// transactions: one writer at a time, so a transaction that reads and then
// writes (the budget check before the charge, the tripwire caps and rate
// limit before the insert) sees no other writer in between. PostgreSQL's
// read committed transactions run concurrently; a transaction-scoped
// advisory lock taken first gives every Jarvis process on the database the
// same one-writer order. Reads outside transactions do not wait for it.
func doTxn(ctx context.Context, db *dbutil.Database, fn func(ctx context.Context) error) error {
	if db.Dialect != dbutil.Postgres {
		return db.DoTxn(ctx, nil, fn)
	}
	return db.DoTxn(ctx, nil, func(ctx context.Context) error {
		if _, err := db.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(writeLockKey)); err != nil {
			return fmt.Errorf("take the write lock: %w", err)
		}
		return fn(ctx)
	})
}

// notFound turns sql.ErrNoRows into core.ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, core.ErrNotFound)
	}
	return err
}
