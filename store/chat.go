package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/mattn/go-sqlite3"
	"go.mau.fi/util/dbutil"
)

// defaultChatConns is how many connections the chat pool holds when the
// configuration does not say: one for a message being handled and one for
// the sender beside it.
const defaultChatConns = 2

// openChatPool opens the connections chat uses apart from everything
// else: the transactions of contexts marked core.Urgent (a person's
// command and its reply, the sender's bookkeeping) and the sync token.
// Agents' intake can take every connection of the main pool and chat
// still has its own. On SQLite, every write made on these connections, a
// transaction or a single statement, waits for the write gate as urgent.
//
// The bot's crypto and room state stores stay on the main pool: a
// handler's transaction reads and writes the room state store inside it,
// which joins the transaction only on the same database (a transaction of
// a database of its own would wait for the write lock its caller holds).
func openChatPool(cfg Config, pgConfig *pgx.ConnConfig, gate *writeGate) *sql.DB {
	var db *sql.DB
	if cfg.Type == Postgres {
		db = stdlib.OpenDB(*pgConfig)
	} else {
		db = sql.OpenDB(gatedConnector{dsn: sqliteDSN(cfg.URI), gate: gate})
	}
	n := cfg.ChatConns
	if n == 0 {
		n = defaultChatConns
	}
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(cfg.ConnMaxLifetime)
	return db
}

// ChatDB is the chat pool as a database of its own, for single
// statements outside a transaction (the sync token).
func (s *Store) ChatDB() *dbutil.Database {
	s.chatDBOnce.Do(func() {
		dialect := "sqlite3"
		if s.DB.Dialect == dbutil.Postgres {
			dialect = "pgx"
		}
		db, err := dbutil.NewWithDB(s.chat, dialect)
		if err != nil {
			panic(err) // the dialect is one of the two above
		}
		db.Log = s.DB.Log
		s.chatDB = db
	})
	return s.chatDB
}

// chatTxn is where an urgent transaction begins: a connection of the chat
// pool. Store calls inside it reach it through the context, as for any
// transaction.
func (s *Store) chatTxn() dbutil.Conn {
	return &dbutil.LoggingExecable{UnderlyingExecable: s.chat}
}

// gatedConnector opens SQLite connections whose writes take the write
// gate as urgent.
type gatedConnector struct {
	dsn  string
	gate *writeGate
}

func (c gatedConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.Driver().Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &gatedConn{SQLiteConn: conn.(*sqlite3.SQLiteConn), gate: c.gate}, nil
}

func (gatedConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

// gatedConn holds the write gate from the start of a transaction to its
// end, and around each statement run outside one. database/sql uses a
// connection from one goroutine at a time.
type gatedConn struct {
	*sqlite3.SQLiteConn
	gate *writeGate
	inTx bool
}

func (c *gatedConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *gatedConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.gate.acquire(ctx, true); err != nil {
		return nil, err
	}
	tx, err := c.SQLiteConn.BeginTx(ctx, opts)
	if err != nil {
		c.gate.release()
		return nil, err
	}
	c.inTx = true
	return &gatedTx{Tx: tx, conn: c}, nil
}

func (c *gatedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if !c.inTx {
		if err := c.gate.acquire(ctx, true); err != nil {
			return nil, err
		}
		defer c.gate.release()
	}
	return c.SQLiteConn.ExecContext(ctx, query, args)
}

// gatedTx releases the gate when it ends, committed or rolled back.
type gatedTx struct {
	driver.Tx
	conn *gatedConn
	once sync.Once
}

func (t *gatedTx) Commit() error {
	defer t.end()
	return t.Tx.Commit()
}

func (t *gatedTx) Rollback() error {
	defer t.end()
	return t.Tx.Rollback()
}

func (t *gatedTx) end() {
	t.once.Do(func() {
		t.conn.inTx = false
		t.conn.gate.release()
	})
}
