// Package store keeps Jarvis's state in SQLite or PostgreSQL. It implements
// the store interfaces that core declares.
package store

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	_ "github.com/mattn/go-sqlite3" // the SQLite driver
	"github.com/rs/zerolog"
	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

//go:embed upgrades/*.sql
var upgrades embed.FS

// The two ways from an empty database (version 0) to the latest schema:
// latestSchema builds it in one step, and the numbered files from
// firstUpgrade on build it one version at a time. An upgrade table holds
// one way from each version, so Open's leaves out firstUpgrade: an empty
// database runs latestSchema, one at version 1 or later the numbered files
// after its version. The tests run the numbered files from the start too,
// and compare the schemas the two ways build.
const (
	latestSchema = "00-latest-schema.sql"
	firstUpgrade = "01-foundation.sql"
)

// upgradeTable is what Open applies.
var upgradeTable = buildUpgradeTable(firstUpgrade)

// buildUpgradeTable reads the upgrade files, but the one named skip.
func buildUpgradeTable(skip string) dbutil.UpgradeTable {
	return dbutil.BuildUpgradeTable().WithFSPath(upgradesWithout{upgrades, skip}, "upgrades").Finish()
}

// upgradesWithout is the upgrade files without the one named skip.
type upgradesWithout struct {
	embed.FS
	skip string
}

// ReadDir lists the directory name without the skipped file.
func (u upgradesWithout) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := u.FS.ReadDir(name)
	return slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == u.skip }), err
}

// Upgrades returns the .sql files of the schema: 00-latest-schema.sql,
// which Open applies to an empty database, and the numbered files, which
// it applies in order to one at an older version.
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
	// MaxOpenConns caps the connections to PostgreSQL this Jarvis holds
	// at once; 0 sets no cap.
	MaxOpenConns int
	// MaxIdleConns is how many of them stay open while unused; 0 keeps
	// MaxOpenConns of them (database/sql's default, 2, when MaxOpenConns
	// is 0 too).
	MaxIdleConns int
	// ChatConns is how many connections the chat pool holds, apart from
	// the others (see openChatPool); 0 is defaultChatConns.
	ChatConns int
	// ConnMaxLifetime is how long one is used before it is replaced; 0
	// keeps it as long as it works.
	ConnMaxLifetime time.Duration
	// IdleInTransactionTimeout is how long PostgreSQL lets a session sit
	// inside a transaction without sending a statement before it ends the
	// session, which releases the transaction's locks; 0 lets it sit.
	IdleInTransactionTimeout time.Duration
	// TCPKeepalive is how long a connection to PostgreSQL may be silent
	// before either end probes the other, and the time between probes;
	// after four unanswered probes the end that sent them closes it. 0
	// keeps the operating system's settings on the server and Go's on
	// Jarvis's end.
	TCPKeepalive time.Duration
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
	case c.MaxOpenConns < 0:
		return core.Invalid("store.max_open_conns", "must not be negative (0 sets no cap)")
	case c.MaxIdleConns < 0:
		return core.Invalid("store.max_idle_conns", "must not be negative")
	case c.MaxOpenConns > 0 && c.MaxIdleConns > c.MaxOpenConns:
		return core.Invalid("store.max_idle_conns", "must not exceed store.max_open_conns (%d)", c.MaxOpenConns)
	case c.ChatConns < 0:
		return core.Invalid("store.chat_conns", "must not be negative (0 keeps %d)", defaultChatConns)
	case c.ConnMaxLifetime < 0:
		return core.Invalid("store.conn_max_lifetime", "must not be negative (0 keeps a connection as long as it works)")
	case c.IdleInTransactionTimeout < 0 || c.IdleInTransactionTimeout > 0 && c.IdleInTransactionTimeout < time.Second:
		return core.Invalid("store.idle_in_transaction_timeout", "must be 0 (off) or at least 1s, not %s", c.IdleInTransactionTimeout)
	case c.TCPKeepalive < 0 || c.TCPKeepalive > 0 && c.TCPKeepalive < time.Second:
		return core.Invalid("store.tcp_keepalive", "must be 0 (the system's) or at least 1s, not %s", c.TCPKeepalive)
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
	// gate orders this process's write transactions on SQLite; nil on
	// PostgreSQL, whose transactions run side by side (see doTxn).
	gate *writeGate
	// chat is the chat pool (see openChatPool); chatDB is it for the bot.
	chat       *sql.DB
	chatDBOnce sync.Once
	chatDB     *dbutil.Database
	// pgConfig is PostgreSQL's connection config, for Listen's
	// connection of its own; nil on SQLite.
	pgConfig *pgx.ConnConfig
	// instance names this store in its notifications, so that it does
	// not hear its own.
	instance string

	outboxOnce sync.Once
	outbox     *Outbox
}

