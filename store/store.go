// Package store keeps Jarvis's state in SQLite (and later PostgreSQL). It
// implements the store interfaces that core declares.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	_ "github.com/mattn/go-sqlite3" // the SQLite driver
	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
)

//go:embed upgrades/*.sql
var upgrades embed.FS

var upgradeTable = dbutil.BuildUpgradeTable().WithFSPath(upgrades, "upgrades").Finish()

// Config selects the database.
type Config struct {
	// Type is the engine: "sqlite3".
	Type string `mapstructure:"type"`
	// URI is the SQLite file path.
	URI string `mapstructure:"uri"`
}

// Validate checks the config.
func (c Config) Validate() error {
	switch {
	case c.Type != "sqlite3":
		return core.Invalid("store.type", "must be sqlite3, not %q", c.Type)
	case strings.TrimSpace(c.URI) == "":
		return core.Invalid("store.uri", "is required")
	}
	return nil
}

// Store is the database and every query Jarvis makes of it.
type Store struct {
	DB *dbutil.Database

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
	db, err := dbutil.NewWithDialect(sqliteDSN(cfg.URI), "sqlite3")
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.Owner = "jarvis"
	db.UpgradeTable = upgradeTable
	db.Log = dbutil.ZeroLogger(log.With().Str("component", "store").Logger())
	// One writer at a time is all SQLite allows; a small pool keeps
	// readers from waiting on it.
	db.RawDB.SetMaxOpenConns(4)
	if err := db.Upgrade(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("upgrade database: %w", err)
	}
	return &Store{DB: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.DB.Close() }

// InTx runs fn in one transaction; store calls made with fn's context join
// it. After a commit the outbox sender is woken, since a notice enqueued
// inside the transaction was invisible to it until then.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	if err := s.DB.DoTxn(ctx, nil, fn); err != nil {
		return err
	}
	s.Outbox().wake()
	return nil
}

// notFound turns sql.ErrNoRows into core.ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, core.ErrNotFound)
	}
	return err
}
