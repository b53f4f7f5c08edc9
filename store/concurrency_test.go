package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// The tests in this file race many goroutines, spread over several stores
// on one database as several Jarvis processes would be, at one check that
// reads and then writes, and count how often it let a write through. On
// PostgreSQL nothing but the transactions' isolation keeps them exact.

// racers is how many goroutines race in each test, over raceStores stores.
const racers, raceStores = 16, 4

// race runs fn(i, store) for i in [0, racers) at once and waits for all.
func race(t *testing.T, stores []*store.Store, fn func(i int, s *store.Store)) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			fn(i, stores[i%len(stores)])
		}()
	}
	close(start)
	wg.Wait()
}

// raceOn opens raceStores stores on one fresh database.
func raceOn(t *testing.T) []*store.Store {
	cfg := testdb.NewConfig(t, testEngine)
	stores := make([]*store.Store, raceStores)
	for i := range stores {
		stores[i] = testdb.OpenConfig(t, cfg)
	}
	return stores
}

// TestCardClaimRace: workers claiming one card at once; exactly one gets
// it, and the card names that one as its worker.
func TestCardClaimRace(t *testing.T) {
	ctx := context.Background()
	stores := raceOn(t)
	cards := make(map[*store.Store]*card.Service, len(stores))
	for _, s := range stores {
		cards[s] = services.Wiring{Store: s, Clock: core.SystemClock{}, Room: testRoom}.Cards(card.Config{})
	}
	c := services.PublishOne(t, cards[stores[0]], "claim-race", services.CardSpec("Ship the importer", card.P2), "")

	var mu sync.Mutex
	var winners []string
	race(t, stores, func(i int, s *store.Store) {
		worker := fmt.Sprintf("agent-%d", i)
		_, err := cards[s].SetStateAs(ctx, worker, c.ID, card.Claimed, "")
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			winners = append(winners, worker)
		case errors.Is(err, core.ErrForbidden), errors.Is(err, core.ErrIllegalTransition):
		default:
			t.Errorf("%s claims: %v", worker, err)
		}
	})
	if len(winners) != 1 {
		t.Fatalf("claimed by %v, want exactly one worker", winners)
	}
	got, err := cards[stores[0]].Get(ctx, c.ID)
	if err != nil {
		t.Fatalf("get card: %v", err)
	}
	if got.State != card.Claimed || got.Worker != winners[0] {
		t.Errorf("card %s worked by %q, want claimed by %s", got.State, got.Worker, winners[0])
	}
}

// TestPendingTakenOnce: answers to one confirmation arriving at once, each
// doing what the confirmation asked in the transaction that resolves it
// (as the command processor does): the action happens exactly once.
func TestPendingTakenOnce(t *testing.T) {
	ctx := context.Background()
	stores := raceOn(t)
	now := time.Now()
	p := core.Pending{Key: "confirm-1", Kind: "sys-clear", RoomID: testRoom, Requester: testAdmin, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := stores[0].AddPending(ctx, p); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	taken := 0
	race(t, stores, func(i int, s *store.Store) {
		err := s.InTx(ctx, func(ctx context.Context) error {
			got, err := s.GetPending(ctx, p.Key)
			if err != nil || !got.ResolvedAt.IsZero() {
				return err
			}
			first, err := s.ResolvePending(ctx, p.Key, core.Confirmed, time.Now())
			if err != nil || !first {
				return err
			}
			mu.Lock()
			taken++
			mu.Unlock()
			return s.Outbox().Enqueue(ctx, core.Notice{Key: fmt.Sprintf("done-%d", i), RoomID: testRoom, Kind: core.NoticeMessage, Body: "Cleared."})
		})
		if err != nil {
			t.Errorf("answer %d: %v", i, err)
		}
	})
	if n := testdb.Rows(t, stores[0], "outbox"); n != 1 {
		t.Errorf("%d confirmations acted on, want 1 (%d transactions took it, retried ones included)", n, taken)
	}
}

// TestLinkCodeTriesCounted: wrong tries on one link code at once are each
// counted: every try sees a different count, and the last count is their
// number.
func TestLinkCodeTriesCounted(t *testing.T) {
	ctx := context.Background()
	stores := raceOn(t)
	code := core.LinkCode{Code: "123456", From: "@telegram_1:example.org", Network: "telegram", Redeemer: testAdmin, ExpiresAt: time.Now().Add(time.Hour)}
	if err := stores[0].AddLinkCode(ctx, code); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []int
	race(t, stores, func(i int, s *store.Store) {
		var tries int
		err := s.InTx(ctx, func(ctx context.Context) (err error) {
			tries, err = s.MissLinkCode(ctx, code.Code)
			return err
		})
		if err != nil {
			t.Errorf("miss %d: %v", i, err)
			return
		}
		mu.Lock()
		seen = append(seen, tries)
		mu.Unlock()
	})
	slices.Sort(seen)
	want := make([]int, racers)
	for i := range want {
		want[i] = i + 1
	}
	if !slices.Equal(seen, want) {
		t.Errorf("tries seen %v, want each of 1 to %d once", seen, racers)
	}
}

// TestOutboxKeyTakenOnce: notices enqueued at once under one key; exactly
// one is stored and every other enqueue is told ErrDuplicate.
func TestOutboxKeyTakenOnce(t *testing.T) {
	ctx := context.Background()
	stores := raceOn(t)
	var mu sync.Mutex
	stored := 0
	race(t, stores, func(i int, s *store.Store) {
		err := s.Outbox().Enqueue(ctx, core.Notice{Key: "reply:$event:1", RoomID: testRoom, Kind: core.NoticeMessage, Body: fmt.Sprintf("Answer %d", i)})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil:
			stored++
		case !errors.Is(err, core.ErrDuplicate):
			t.Errorf("enqueue %d: %v", i, err)
		}
	})
	if n := testdb.Rows(t, stores[0], "outbox"); stored != 1 || n != 1 {
		t.Errorf("%d enqueues succeeded and %d notices stored, want 1 and 1", stored, n)
	}
}

