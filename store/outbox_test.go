package store_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

func TestMigrationsOnFreshFile(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.EmptyConfig(t, testEngine)
	s, err := store.Open(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	var version int
	if err := s.DB.QueryRow(ctx, "SELECT version FROM version").Scan(&version); err != nil {
		t.Fatal(err)
	}
	if version != store.LatestVersion {
		t.Errorf("schema version = %d, want %d", version, store.LatestVersion)
	}
	if cfg.Type == store.SQLite {
		var mode string
		if err := s.DB.QueryRow(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
			t.Errorf("journal_mode = %q (%v), want wal", mode, err)
		}
		var fk int
		if err := s.DB.QueryRow(ctx, "PRAGMA foreign_keys").Scan(&fk); err != nil || fk != 1 {
			t.Errorf("foreign_keys = %d (%v), want 1", fk, err)
		}
	}
	s.Close()
	// Opening again runs no upgrade and keeps the data.
	s, err = store.Open(ctx, cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	s.Close()
}

func TestOpenRejectsBadConfig(t *testing.T) {
	for _, tt := range []struct {
		name  string
		cfg   store.Config
		field string
	}{
		{"unknown engine", store.Config{Type: "oracle", URI: "x"}, "store.type"},
		{"no uri", store.Config{Type: "sqlite3"}, "store.uri"},
		{"negative pool", store.Config{Type: "postgres", URI: "x", MaxOpenConns: -1}, "store.max_open_conns"},
		{"negative idle", store.Config{Type: "postgres", URI: "x", MaxIdleConns: -1}, "store.max_idle_conns"},
		{"more idle than open", store.Config{Type: "postgres", URI: "x", MaxOpenConns: 4, MaxIdleConns: 8}, "store.max_idle_conns"},
		{"negative lifetime", store.Config{Type: "postgres", URI: "x", ConnMaxLifetime: -time.Minute}, "store.conn_max_lifetime"},
		{"idle transactions ended at once", store.Config{Type: "postgres", URI: "x", IdleInTransactionTimeout: time.Millisecond}, "store.idle_in_transaction_timeout"},
		{"negative keepalive", store.Config{Type: "postgres", URI: "x", TCPKeepalive: -time.Second}, "store.tcp_keepalive"},
		{"not a connection string", store.Config{Type: "postgres", URI: "postgres://jarvis:secret@db:notaport/x"}, "store.uri"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := store.Open(context.Background(), tt.cfg, zerolog.Nop())
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("Open() = %v, want an error naming %s", err, tt.field)
			}
		})
	}
}

