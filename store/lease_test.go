package store_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/mattn/go-sqlite3"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

const leaseTTL = 30 * time.Second

var leaseStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// What the lease service does is tested in core/lease; here, what the
// engines' locks and clocks decide: acquires at once, a takeover while
// the holder's fenced transaction is open, clock skew and LISTEN/NOTIFY.

// newTestLease returns a lease service for holder on s, announcing
// takeovers in !room:test; wire, when given, changes what it is wired to.
func newTestLease(s *store.Store, holder string, clock core.Clock, wire ...func(*lease.Deps)) *lease.Lease {
	w := services.Wiring{Store: s, Clock: clock, Room: "!room:test"}
	return w.Lease(lease.Config{WorkspaceID: "ws1", TTL: leaseTTL}, holder, wire...)
}

func TestLeaseConcurrentAcquire(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	clock := coretest.NewClock(leaseStart)
	const n = 6
	leases := make([]*lease.Lease, n)
	for i := range leases {
		leases[i] = newTestLease(testdb.OpenConfig(t, cfg), "jarvis-"+string(rune('a'+i)), clock)
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i, l := range leases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = l.Acquire(ctx)
		}()
	}
	wg.Wait()
	won := 0
	for i, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, core.ErrLeaseHeld):
			t.Errorf("instance %d: %v, want nil or ErrLeaseHeld", i, err)
		}
	}
	if won != 1 {
		t.Errorf("%d instances hold the lease, want exactly 1", won)
	}
}

// TestLeaseFenceHoldsUntilCommit: a takeover tried while the holder's
// fenced transaction is open cannot happen before it commits, so the
// holder's writes land under its epoch before the next epoch begins
// (PostgreSQL through the fence's row lock, SQLite through the immediate
// transaction's write lock). The takeover is tried without waiting for
// locks, so the test needs no time window: it is refused as locked out
// while the transaction is open, and goes through once it has committed.
func TestLeaseFenceHoldsUntilCommit(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	sa, sb := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
	// b's one connection gives up on a lock at once.
	sb.DB.RawDB.SetMaxOpenConns(1)
	noWait := "PRAGMA busy_timeout = 0"
	if cfg.Type == store.Postgres {
		noWait = "SET lock_timeout = '10ms'"
	}
	if _, err := sb.DB.Exec(ctx, noWait); err != nil {
		t.Fatalf("%s: %v", noWait, err)
	}
	leases := sa.Leases()
	now := leaseStart
	rec, ok, err := leases.Acquire(ctx, "ws1", "jarvis-a", now, now.Add(leaseTTL))
	if err != nil || !ok {
		t.Fatalf("acquire: %v %v", ok, err)
	}
	// b's clock says a's lease has expired.
	later := now.Add(2 * leaseTTL)
	err = sa.InTx(ctx, func(ctx context.Context) error {
		if err := leases.Fence(ctx, "ws1", "jarvis-a", rec.Epoch, now); err != nil {
			return err
		}
		got, ok, err := sb.Leases().Acquire(context.Background(), "ws1", "jarvis-b", later, later.Add(leaseTTL))
		switch {
		case err == nil && ok:
			t.Errorf("b took the lease (epoch %d) while a's fenced transaction was open", got.Epoch)
		case !lockedOut(err):
			t.Errorf("b's acquire while a's fenced transaction was open: %v %v, want it locked out", ok, err)
		}
		_, err = sa.DB.Exec(ctx, `INSERT INTO bot_state (key, value) VALUES ('fenced', 'a')`)
		return err
	})
	if err != nil {
		t.Fatalf("fenced transaction: %v", err)
	}
	got, ok, err := sb.Leases().Acquire(ctx, "ws1", "jarvis-b", later, later.Add(leaseTTL))
	if err != nil || !ok || got.Holder != "jarvis-b" || got.Epoch != rec.Epoch+1 {
		t.Errorf("after commit: holder %q epoch %d (%v %v), want jarvis-b epoch %d", got.Holder, got.Epoch, ok, err, rec.Epoch+1)
	}
}

// lockedOut reports whether err says a statement gave up waiting for a
// lock: SQLite's busy, PostgreSQL's lock_not_available.
func lockedOut(err error) bool {
	var lite sqlite3.Error
	var pg *pgconn.PgError
	return errors.As(err, &lite) && lite.Code == sqlite3.ErrBusy || errors.As(err, &pg) && pg.Code == "55P03"
}

