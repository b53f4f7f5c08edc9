package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestIntakeWithoutLease: on PostgreSQL a Jarvis that does not hold the
// lease stores an agent's report (a write marked core.Intake) and keeps the
// notices it causes out of the outbox, staged, telling the holder; any
// other write of it is refused. Until it is moved, a staged notice reads
// as not sent (an edit or a reaction of it waits). The holder moves the staged notices into
// the outbox in their order, each once, even when it enqueued one of their
// keys itself meanwhile; a second move finds nothing. A notice the holder
// relates to a staged one (an edit) moves the staged ones in ahead of it. On SQLite, where
// only the holder serves the API, the fence refuses intake like any write.
func TestIntakeWithoutLease(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	standby, holder := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
	standby.SetFence(func(context.Context) error { return core.ErrStaleEpoch })
	held := true
	holder.SetFence(func(context.Context) error {
		if !held {
			return core.ErrStaleEpoch
		}
		return nil
	})
	notice := func(key, body string) core.Notice {
		return core.Notice{Key: key, RoomID: "!room:test", Kind: core.NoticeMessage, Body: body}
	}
	report := func(ctx context.Context, keys ...string) error {
		return standby.InTx(ctx, func(ctx context.Context) error {
			if err := standby.SetState(ctx, "intake-test", keys[0]); err != nil {
				return err
			}
			for _, key := range keys {
				if err := standby.Outbox().Enqueue(ctx, notice(key, "report "+key)); err != nil {
					return err
				}
			}
			return nil
		})
	}

	if err := report(ctx, "plain"); !errors.Is(err, core.ErrStaleEpoch) {
		t.Fatalf("a write that is no intake, without the lease: %v, want ErrStaleEpoch", err)
	}
	if testEngine != store.Postgres {
		if err := report(core.Intake(ctx), "a"); !errors.Is(err, core.ErrStaleEpoch) {
			t.Fatalf("intake without the lease on SQLite: %v, want ErrStaleEpoch", err)
		}
		return
	}

	work := make(chan struct{}, 10)
	listenCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		holder.Listen(listenCtx, map[string]func(){store.IntakeWork: func() { work <- struct{}{} }}, time.Second,
			func(err error) { t.Errorf("listen: %v", err) })
	})
	t.Cleanup(func() { stop(); wg.Wait() })
	<-work // connected: the call every connection makes

	if err := report(core.Intake(ctx), "a", "b"); err != nil {
		t.Fatalf("intake without the lease: %v", err)
	}
	select {
	case <-work:
	case <-time.After(10 * time.Second):
		t.Fatal("intake stored without the lease told no holder")
	}
	if v, err := holder.State(ctx, "intake-test"); err != nil || v != "a" {
		t.Errorf("the report's write reads %q, %v; want it stored", v, err)
	}
	if err := report(core.Intake(ctx), "a"); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("the same notice again: %v, want ErrDuplicate", err)
	}
	if n, _ := holder.Outbox().Depth(ctx); n != 0 {
		t.Errorf("%d notices in the outbox before the holder moved them, want 0", n)
	}
	if n, _ := holder.Outbox().Staged(ctx); n != 2 {
		t.Errorf("%d notices staged, want 2 (a, b: a again is a duplicate)", n)
	}
	// A notice the holder relates to a staged one (an edit) waits for it:
	// the staged one reads as not sent.
	if e, err := holder.Outbox().Get(ctx, "a"); err != nil || e.Body != "report a" || e.EventID != "" {
		t.Errorf("a staged notice reads %+v, %v; want it, not sent", e, err)
	}
	if _, err := holder.Outbox().Get(ctx, "nowhere"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("a notice neither in the outbox nor staged: %v, want ErrNotFound", err)
	}
	// The holder enqueued b itself meanwhile, and its own intake goes
	// straight to the outbox.
	if err := holder.Outbox().Enqueue(core.Intake(ctx), notice("b", "holder's b"), notice("c", "holder's c")); err != nil {
		t.Fatal(err)
	}

	held = false
	if _, err := holder.Outbox().MoveStaged(ctx); !errors.Is(err, core.ErrStaleEpoch) {
		t.Errorf("moving without the lease: %v, want ErrStaleEpoch", err)
	}
	held = true
	if n, err := holder.Outbox().MoveStaged(ctx); err != nil || n != 2 {
		t.Fatalf("moved %d (%v), want 2", n, err)
	}
	if n, err := holder.Outbox().MoveStaged(ctx); err != nil || n != 0 {
		t.Errorf("moved %d again (%v), want 0", n, err)
	}
	// An edit the holder makes of a notice still staged (an admin
	// resuming a halt a standby staged) goes into the outbox after it:
	// the staged notices are moved in ahead of the edit.
	if err := report(core.Intake(ctx), "d"); err != nil {
		t.Fatal(err)
	}
	edit := core.Notice{Key: "d:edit", RoomID: "!room:test", Kind: core.NoticeEdit, Target: "d", Body: "edited d"}
	if err := holder.Outbox().Enqueue(ctx, edit); err != nil {
		t.Fatal(err)
	}
	if n, err := holder.Outbox().Staged(ctx); err != nil || n != 0 {
		t.Errorf("%d notices staged (%v) after the holder edited one, want 0", n, err)
	}
	waiting, err := holder.Outbox().Waiting(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range waiting {
		got = append(got, e.Key+"="+e.Body)
	}
	want := []string{"b=holder's b", "c=holder's c", "a=report a", "d=report d", "d:edit=edited d"}
	if len(got) != len(want) {
		t.Fatalf("outbox %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("outbox %q, want %q", got, want)
			break
		}
	}
}
