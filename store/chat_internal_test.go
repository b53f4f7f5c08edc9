package store

import (
	"context"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
)

// TestChatWritesGoBeforeQueuedIntake: on SQLite, while an intake batch
// holds the write gate and more wait behind it, a statement on the chat
// pool (the sync token) and a chat message's transaction, coming after
// them, commit next, before every waiting batch.
func TestChatWritesGoBeforeQueuedIntake(t *testing.T) {
	ctx := context.Background()
	st, err := Open(ctx, Config{Type: SQLite, URI: filepath.Join(t.TempDir(), "jarvis.db")}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.DB.Exec(ctx, "CREATE TABLE commit_order (seq INTEGER PRIMARY KEY, who TEXT NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	record := func(ctx context.Context, who string) error {
		_, err := st.DB.Exec(ctx, "INSERT INTO commit_order (who) VALUES ($1)", who)
		return err
	}
	queued := func(urgent, normal int) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for {
			st.gate.mu.Lock()
			u, n := len(st.gate.urgent), len(st.gate.normal)
			st.gate.mu.Unlock()
			if u == urgent && n == normal {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d urgent and %d other writers wait, want %d and %d", u, n, urgent, normal)
			}
			time.Sleep(time.Millisecond)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(fn func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- fn()
		}()
	}

	holding, release := make(chan struct{}), make(chan struct{})
	run(func() error {
		return st.InTx(ctx, func(ctx context.Context) error {
			close(holding)
			<-release
			return record(ctx, "batch")
		})
	})
	<-holding
	for range 3 {
		run(func() error { return st.InTx(ctx, func(ctx context.Context) error { return record(ctx, "batch") }) })
	}
	queued(0, 3)
	run(func() error {
		_, err := st.ChatDB().Exec(ctx, "INSERT INTO commit_order (who) VALUES ('token')")
		return err
	})
	queued(1, 3)
	run(func() error {
		return st.InTx(core.Urgent(ctx), func(ctx context.Context) error { return record(ctx, "chat") })
	})
	queued(2, 3)
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	rows, err := st.DB.Query(ctx, "SELECT who FROM commit_order ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var order []string
	for rows.Next() {
		var who string
		if err := rows.Scan(&who); err != nil {
			t.Fatal(err)
		}
		order = append(order, who)
	}
	if want := []string{"batch", "token", "chat", "batch", "batch", "batch"}; !slices.Equal(order, want) {
		t.Errorf("commits in the order %v, want %v", order, want)
	}
}