// TestSerializationFailureRerun: two PostgreSQL transactions that read a
// value and then both write it collide; the store runs the refused one
// again, and each transaction's commit hook runs once, after its commit.
func TestSerializationFailureRerun(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("SQLite runs one writer at a time: nothing collides")
	}
	ctx := context.Background()
	stores := raceOn(t)[:2]
	if err := stores[0].SetState(ctx, "counter", "0"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	runs, hooks := 0, map[int]int{}
	rerunsBefore := metrics.Sum("jarvis_store_transaction_reruns_total")
	read := sync.WaitGroup{}
	read.Add(len(stores))
	var wg sync.WaitGroup
	for i, s := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := true
			err := s.InTx(ctx, func(ctx context.Context) error {
				mu.Lock()
				runs++
				mu.Unlock()
				v, err := s.State(ctx, "counter")
				if err != nil {
					return err
				}
				if first {
					// Both read before either writes.
					first = false
					read.Done()
					read.Wait()
				}
				core.AfterCommit(ctx, func() {
					mu.Lock()
					hooks[i]++
					mu.Unlock()
				})
				return s.SetState(ctx, "counter", v+"+1")
			})
			if err != nil {
				t.Errorf("transaction %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	got, err := stores[0].State(ctx, "counter")
	if err != nil || got != "0+1+1" {
		t.Errorf("counter %q (%v), want 0+1+1: the rerun must see the first one's write", got, err)
	}
	if runs != 3 || hooks[0] != 1 || hooks[1] != 1 {
		t.Errorf("%d runs, hooks ran %v times; want 3 runs and each hook once", runs, hooks)
	}
	if reruns := metrics.Sum("jarvis_store_transaction_reruns_total") - rerunsBefore; reruns != 1 {
		t.Errorf("/metrics counted %v reruns, want 1", reruns)
	}
}

// TestIDCollisionRerun: a transaction that inserts a card set under an id
// another process made first (two Jarvis processes taking agents' reports
// can make the same id in the same millisecond) is run again, and its
// second run, with a new id, commits. A collision on a key that is not a
// made id (a set's idempotency key, inserted here without the ON CONFLICT
// the store's own insert has) is not run again: it fails at once.
func TestIDCollisionRerun(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("on SQLite one process takes the reports, and its ids never repeat")
	}
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	set := func(id, key string) card.Set {
		return card.Set{ID: id, Key: key, Fingerprint: "f", Author: "@alice:example.org", Size: 0, PublishedAt: time.UnixMilli(1)}
	}
	if err := s.Cards().InsertCardSet(ctx, set("set_0000000000000001", "first")); err != nil {
		t.Fatal(err)
	}
	rerunsBefore := metrics.Sum("jarvis_store_transaction_reruns_total")
	ids := []string{"set_0000000000000001", "set_0000000000000002"}
	runs := 0
	err := s.InTx(core.Unfenced(ctx), func(ctx context.Context) error {
		id := ids[min(runs, len(ids)-1)]
		runs++
		return s.Cards().InsertCardSet(ctx, set(id, "second"))
	})
	if err != nil || runs != 2 {
		t.Fatalf("InTx = %v after %d runs, want the second run, with a new id, to commit", err, runs)
	}
	if reruns := metrics.Sum("jarvis_store_transaction_reruns_total") - rerunsBefore; reruns != 1 {
		t.Errorf("/metrics counted %v reruns, want 1", reruns)
	}
	if got, err := s.Cards().CardSetByKey(ctx, "second"); err != nil || got.ID != "set_0000000000000002" {
		t.Errorf("the set stored under the second key is %q (%v), want set_0000000000000002", got.ID, err)
	}

	runs = 0
	err = s.InTx(core.Unfenced(ctx), func(ctx context.Context) error {
		runs++
		_, err := s.DB.Exec(ctx, "INSERT INTO card_set (id, idem_key, fingerprint, author, card_count, published_at) VALUES ($1, $2, 'f', 'a', 0, 1)",
			"set_0000000000000003", "first")
		return err
	})
	if err == nil || runs != 1 {
		t.Errorf("a repeated idempotency key: InTx = %v after %d runs, want an error after one", err, runs)
	}
}