var _ core.Transactor = (*Store)(nil)

// sqlitePath is the file path of a SQLite URI: without "file:" and any
// query string.
func sqlitePath(uri string) string {
	path := strings.TrimPrefix(uri, "file:")
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path
}

// Files are the files of a SQLite database: the database, its write-ahead
// log and its shared-memory index; none for PostgreSQL. They hold
// Jarvis's access token, its crypto keys and people's notes.
func (c Config) Files() []string {
	if c.Type != SQLite {
		return nil
	}
	path := sqlitePath(c.URI)
	return []string{path, path + "-wal", path + "-shm"}
}

// createPrivate creates the SQLite database at path, if it is not there
// yet, readable by Jarvis's user alone (0600), in a directory of its own
// (0700) when Jarvis creates that too. SQLite creates the write-ahead log
// and the shared-memory index with the database's mode.
func createPrivate(path string) error {
	if dir := filepath.Dir(path); dir != "" {
		if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return f.Close()
}

// sqliteDSN turns a file path into a go-sqlite3 DSN with WAL, foreign keys,
// immediate transactions and a busy timeout.
func sqliteDSN(path string) string {
	path = sqlitePath(path)
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
	return open(ctx, cfg, log, upgradeTable)
}

// open is Open with the upgrade table to apply.
func open(ctx context.Context, cfg Config, log zerolog.Logger, table dbutil.UpgradeTable) (*Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var pgConfig *pgx.ConnConfig
	if cfg.Type == Postgres {
		var err error
		if pgConfig, err = postgresConfig(cfg); err != nil {
			return nil, err
		}
	}
	db, err := openDB(cfg, pgConfig)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	db.Owner = "jarvis"
	db.UpgradeTable = table
	db.Log = dbutil.ZeroLogger(log.With().Str("component", "store").Logger())
	if err := upgrade(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("upgrade database: %w", err)
	}
	st := &Store{DB: db, pgConfig: pgConfig, instance: crand.Text()}
	if cfg.Type == SQLite {
		st.gate = &writeGate{}
	}
	st.chat = openChatPool(cfg, pgConfig, st.gate)
	return st, nil
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

// minPostgres is the oldest PostgreSQL Jarvis runs on, as
// server_version_num: 13, for pg_current_snapshot and xid8.
const minPostgres = 130000

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
	var version int
	var shown string
	if err := conn.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int, current_setting('server_version')").Scan(&version, &shown); err != nil {
		return fmt.Errorf("read the server's version: %w", err)
	}
	if version < minPostgres {
		return fmt.Errorf("PostgreSQL %s is too old: Jarvis needs PostgreSQL 13 or later", shown)
	}
	if _, err := conn.ExecContext(ctx, "SELECT pg_advisory_lock($1)", int64(upgradeLockKey)); err != nil {
		return fmt.Errorf("lock for the upgrade: %w", err)
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(upgradeLockKey))
	return db.Upgrade(ctx)
}

