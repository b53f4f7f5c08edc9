package lease_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

const leaseTTL = 30 * time.Second

var leaseStart = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// newTestLease returns a lease service for holder on s, announcing
// takeovers in !room:test; wire, when given, changes what it is wired to.
func newTestLease(s *store.Store, holder string, clock core.Clock, wire ...func(*lease.Deps)) *lease.Lease {
	w := services.Wiring{Store: s, Clock: clock, Room: "!room:test"}
	return w.Lease(lease.Config{WorkspaceID: "ws1", TTL: leaseTTL}, holder, wire...)
}

// leaseTimer stands in for time.After in Lease.Run: every wait is reported
// on waits, and the test fires the timer by sending on fire.
type leaseTimer struct {
	waits chan time.Duration
	fire  chan time.Time
}

func (f *leaseTimer) After(d time.Duration) <-chan time.Time {
	f.waits <- d
	return f.fire
}

func TestLeaseTakeover(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cfg := testdb.NewConfig(t, engine)
			sa, sb := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
			clock := coretest.NewClock(leaseStart)
			a, b := newTestLease(sa, "jarvis-a", clock), newTestLease(sb, "jarvis-b", clock)
			byName := map[string]*lease.Lease{"a": a, "b": b}
			storeOf := map[string]*store.Store{"a": sa, "b": sb}

			steps := []struct {
				name      string
				advance   time.Duration
				who       string
				op        string // acquire, renew, check, fence, release
				epoch     int64  // for fence
				wantErr   error
				wantEpoch int64 // for a successful acquire
				wantHeld  bool  // Holding() afterwards
			}{
				{name: "a takes the free lease", who: "a", op: "acquire", wantEpoch: 1, wantHeld: true},
				{name: "b is refused while a holds it", advance: 10 * time.Second, who: "b", op: "acquire", wantErr: core.ErrLeaseHeld},
				{name: "a acquiring again keeps its epoch", who: "a", op: "acquire", wantEpoch: 1, wantHeld: true},
				{name: "a renews", advance: 10 * time.Second, who: "a", op: "renew", wantHeld: true},
				{name: "a may send", who: "a", op: "check", wantHeld: true},
				{name: "a's lease lapses and b takes over with the next epoch", advance: leaseTTL, who: "b", op: "acquire", wantEpoch: 2, wantHeld: true},
				{name: "a's check is stale", who: "a", op: "check", wantErr: core.ErrStaleEpoch},
				{name: "a's fence is stale", who: "a", op: "fence", epoch: 1, wantErr: core.ErrStaleEpoch},
				{name: "a's renewal is stale", who: "a", op: "renew", wantErr: core.ErrStaleEpoch},
				{name: "a is refused while b holds it", who: "a", op: "acquire", wantErr: core.ErrLeaseHeld},
				{name: "b's fence passes", who: "b", op: "fence", epoch: 2, wantHeld: true},
				{name: "b's fence with an old epoch fails", who: "b", op: "fence", epoch: 1, wantErr: core.ErrStaleEpoch, wantHeld: true},
				{name: "b releases on a clean stop", who: "b", op: "release"},
				{name: "b may no longer send", who: "b", op: "check", wantErr: core.ErrStaleEpoch},
				{name: "a takes over at once with the next epoch", who: "a", op: "acquire", wantEpoch: 3, wantHeld: true},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					clock.Advance(st.advance)
					l := byName[st.who]
					var err error
					var epoch int64
					switch st.op {
					case "acquire":
						epoch, err = l.Acquire(ctx)
					case "renew":
						err = l.Renew(ctx)
					case "check":
						err = l.Check(ctx)
					case "fence":
						err = storeOf[st.who].InTx(ctx, func(ctx context.Context) error { return l.Fence(ctx, st.epoch) })
					case "release":
						err = l.Release(ctx)
					}
					if !errors.Is(err, st.wantErr) {
						t.Fatalf("%s: error %v, want %v", st.op, err, st.wantErr)
					}
					if st.wantEpoch != 0 && epoch != st.wantEpoch {
						t.Errorf("epoch %d, want %d", epoch, st.wantEpoch)
					}
					if _, held := l.Holding(); held != st.wantHeld {
						t.Errorf("holding %v, want %v", held, st.wantHeld)
					}
				})
			}

			t.Run("a refusal names the holder", func(t *testing.T) {
				_, err := b.Acquire(ctx)
				var held *lease.HeldError
				if !errors.As(err, &held) {
					t.Fatalf("error %v, want a LeaseHeldError", err)
				}
				if held.Lease.Holder != "jarvis-a" || held.Lease.Epoch != 3 {
					t.Errorf("holder %q epoch %d, want jarvis-a epoch 3", held.Lease.Holder, held.Lease.Epoch)
				}
				if !strings.Contains(err.Error(), "jarvis-a holds it since") {
					t.Errorf("message %q does not name the holder", err)
				}
			})

			t.Run("every new epoch is announced once", func(t *testing.T) {
				want := map[string]string{
					"lease:ws1:1": "Jarvis `jarvis-a` holds the workspace lease",
					"lease:ws1:2": "`jarvis-b` took over the workspace lease for `ws1` (epoch 2). The previous holder `jarvis-a` (epoch 1) is fenced out",
					"lease:ws1:3": "`jarvis-a` took over the workspace lease for `ws1` (epoch 3). The previous holder `jarvis-b` (epoch 2)",
				}
				waiting, err := sa.Outbox().Waiting(ctx, 100)
				if err != nil {
					t.Fatalf("waiting: %v", err)
				}
				if len(waiting) != len(want) {
					t.Fatalf("%d notices, want %d: %+v", len(waiting), len(want), waiting)
				}
				for _, e := range waiting {
					if !strings.Contains(e.Body, want[e.Key]) || want[e.Key] == "" || e.RoomID != "!room:test" {
						t.Errorf("notice %q in %q: %q, want it to contain %q", e.Key, e.RoomID, e.Body, want[e.Key])
					}
				}
			})
		})
	}
}