func TestOutboxLifecycle(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	o := s.Outbox()
	n := core.Notice{Key: "k1", RoomID: "!r:x", Kind: core.NoticeMessage, Body: "hello", Mentions: []string{"@a:x"}}
	if err := o.Enqueue(ctx, n); err != nil {
		t.Fatal(err)
	}
	if err := o.Enqueue(ctx, n); !errors.Is(err, core.ErrDuplicate) {
		t.Fatalf("second enqueue of the same key = %v, want ErrDuplicate", err)
	}
	select {
	case <-o.Wake:
	default:
		t.Error("enqueue did not wake the sender")
	}
	if err := o.Enqueue(ctx, core.Notice{Key: "bad", Kind: core.NoticeMessage, Body: "x"}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("enqueue without a room = %v, want ErrInvalid", err)
	}

	waiting, err := o.Waiting(ctx, 10)
	if err != nil || len(waiting) != 1 || waiting[0].Body != "hello" || waiting[0].Mentions[0] != "@a:x" {
		t.Fatalf("Waiting = %+v, %v", waiting, err)
	}
	now := time.UnixMilli(time.Now().UnixMilli())
	if err := o.MarkAttempt(ctx, []string{"k1"}, now); err != nil {
		t.Fatal(err)
	}
	if err := o.MarkFailed(ctx, []string{"k1"}, errors.New("boom"), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	e, _ := o.Get(ctx, "k1")
	if e.Attempts != 1 || e.LastError != "boom" || !e.NextAttempt.Equal(now.Add(time.Minute)) {
		t.Errorf("after failure: attempts=%d error=%q next=%s", e.Attempts, e.LastError, e.NextAttempt)
	}
	// The failed send may still have been delivered: its attempt mark stays,
	// so the next try looks in the room before sending again.
	if !e.AttemptStarted.Equal(now) {
		t.Errorf("after failure: attempt started %s, want %s kept", e.AttemptStarted, now)
	}
	if msg, _ := o.LastError(ctx); msg != "boom" {
		t.Errorf("LastError = %q, want boom", msg)
	}
	if err := o.RetryNow(ctx); err != nil {
		t.Fatal(err)
	}
	if e, _ := o.Get(ctx, "k1"); !e.NextAttempt.Equal(time.UnixMilli(0)) {
		t.Errorf("RetryNow left next attempt at %s", e.NextAttempt)
	}
	if err := o.MarkSent(ctx, []string{"k1"}, "$ev", now); err != nil {
		t.Fatal(err)
	}
	if depth, _ := o.Depth(ctx); depth != 0 {
		t.Errorf("depth after send = %d, want 0", depth)
	}
	if e, _ := o.Get(ctx, "k1"); e.EventID != "$ev" {
		t.Errorf("event ID = %q, want $ev", e.EventID)
	}
	if _, err := o.Get(ctx, "nope"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("Get(missing) = %v, want ErrNotFound", err)
	}
}

// TestOutboxEnqueueRollsBackWithTransaction: a notice written in a
// transaction that fails is never sent.
func TestOutboxEnqueueRollsBackWithTransaction(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	boom := errors.New("the state change failed")
	err := s.InTx(ctx, func(ctx context.Context) error {
		if err := s.Outbox().Enqueue(ctx, core.Notice{Key: "k", RoomID: "!r", Kind: core.NoticeMessage, Body: "x"}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("InTx = %v", err)
	}
	if depth, _ := s.Outbox().Depth(ctx); depth != 0 {
		t.Errorf("a rolled-back notice is in the outbox (depth %d)", depth)
	}
}

// TestOutboxEnqueueMany: notices enqueued together, more than one
// statement holds, wait in their order; a key already there, or repeated,
// is written once and reported, and does not keep the others out.
func TestOutboxEnqueueMany(t *testing.T) {
	ctx := context.Background()
	o := testdb.OpenStore(t, testEngine).Outbox()
	notice := func(i int) core.Notice {
		return core.Notice{Key: fmt.Sprintf("k%04d", i), RoomID: "!r:x", Kind: core.NoticeMessage, Body: fmt.Sprintf("notice %d", i)}
	}
	if err := o.Enqueue(ctx, notice(3)); err != nil {
		t.Fatal(err)
	}
	var notices []core.Notice
	for i := range 2000 {
		notices = append(notices, notice(i))
	}
	notices = append(notices, notice(7))
	err := o.Enqueue(ctx, notices...)
	if !errors.Is(err, core.ErrDuplicate) || !strings.Contains(err.Error(), `"k0003"`) {
		t.Fatalf("enqueue with a key already there = %v, want ErrDuplicate naming k0003", err)
	}
	waiting, err := o.Waiting(ctx, 3000)
	if err != nil {
		t.Fatal(err)
	}
	if len(waiting) != 2000 {
		t.Fatalf("%d notices wait, want 2000", len(waiting))
	}
	want := []int{3, 0, 1, 2, 4, 5}
	for i, w := range want {
		if waiting[i].Key != notice(w).Key || waiting[i].Body != notice(w).Body {
			t.Errorf("notice %d waiting is %s %q, want %s", i, waiting[i].Key, waiting[i].Body, notice(w).Key)
		}
	}
	if last := waiting[len(waiting)-1]; last.Key != notice(1999).Key {
		t.Errorf("the last notice waiting is %s, want k1999", last.Key)
	}
	if err := o.Enqueue(ctx); err != nil {
		t.Errorf("enqueue of no notices = %v", err)
	}
}

func TestAssignBatchFixesCoalescedNotices(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	o := s.Outbox()
	for _, key := range []string{"a", "b", "c"} {
		if err := o.Enqueue(ctx, core.Notice{Key: key, RoomID: "!r", Kind: core.NoticeMessage, Body: key, Coalesce: true}); err != nil {
			t.Fatal(err)
		}
	}
	waiting, _ := o.Waiting(ctx, 10)
	batch := core.PlanBatches(waiting, time.Now())[0]
	if err := o.AssignBatch(ctx, batch); err != nil {
		t.Fatal(err)
	}
	// A notice arriving after the batch was fixed does not join it.
	if err := o.Enqueue(ctx, core.Notice{Key: "d", RoomID: "!r", Kind: core.NoticeMessage, Body: "d", Coalesce: true}); err != nil {
		t.Fatal(err)
	}
	waiting, _ = o.Waiting(ctx, 10)
	again := core.PlanBatches(waiting, time.Now())[0]
	if again.TxnKey != batch.TxnKey || len(again.Entries) != 3 || again.New {
		t.Errorf("replanned batch = %s with %d notices (new=%v), want %s with 3", again.TxnKey, len(again.Entries), again.New, batch.TxnKey)
	}
}

func TestMarkHandledOnce(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	first, err := s.MarkHandled(ctx, "$e", time.Now())
	if err != nil || !first {
		t.Fatalf("first MarkHandled = %v, %v", first, err)
	}
	if again, _ := s.MarkHandled(ctx, "$e", time.Now()); again {
		t.Error("MarkHandled reported a handled event as new")
	}
}

// TestEnqueueWakesSenderOnCommit: a notice enqueued in a transaction wakes
// the sender once the transaction commits, not before (the sender would
// look, find nothing, and have to be woken again) and not at all when it
// rolls back; one enqueued alone wakes it at once.
func TestEnqueueWakesSenderOnCommit(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	o := s.Outbox()
	woken := func() bool {
		select {
		case <-o.Wake:
			return true
		default:
			return false
		}
	}
	notice := func(key string) core.Notice {
		return core.Notice{Key: key, RoomID: "!r", Kind: core.NoticeMessage, Body: "x"}
	}
	err := s.InTx(ctx, func(ctx context.Context) error {
		if err := o.Enqueue(ctx, notice("committed")); err != nil {
			return err
		}
		if woken() {
			t.Error("the sender was woken before the notice could be seen")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !woken() {
		t.Error("the commit did not wake the sender")
	}
	rollback := errors.New("roll back")
	err = s.InTx(ctx, func(ctx context.Context) error {
		if err := o.Enqueue(ctx, notice("rolled back")); err != nil {
			return err
		}
		return rollback
	})
	if !errors.Is(err, rollback) {
		t.Fatalf("InTx = %v, want %v", err, rollback)
	}
	if woken() {
		t.Error("a rolled-back notice woke the sender")
	}
	if err := o.Enqueue(ctx, notice("alone")); err != nil {
		t.Fatal(err)
	}
	if !woken() {
		t.Error("a notice enqueued alone did not wake the sender")
	}
}

// TestConcurrentFirstOpen: Jarvis processes starting at once on a fresh
// PostgreSQL database (a holder and its standby on another host) all come
// up; one creates the schema, the others wait for it. (On SQLite, where
// both processes run on one machine, they still race; not covered here.)
func TestConcurrentFirstOpen(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("runs in the PostgreSQL pass")
	}
	cfg := testdb.EmptyConfig(t, testEngine)
	errs := make(chan error, 4)
	for range cap(errs) {
		go func() {
			s, err := store.Open(context.Background(), cfg, zerolog.Nop())
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Errorf("open: %v", err)
		}
	}
}

// TestOutboxUrgentLaneFirst: the sender reads the urgent lane first, so an
// urgent notice enqueued behind more notices than one read takes is read
// at once, and kept urgent; the read lists in outbox order.
func TestOutboxUrgentLaneFirst(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	for i := range 10 {
		if err := s.Outbox().Enqueue(ctx, core.Notice{Key: fmt.Sprintf("flood:%d", i), RoomID: "!room", Kind: core.NoticeMessage, Body: "flood"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Outbox().Enqueue(ctx, core.Notice{Key: "halt", RoomID: "!room", Kind: core.NoticeMessage, Body: "halted", Urgent: true}); err != nil {
		t.Fatal(err)
	}
	waiting, err := s.Outbox().Waiting(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range waiting {
		got = append(got, fmt.Sprintf("%s/%t", e.Key, e.Urgent))
	}
	if want := "flood:0/false flood:1/false halt/true"; strings.Join(got, " ") != want {
		t.Errorf("waiting = %q, want %q", strings.Join(got, " "), want)
	}
}