// TestLeaseFenceInTx: with the lease wired as the store's fence, every
// write transaction checks the epoch inside it. While the holder's
// transaction is open no takeover gets through; once another Jarvis has
// taken over, the old holder's sender check, which reads the row, stops
// although its memory says it still holds, and a transaction it starts
// under its epoch, and an enqueue outside any transaction, write nothing.
func TestLeaseFenceInTx(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	sa, sb := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
	sb.DB.RawDB.SetMaxOpenConns(1)
	noWait := "PRAGMA busy_timeout = 0"
	if cfg.Type == store.Postgres {
		noWait = "SET lock_timeout = '10ms'"
	}
	if _, err := sb.DB.Exec(ctx, noWait); err != nil {
		t.Fatalf("%s: %v", noWait, err)
	}
	clock := coretest.NewClock(leaseStart)
	a := newTestLease(sa, "jarvis-a", clock)
	sa.SetFence(a.FenceHeld)
	if _, err := a.Acquire(ctx); err != nil {
		t.Fatalf("acquire: %v", err)
	}
	// b's clock runs a whole lease ahead: to b, a's lease has expired.
	ahead := coretest.NewClock(leaseStart.Add(2 * leaseTTL))
	b := newTestLease(sb, "jarvis-b", ahead)

	write := func(ctx context.Context, value string) error {
		_, err := sa.DB.Exec(ctx, `INSERT INTO bot_state (key, value) VALUES ($1, $1)`, value)
		return err
	}
	// A token a's API authenticates with, whose use it records.
	cred := credential.Credential{ID: "cred_fence", Role: credential.Supervisor, CreatedAt: leaseStart}
	if err := sa.Credentials().InsertCredential(ctx, cred, "fence-hash", nil); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name    string
		do      func() error
		wantErr error
		// wantRows are the bot_state rows a wrote, wantNotices the outbox.
		wantRows, wantNotices int
	}{
		{name: "the holder writes", do: func() error {
			return sa.InTx(ctx, func(ctx context.Context) error { return write(ctx, "held") })
		}, wantRows: 1, wantNotices: 1},
		{name: "no takeover while the holder's transaction is open", do: func() error {
			return sa.InTx(ctx, func(ctx context.Context) error {
				if _, err := b.Acquire(context.Background()); !lockedOut(err) {
					t.Errorf("b's acquire while a's transaction was open: %v, want it locked out", err)
				}
				return write(ctx, "open")
			})
		}, wantRows: 2, wantNotices: 1},
		{name: "b takes over once it has committed", do: func() error {
			_, err := b.Acquire(ctx)
			return err
		}, wantRows: 2, wantNotices: 2},
		// a's memory still says it holds the lease with most of it left.
		{name: "a's sender stops on reading the row", do: func() error { return a.Check(ctx) },
			wantErr: core.ErrStaleEpoch, wantRows: 2, wantNotices: 2},
		{name: "a transaction under the old epoch writes nothing", do: func() error {
			return sa.InTx(ctx, func(ctx context.Context) error { return write(ctx, "stale") })
		}, wantErr: core.ErrStaleEpoch, wantRows: 2, wantNotices: 2},
		{name: "nor does an enqueue outside a transaction", do: func() error {
			return sa.Outbox().Enqueue(ctx, core.Notice{Key: "stale", RoomID: "!room:test", Kind: core.NoticeMessage, Body: "hi"})
		}, wantErr: core.ErrStaleEpoch, wantRows: 2, wantNotices: 2},
		{name: "nor does recording a token's use", do: func() error {
			touched := sa.Credentials().TouchCredentials(ctx, map[string]time.Time{cred.ID: leaseStart.Add(time.Minute)})
			if got, _, err := sa.Credentials().CredentialByHash(ctx, "fence-hash"); err != nil || !got.LastUsedAt.IsZero() {
				t.Errorf("the token's last use reads %s (%v), want none", got.LastUsedAt, err)
			}
			return touched
		}, wantErr: core.ErrStaleEpoch, wantRows: 2, wantNotices: 2},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.do(); !errors.Is(err, st.wantErr) {
				t.Fatalf("error %v, want %v", err, st.wantErr)
			}
			if n := testdb.Rows(t, sa, "bot_state WHERE key IN ('held', 'open', 'stale')"); n != st.wantRows {
				t.Errorf("%d rows written, want %d", n, st.wantRows)
			}
			if n := testdb.Rows(t, sa, "outbox"); n != st.wantNotices {
				t.Errorf("%d notices, want %d", n, st.wantNotices)
			}
		})
	}
}

