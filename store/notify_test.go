package store_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestOutboxWorkNotified: on PostgreSQL the notices one process enqueues
// wake the sender of another listening on the same database, which then
// finds them: the notification comes with the commit. A process does not
// hear its own notifications: its sender was woken when it committed.
func TestOutboxWorkNotified(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("LISTEN/NOTIFY is PostgreSQL's; on SQLite the sender polls")
	}
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	sa, sb := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
	listenCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	listen := func(s *store.Store) chan struct{} {
		work := make(chan struct{}, 10)
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Listen(listenCtx, map[string]func(){store.OutboxWork: func() { work <- struct{}{} }}, time.Second,
				func(err error) { t.Errorf("listen: %v", err) })
		}()
		select {
		case <-work: // connected: the call every connection makes
		case <-time.After(10 * time.Second):
			t.Fatal("never listening")
		}
		return work
	}
	t.Cleanup(func() { stop(); wg.Wait() })
	aWork, bWork := listen(sa), listen(sb)

	err := sb.InTx(core.Unfenced(ctx), func(ctx context.Context) error {
		if err := sb.Outbox().Enqueue(ctx, core.Notice{Key: "n1", RoomID: "!room:test", Kind: core.NoticeMessage, Body: "hello"}); err != nil {
			return err
		}
		return sb.Outbox().Enqueue(ctx, core.Notice{Key: "n2", RoomID: "!room:test", Kind: core.NoticeMessage, Body: "again"})
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-aWork:
	case <-time.After(10 * time.Second):
		t.Fatal("a notice enqueued by another process woke no listener")
	}
	waiting, err := sa.Outbox().Waiting(ctx, 10)
	if err != nil || len(waiting) != 2 {
		t.Errorf("woken, the listener finds %d notices (%v), want 2", len(waiting), err)
	}

	// Notifications come in the order of their commits: once b hears a's,
	// it would have heard its own before.
	if err := sa.Outbox().Enqueue(core.Unfenced(ctx), core.Notice{Key: "n3", RoomID: "!room:test", Kind: core.NoticeMessage, Body: "third"}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-bWork:
	case <-time.After(10 * time.Second):
		t.Fatal("b never heard a's notice")
	}
	select {
	case <-bWork:
		t.Error("b heard two notifications, want a's alone: it heard its own")
	default:
	}
	select {
	case <-aWork:
		t.Error("a heard its own notification")
	default:
	}
}
