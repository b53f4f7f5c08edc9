package store_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestPoolKeepsItsConnections: on PostgreSQL a pool whose max_idle_conns
// is left at 0 keeps every connection it opened for the next burst, rather
// than closing all but two and opening them again (a server process each,
// its statements prepared again), which made heartbeats under load 4 to 5
// times slower.
func TestPoolKeepsItsConnections(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("SQLite's pool is fixed")
	}
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	cfg.MaxOpenConns, cfg.MaxIdleConns = 8, 0
	st := testdb.OpenConfig(t, cfg)
	for burst := range 3 {
		conns := make([]*sql.Conn, cfg.MaxOpenConns)
		for i := range conns {
			c, err := st.DB.RawDB.Conn(ctx)
			if err != nil {
				t.Fatalf("burst %d, connection %d: %v", burst, i, err)
			}
			if err := c.PingContext(ctx); err != nil {
				t.Fatalf("burst %d, ping %d: %v", burst, i, err)
			}
			conns[i] = c
		}
		for _, c := range conns {
			c.Close()
		}
	}
	stats := st.DB.RawDB.Stats()
	if stats.Idle != cfg.MaxOpenConns || stats.MaxIdleClosed != 0 {
		t.Errorf("after three bursts of %d: %d idle, %d closed as surplus; want all %d kept",
			cfg.MaxOpenConns, stats.Idle, stats.MaxIdleClosed, cfg.MaxOpenConns)
	}
}

// TestIdleTransactionEnded: a transaction left idle, as a host cut off from
// PostgreSQL in the middle of one leaves it, is ended by the server after
// store.idle_in_transaction_timeout, and the row it locked is free for
// another Jarvis; its commit then fails, so nothing is acknowledged that
// was not written.
func TestIdleTransactionEnded(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("a SQLite transaction lives in this process, never cut off from its database")
	}
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	cfg.IdleInTransactionTimeout = time.Second
	stuck := testdb.OpenConfig(t, cfg)
	cfg.IdleInTransactionTimeout = 0
	other := testdb.OpenConfig(t, cfg)
	if err := other.SetState(ctx, "k", "before"); err != nil {
		t.Fatal(err)
	}

	tx, err := stuck.DB.RawDB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE bot_state SET value = 'stuck' WHERE key = 'k'`); err != nil {
		t.Fatalf("update in the transaction left idle: %v", err)
	}

	// The other Jarvis's write waits for the row's lock, which the server
	// releases when it ends the idle session.
	start := time.Now()
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := other.SetState(waitCtx, "k", "after"); err != nil {
		t.Fatalf("the other write, %s after the lock was taken: %v", time.Since(start).Round(time.Millisecond), err)
	}
	if err := tx.Commit(); err == nil {
		t.Error("the idle transaction committed after the server ended it")
	}
	if got, err := other.State(ctx, "k"); err != nil || got != "after" {
		t.Errorf("value = %q (%v), want the other write's", got, err)
	}
}

// TestSessionSettings: every PostgreSQL connection carries the idle
// transaction timeout and the server's keepalives from the config.
func TestSessionSettings(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("PostgreSQL's session settings")
	}
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	cfg.IdleInTransactionTimeout, cfg.TCPKeepalive = 45*time.Second, 15*time.Second
	st := testdb.OpenConfig(t, cfg)
	tests := []struct{ setting, want string }{
		{"idle_in_transaction_session_timeout", "45s"},
		{"tcp_keepalives_idle", "15"},
		{"tcp_keepalives_interval", "15"},
		{"tcp_keepalives_count", "4"},
	}
	for _, tt := range tests {
		t.Run(tt.setting, func(t *testing.T) {
			var got string
			if err := st.DB.QueryRow(ctx, "SELECT current_setting($1)", tt.setting).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("%s = %s, want %s", tt.setting, got, tt.want)
			}
		})
	}
}