// postgresConfig parses cfg's PostgreSQL connection string and adds the
// session settings and keepalives of cfg: a host cut off from the database
// in the middle of a transaction must not hold its locks until PostgreSQL
// notices on its own, which may take hours.
func postgresConfig(cfg Config) (*pgx.ConnConfig, error) {
	pc, err := pgx.ParseConfig(cfg.URI)
	if err != nil {
		// pgx's message quotes the connection string, password and all.
		return nil, core.Invalid("store.uri", "is not a PostgreSQL connection string")
	}
	if cfg.IdleInTransactionTimeout > 0 {
		pc.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(cfg.IdleInTransactionTimeout.Milliseconds(), 10)
	}
	if cfg.TCPKeepalive > 0 {
		every := strconv.FormatInt(int64(cfg.TCPKeepalive/time.Second), 10)
		pc.RuntimeParams["tcp_keepalives_idle"] = every
		pc.RuntimeParams["tcp_keepalives_interval"] = every
		pc.RuntimeParams["tcp_keepalives_count"] = strconv.Itoa(keepaliveProbes)
		dialer := &net.Dialer{KeepAliveConfig: net.KeepAliveConfig{
			Enable: true, Idle: cfg.TCPKeepalive, Interval: cfg.TCPKeepalive, Count: keepaliveProbes}}
		if pc.ConnectTimeout > 0 {
			dialer.Timeout = pc.ConnectTimeout
		}
		pc.DialFunc = dialer.DialContext
	}
	return pc, nil
}

// keepaliveProbes is how many keepalive probes go unanswered before a
// connection is given up.
const keepaliveProbes = 4