func TestLeaseCheckMargin(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s := testdb.OpenStore(t, engine)
			clock := coretest.NewClock(leaseStart)
			l := newTestLease(s, "jarvis-a", clock)
			if _, err := l.Acquire(ctx); err != nil {
				t.Fatalf("acquire: %v", err)
			}
			steps := []struct {
				name      string
				advance   time.Duration
				renew     bool
				wantCheck error
				wantHeld  bool
			}{
				{name: "fresh lease", wantHeld: true},
				{name: "one renewal period later", advance: leaseTTL / 3, wantHeld: true},
				{name: "a renewal missed: less than a third left", advance: leaseTTL/3 + time.Second, wantCheck: core.ErrStaleEpoch, wantHeld: true},
				{name: "renewed in time", renew: true, wantHeld: true},
				{name: "expired without renewal", advance: leaseTTL, wantCheck: core.ErrStaleEpoch},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					clock.Advance(st.advance)
					if st.renew {
						if err := l.Renew(ctx); err != nil {
							t.Fatalf("renew: %v", err)
						}
					}
					if err := l.Check(ctx); !errors.Is(err, st.wantCheck) {
						t.Errorf("check: %v, want %v", err, st.wantCheck)
					}
					if _, held := l.Holding(); held != st.wantHeld {
						t.Errorf("holding %v, want %v", held, st.wantHeld)
					}
				})
			}
		})
	}
}