// TestLeaseClockSkew: on PostgreSQL, where Jarvis processes on several
// hosts share the lease, a standby whose clock runs ahead of the holder's
// by more than the lease's length cannot take over a live lease, because
// the database's clock judges expiry. The same skew judged by the hosts'
// clocks (as SQLite does, where it cannot happen) does take it over. The
// standby asking whether a lease is live gets the same answer.
func TestLeaseClockSkew(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("the hosts of a SQLite store share one clock")
	}
	tests := []struct {
		name         string
		open         func(testing.TB, store.Config) *store.Store
		wantTakeover bool
	}{
		{name: "the database's clock keeps the lease", open: testdb.OpenDBClock},
		{name: "the hosts' clocks would hand it over", open: testdb.OpenConfig, wantTakeover: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cfg := testdb.NewConfig(t, testEngine)
			now := time.Now()
			a := newTestLease(tt.open(t, cfg), "jarvis-a", coretest.NewClock(now))
			b := newTestLease(tt.open(t, cfg), "jarvis-b", coretest.NewClock(now.Add(leaseTTL+time.Minute)))
			if _, err := a.Acquire(ctx); err != nil {
				t.Fatalf("a acquires: %v", err)
			}
			// What `jarvis circuit-breaker reset` asks before it acts
			// without the lease: is a Jarvis holding it now?
			rec, err := b.Live(ctx)
			if live := err == nil && rec.Holder == "jarvis-a"; live == tt.wantTakeover {
				t.Errorf("b sees a live lease: %+v, %v; want live %v", rec, err, !tt.wantTakeover)
			}
			_, err = b.Acquire(ctx)
			if took := err == nil; took != tt.wantTakeover {
				t.Fatalf("b took the lease over: %v (%v), want %v", took, err, tt.wantTakeover)
			}
			if !tt.wantTakeover && !errors.Is(err, core.ErrLeaseHeld) {
				t.Errorf("b's acquire: %v, want ErrLeaseHeld", err)
			}
			if err := a.Check(ctx); (err == nil) == tt.wantTakeover {
				t.Errorf("a's check after b's try: %v", err)
			}
		})
	}
}

// TestLeaseReleaseNotified: on PostgreSQL a standby learns from the
// holder's release itself (LISTEN/NOTIFY) that the lease is free, and
// takes it over in the round that wakes, without waiting for its poll:
// its timer never fires in this test.
func TestLeaseReleaseNotified(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("LISTEN/NOTIFY is PostgreSQL's; on SQLite a standby polls")
	}
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	sa, sb := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
	clock := coretest.NewClock(leaseStart)
	b := newTestLease(sb, "jarvis-b", clock)
	if _, err := b.Acquire(ctx); err != nil {
		t.Fatalf("b acquire: %v", err)
	}

	released := make(chan struct{}, 1)
	listening := make(chan struct{})
	var once sync.Once
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sa.Listen(runCtx, map[string]func(){store.LeaseReleased: func() {
			once.Do(func() { close(listening) })
			select {
			case released <- struct{}{}:
			default:
			}
		}}, time.Second, func(err error) { t.Errorf("listen: %v", err) })
	}()
	// The poll's timer never fires.
	never := func(time.Duration) <-chan time.Time { return nil }
	a := newTestLease(sa, "jarvis-a", clock, func(d *lease.Deps) { d.After, d.Released = never, released })
	changes := make(chan bool, 10)
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = a.Run(runCtx, func(held bool, _ int64) { changes <- held })
	}()
	t.Cleanup(func() { stop(); wg.Wait() })

	if held := <-changes; held {
		t.Fatal("a took the lease b holds")
	}
	select {
	case <-listening:
	case <-time.After(10 * time.Second):
		t.Fatal("a never listened")
	}
	if err := b.Release(ctx); err != nil {
		t.Fatalf("b release: %v", err)
	}
	select {
	case held := <-changes:
		if !held {
			t.Fatal("a's next change is not the takeover")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a did not take the released lease over, though its poll never came")
	}
	if err := a.Check(ctx); err != nil {
		t.Errorf("a holds the lease, yet: %v", err)
	}
}