// openDB opens the engine cfg names with a pool sized for it. PostgreSQL
// goes through pgx, which keeps every statement prepared per connection.
func openDB(cfg Config, pgConfig *pgx.ConnConfig) (*dbutil.Database, error) {
	if cfg.Type == Postgres {
		db, err := dbutil.NewWithDB(stdlib.OpenDB(*pgConfig), "pgx")
		if err != nil {
			return nil, err
		}
		db.RawDB.SetMaxOpenConns(cfg.MaxOpenConns)
		// A pool that keeps fewer idle connections than it opens closes
		// them after every burst and opens new ones for the next: a
		// server process forked and every statement prepared again each
		// time.
		switch {
		case cfg.MaxIdleConns > 0:
			db.RawDB.SetMaxIdleConns(cfg.MaxIdleConns)
		case cfg.MaxOpenConns > 0:
			db.RawDB.SetMaxIdleConns(cfg.MaxOpenConns)
		}
		db.RawDB.SetConnMaxLifetime(cfg.ConnMaxLifetime)
		return db, nil
	}
	if err := createPrivate(sqlitePath(cfg.URI)); err != nil {
		return nil, err
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
func (s *Store) Close() error {
	return errors.Join(s.chat.Close(), s.DB.Close())
}

// InTx runs fn in one transaction; store calls made with fn's context join
// it. A notice enqueued inside it wakes the outbox sender once it commits.
func (s *Store) InTx(ctx context.Context, fn func(ctx context.Context) error) error {
	return s.tx(ctx, fn)
}

// SetFence makes every write transaction run fence first, inside the
// transaction: a Jarvis that no longer holds the workspace lease gets the
// fence's error (core.ErrStaleEpoch) and writes nothing. Contexts marked
// core.Unfenced skip it, and so do the schema upgrades, which do not run
// through InTx. Call it once, before the store is used.
func (s *Store) SetFence(fence func(ctx context.Context) error) { s.fence = fence }

// inTxKey marks the context of a transaction's run; its value says
// whether the run is on locked reads (core.LockedReads).
type inTxKey struct{}

// onLockedReads reports whether ctx is in a transaction's run on locked
// reads, READ COMMITTED on PostgreSQL: the store's reads that lock take
// their locks then.
func onLockedReads(ctx context.Context) bool {
	locked, _ := ctx.Value(inTxKey{}).(bool)
	return locked
}

// stagedKey marks the context of a transaction that stores an agent's
// report without the lease: the notices it enqueues are staged for the
// holder (Outbox.Enqueue), and its commit tells the holder (IntakeWork).
type stagedKey struct{}

// staged reports whether ctx belongs to such a transaction.
func staged(ctx context.Context) bool {
	v, _ := ctx.Value(stagedKey{}).(bool)
	return v
}

// intakeEverywhere reports whether ctx's writes are an agent's report that
// this Jarvis stores without the lease: on PostgreSQL, which several Jarvis
// processes share, for a context marked core.Intake. On SQLite (one host)
// only the holder serves the API, and the fence applies to all alike.
func (s *Store) intakeEverywhere(ctx context.Context) bool {
	return s.DB.Dialect == dbutil.Postgres && core.IsIntake(ctx)
}

// tx runs fn in one transaction, or in the one ctx is in already. The
// outermost transaction waits for the write gate (on SQLite), runs the
// fence first and, once it has committed, what core.AfterCommit was given
// inside it.
//
// On PostgreSQL the outermost transaction is run again, from the start,
// when the database refused it as a serialization failure or a deadlock
// (see doTxn): up to maxTxAttempts times, after a pause of random length
// that grows with each attempt so that the transactions that collided do
// not collide again. fn must therefore change nothing but the database
// (and what it returns to its caller); a run that failed leaves its
// commit hooks unrun, and only the one that committed runs them.
func (s *Store) tx(ctx context.Context, fn func(ctx context.Context) error) error {
	if lockedReads, in := ctx.Value(inTxKey{}).(bool); in {
		// Joined, it runs as the transaction it joins does.
		if !lockedReads {
			ctx = core.FullyIsolated(ctx)
		}
		return fn(ctx)
	}
	urgent := core.IsUrgent(ctx)
	// An urgent transaction begins on the chat pool, whose connections
	// wait for the gate themselves, urgent first.
	var conn dbutil.Conn
	if urgent {
		conn = s.chatTxn()
	}
	if s.gate != nil && !urgent {
		if err := s.gate.acquire(ctx, false); err != nil {
			return err
		}
		defer s.gate.release()
	}
	// SQLite runs one writer at a time: every transaction is exact there.
	lockedReads := core.ReadsLocked(ctx) && s.DB.Dialect == dbutil.Postgres
	if !lockedReads {
		ctx = core.FullyIsolated(ctx)
	}
	metrics.Transactions.Inc()
	for attempt := 1; ; attempt++ {
		hooked, afterCommit := core.WithCommitHooks(context.WithValue(ctx, inTxKey{}, core.ReadsLocked(ctx)))
		err := doTxn(withNotified(hooked), s.DB, conn, func(ctx context.Context) error {
			if lockedReads && !core.ReadsLocked(ctx) {
				// Run again at full isolation, the transaction still reads
				// a few rows by key: through their indexes, its predicate
				// locks stay on those rows, where a scan of a small table
				// would lock all of it against every other writer.
				if _, err := s.DB.Exec(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
					return err
				}
			}
			if s.fence != nil && !core.IsUnfenced(ctx) {
				err := s.fence(ctx)
				switch {
				case err != nil && s.intakeEverywhere(ctx) && errors.Is(err, core.ErrStaleEpoch):
					// An agent's report, stored here lease or not; what it
					// would send waits for the holder (see stagedKey).
					ctx = context.WithValue(ctx, stagedKey{}, true)
				case err != nil:
					return err
				}
			}
			if err := fn(ctx); err != nil || !staged(ctx) {
				return err
			}
			return notify(ctx, s.DB, IntakeWork, s.instance)
		})
		if err == nil {
			afterCommit()
			return nil
		}
		if core.ReadsLocked(ctx) && errors.Is(err, core.ErrBeyondLockedReads) {
			metrics.TransactionReruns.WithLabelValues("beyond locked reads").Inc()
			ctx = core.FullyIsolated(ctx)
			continue
		}
		reason := rerunReason(err)
		if attempt == maxTxAttempts || reason == "" {
			return err
		}
		metrics.TransactionReruns.WithLabelValues(reason).Inc()
		pause := time.NewTimer(rand.N(txRetryPause << min(attempt, 6)))
		select {
		case <-ctx.Done():
			pause.Stop()
			return err
		case <-pause.C:
		}
	}
}

// maxTxAttempts is how often tx runs a transaction that PostgreSQL keeps
// refusing as a serialization failure; txRetryPause is the longest pause
// before the second attempt, doubled for each further one up to 64 times
// it.
const (
	maxTxAttempts = 20
	txRetryPause  = time.Millisecond
)

// rerunReason says why PostgreSQL refused a transaction that would, if run
// again, succeed or fail on its own merits: "serialization"
// (serialization_failure), "deadlock" (deadlock_detected) or "id collision"
// (a unique_violation of one of generatedIDKeys); "" for any other error,
// which a rerun would not help.
func rerunReason(err error) string {
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		return ""
	}
	switch {
	case pg.Code == "40001":
		return "serialization"
	case pg.Code == "40P01":
		return "deadlock"
	case pg.Code == "23505" && generatedIDKeys[pg.ConstraintName]:
		return "id collision"
	}
	return ""
}

// generatedIDKeys are the primary keys of the rows an agent's report
// inserts under an id core.IDSource makes inside the transaction. On
// PostgreSQL every Jarvis takes agents' reports, and two processes make
// ids in the same millisecond each from 20 random bits, so two of them
// can be one id: run again, the transaction makes new ones.
var generatedIDKeys = map[string]bool{"card_set_pkey": true, "card_pkey": true, "card_decision_pkey": true, "approval_pkey": true}

// doTxn runs fn in one transaction, joining the one in ctx if there is one.
//
// The code above the store reads and then writes in many places, and
// relies on nothing changing in between: the priority budget counted
// before a card set is charged, the breaker's compare-and-swap, a card's
// state before its transition, a pending confirmation or a link code
// before it is taken, the tripwire caps and rate limit before an insert.
// SQLite's immediate transactions run one writer at a time, which makes
// all of them exact. On PostgreSQL the transactions are SERIALIZABLE:
// the database itself makes every one behave as if it had run alone,
// and refuses one of two that would contradict each other (tx runs it
// again), while transactions that touch different rows run side by side.
// Locking each row a check reads (SELECT … FOR UPDATE) would do the same
// for the checks there are today, but every new check would have to
// remember its lock, and a forgotten one fails only under load; under
// SERIALIZABLE a check is exact because it is inside a transaction.
//
// The one exception is a transaction marked core.LockedReads, whose
// writes depend only on what it locks as it reads it or on the
// database's constraints: a heartbeat batch of agents that report as
// usual (their states, read FOR UPDATE, and their heartbeats' and
// readings' rows, upserted), a card set without a budget or a dependency
// outside it (its key unique, its cards new), a journal entry (its
// agent's usage read under the agent's journal lock). It runs READ
// COMMITTED: each lock orders it against every other writer of what it
// locks, and two such transactions never refuse each other for the index
// pages they share, as SERIALIZABLE's predicate locks do. Whatever else
// it finds it must do, it returns core.ErrBeyondLockedReads and tx runs
// it again SERIALIZABLE.
//
// conn, when not nil, is where the transaction begins instead of db's
// pool.
func doTxn(ctx context.Context, db *dbutil.Database, conn dbutil.Conn, fn func(ctx context.Context) error) error {
	opts := &dbutil.TxnOptions{Conn: conn}
	switch {
	case db.Dialect != dbutil.Postgres:
	case core.ReadsLocked(ctx):
		opts.Isolation = sql.LevelReadCommitted
	default:
		opts.Isolation = sql.LevelSerializable
	}
	return db.DoTxn(ctx, opts, fn)
}

// countEach runs query, which counts something of each of names: its
// first parameter, $1, is first, and the names, from $2, take the place
// of %s, a few thousand at a time. A name the query finds nothing of is
// left out.
func countEach(ctx context.Context, db *dbutil.Database, query string, first any, names []string) (map[string]int, error) {
	out := make(map[string]int, len(names))
	err := bulkChunks(names, 1, func(chunk []string) error {
		args := append([]any{first}, bulkArgs(chunk)...)
		rows, err := db.Query(ctx, fmt.Sprintf(query, bulkIn(2, len(chunk))), args...)
		return scanCounts(rows, err, out)
	})
	return out, err
}

// scanCounts adds rows of (name, count) to out.
func scanCounts(rows dbutil.Rows, err error, out map[string]int) error {
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			return err
		}
		out[name] = n
	}
	return rows.Err()
}

// notFound turns sql.ErrNoRows into core.ErrNotFound.
func notFound(err error, what string) error {
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%s: %w", what, core.ErrNotFound)
	}
	return err
}