func TestLeaseFenceRollsBack(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			s := testdb.OpenStore(t, engine)
			clock := coretest.NewClock(leaseStart)
			l := newTestLease(s, "jarvis-a", clock, func(d *lease.Deps) { d.Room = "" })
			epoch, err := l.Acquire(ctx)
			if err != nil {
				t.Fatalf("acquire: %v", err)
			}
			tests := []struct {
				name     string
				advance  time.Duration
				wantErr  error
				wantSent bool
			}{
				{name: "current epoch writes", wantSent: true},
				{name: "expired epoch writes nothing", advance: leaseTTL, wantErr: core.ErrStaleEpoch},
			}
			for i, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					clock.Advance(tt.advance)
					key := "reply:" + tt.name
					err := s.InTx(ctx, func(ctx context.Context) error {
						if err := s.Outbox().Enqueue(ctx, core.Notice{Key: key, RoomID: "!r", Kind: core.NoticeMessage, Body: "hi"}); err != nil {
							return err
						}
						return l.Fence(ctx, epoch)
					})
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("write %d: %v, want %v", i, err, tt.wantErr)
					}
					_, err = s.Outbox().Get(ctx, key)
					if sent := err == nil; sent != tt.wantSent {
						t.Errorf("notice written %v, want %v (%v)", sent, tt.wantSent, err)
					}
				})
			}
		})
	}
}

func TestLeaseRun(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cfg := testdb.NewConfig(t, engine)
			sa, sb := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
			clock := coretest.NewClock(leaseStart)
			timer := &leaseTimer{waits: make(chan time.Duration), fire: make(chan time.Time)}
			a := newTestLease(sa, "jarvis-a", clock, func(d *lease.Deps) { d.After = timer.After })
			b := newTestLease(sb, "jarvis-b", clock)
			if _, err := b.Acquire(ctx); err != nil {
				t.Fatalf("b acquire: %v", err)
			}
			type change struct {
				held  bool
				epoch int64
			}
			changes := make(chan change, 10)
			runCtx, stop := context.WithCancel(ctx)
			done := make(chan error, 1)
			go func() {
				done <- a.Run(runCtx, func(held bool, epoch int64) { changes <- change{held, epoch} })
			}()

			nextChange := func() (change, bool) {
				select {
				case c := <-changes:
					return c, true
				default:
					return change{}, false
				}
			}
			rounds := []struct {
				name       string
				advance    time.Duration
				wantChange bool
				want       change
			}{
				{name: "b holds it: a stays mute", wantChange: true, want: change{false, 0}},
				{name: "still held by b: no change", advance: leaseTTL / 3},
				{name: "b's lease lapses: a takes over", advance: leaseTTL, wantChange: true, want: change{true, 2}},
				{name: "a renews: no change", advance: leaseTTL / 3},
				{name: "a renews again: no change", advance: leaseTTL / 3},
			}
			for i, r := range rounds {
				t.Run(r.name, func(t *testing.T) {
					clock.Advance(r.advance)
					if i > 0 {
						timer.fire <- clock.Now()
					}
					if d := <-timer.waits; d != leaseTTL/3 {
						t.Errorf("waits %s between rounds, want %s", d, leaseTTL/3)
					}
					c, ok := nextChange()
					if ok != r.wantChange || c != r.want {
						t.Errorf("change %+v (%v), want %+v (%v)", c, ok, r.want, r.wantChange)
					}
					if err := a.Check(ctx); r.wantChange && (err == nil) != r.want.held {
						t.Errorf("check: %v, want it to pass iff held (%v)", err, r.want.held)
					}
				})
			}

			t.Run("a clean stop releases the lease", func(t *testing.T) {
				stop()
				if err := <-done; err != nil {
					t.Fatalf("run: %v", err)
				}
				if c, ok := nextChange(); !ok || c != (change{false, 2}) {
					t.Errorf("change %+v (%v), want {false 2}", c, ok)
				}
				if err := a.Check(ctx); !errors.Is(err, core.ErrStaleEpoch) {
					t.Errorf("check after stop: %v, want ErrStaleEpoch", err)
				}
				epoch, err := b.Acquire(ctx)
				if err != nil || epoch != 3 {
					t.Errorf("b acquire after release: epoch %d, %v; want 3", epoch, err)
				}
			})
		})
	}
}
