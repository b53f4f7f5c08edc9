package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestChatWhileIntakeHoldsEveryConnection: with every connection of the
// main pool taken (agents' intake flat out), a transaction without the
// urgent mark waits for one, while a chat message's transaction, the sync
// token and any statement on the chat pool go through.
func TestChatWhileIntakeHoldsEveryConnection(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	held := 4 // SQLite's main pool
	if cfg.Type == store.Postgres {
		cfg.MaxOpenConns, held = 2, 2
	}
	st := testdb.OpenConfig(t, cfg)
	for range held {
		conn, err := st.DB.RawDB.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
	}

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := st.InTx(short, func(ctx context.Context) error { return st.SetState(ctx, "intake", "1") })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a transaction of the main pool with every connection taken: %v, want it to wait past its deadline", err)
	}

	chat, cancel := context.WithTimeout(core.Urgent(ctx), 10*time.Second)
	defer cancel()
	if err := st.InTx(chat, func(ctx context.Context) error { return st.SetState(ctx, "chat", "answered") }); err != nil {
		t.Fatalf("a chat message's transaction: %v", err)
	}
	if err := st.SetState(chat, "next_batch", "s1"); err != nil {
		t.Fatalf("the sync token: %v", err)
	}
	if _, err := st.ChatDB().Exec(chat, "UPDATE bot_state SET value = value WHERE key = 'chat'"); err != nil {
		t.Fatalf("a statement on the chat pool: %v", err)
	}
	var got string
	if err := st.ChatDB().QueryRow(chat, "SELECT value FROM bot_state WHERE key = 'chat'").Scan(&got); err != nil || got != "answered" {
		t.Fatalf("the chat transaction's write reads %q, %v", got, err)
	}
}
