package store_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// What publishing a card set does is tested in core/card; here, what the
// engines' transactions decide: publishes at once, under one key or one
// budget, and a publish killed in the middle.

func TestPublishSameKeyConcurrently(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, card.Config{})
	in := card.SetInput{Key: "racing", Author: card.MainAgent, Cards: []card.Input{
		{Spec: services.CardSpec("One", card.P2)}, {Spec: services.CardSpec("Two", card.P2)},
	}}
	const clients = 8
	type result struct {
		set card.PublishedSet
		err error
	}
	results := make(chan result, clients)
	for range clients {
		go func() {
			set, err := cards.Publish(ctx, in)
			results <- result{set, err}
		}()
	}
	fresh := 0
	var ids []string
	for range clients {
		r := <-results
		set := r.set
		if r.err != nil {
			t.Fatalf("Publish: %v", r.err)
		}
		if !set.Replayed {
			fresh++
		}
		ids = append(ids, set.Cards[0].ID+set.Cards[1].ID)
	}
	if fresh != 1 {
		t.Errorf("%d requests published, want exactly 1 (the others replay)", fresh)
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("requests got different cards: %v", ids)
		}
	}
	var n int
	if err := s.DB.QueryRow(ctx, "SELECT COUNT(*) FROM card").Scan(&n); err != nil || n != 2 {
		t.Errorf("%d cards stored, want 2 (%v)", n, err)
	}
}

// crashEnv names the database a child process publishes into until it is
// killed, crashTypeEnv its engine; crashFromEnv is the index it starts at.
const (
	crashEnv     = "JARVIS_TEST_CARDSET_CRASH_DB"
	crashTypeEnv = "JARVIS_TEST_CARDSET_CRASH_TYPE"
	crashFromEnv = "JARVIS_TEST_CARDSET_CRASH_FROM"
)

// crashSet is the set a crash-test child publishes as number i: 1 to 20
// cards, each depending on the one before.
func crashSet(i int) card.SetInput {
	in := card.SetInput{Key: fmt.Sprintf("crash-%d", i), Author: card.MainAgent}
	for j := range 1 + i%20 {
		c := card.Input{Ref: fmt.Sprintf("c%d", j), Spec: services.CardSpec(fmt.Sprintf("Set %d card %d", i, j), card.P2)}
		if j > 0 {
			c.DependsOn = []string{fmt.Sprintf("c%d", j-1)}
		}
		in.Cards = append(in.Cards, c)
	}
	return in
}

// crashConfig gives P2 a budget too large to run out, so that every card
// the crash test publishes is charged to the ledger in its transaction.
var crashConfig = card.Config{Budget: map[string]card.BudgetRule{"P2": {Count: 1 << 30, Window: 24 * time.Hour}}}

// publishUntilKilled is the child's side of TestPublishSurvivesKill: it
// publishes set after set and reports each one once it is committed.
func publishUntilKilled(t *testing.T, path string) {
	from, err := strconv.Atoi(os.Getenv(crashFromEnv))
	if err != nil {
		t.Fatalf("%s: %v", crashFromEnv, err)
	}
	s := testdb.OpenConfig(t, store.Config{Type: os.Getenv(crashTypeEnv), URI: path})
	cards := services.Wiring{Store: s, Clock: core.SystemClock{}}.Cards(crashConfig)
	for i := from; ; i++ {
		if _, err := cards.Publish(context.Background(), crashSet(i)); err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		fmt.Printf("published %d\n", i)
	}
}

// TestPublishSurvivesKill runs a child process that publishes card sets
// into the test database, kills it with SIGKILL in the middle of publishing,
// restarts it several times, and then checks the database: every set is
// complete or absent, every set the child reported is there, and
// publishing a stored key again returns the stored set.
func TestPublishSurvivesKill(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		publishUntilKilled(t, path)
		return
	}
	if testing.Short() {
		t.Skip("kills child processes")
	}
	cfg := testdb.NewConfig(t, testEngine)
	next := 0 // the first set not reported as published
	const rounds = 10
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPublishSurvivesKill$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashEnv+"="+cfg.URI, crashTypeEnv+"="+cfg.Type, crashFromEnv+"="+strconv.Itoa(next))
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatalf("pipe: %v", err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatalf("start child: %v", err)
		}
		published := make(chan int)
		go func() {
			defer close(published)
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				if n, ok := strings.CutPrefix(sc.Text(), "published "); ok {
					i, _ := strconv.Atoi(n)
					published <- i
				}
			}
		}()
		// Let it publish a good number of sets, then kill it at a random
		// moment, most likely inside a transaction.
		target := next + 100
		deadline := time.After(60 * time.Second)
	wait:
		for {
			select {
			case i, ok := <-published:
				if !ok {
					t.Fatalf("round %d: child exited early: %v", round, cmd.Wait())
				}
				next = i + 1
				if next >= target {
					break wait
				}
			case <-deadline:
				_ = cmd.Process.Kill()
				t.Fatalf("round %d: child published only up to %d in 60 s", round, next)
			}
		}
		time.Sleep(time.Duration(rand.IntN(5000)) * time.Microsecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatalf("kill: %v", err)
		}
		for i := range published {
			next = i + 1 // reported between our decision and the kill
		}
		_ = cmd.Wait()
	}

	ctx := context.Background()
	s := testdb.OpenConfig(t, cfg)
	var partial int
	err := s.DB.QueryRow(ctx, `
		SELECT COUNT(*) FROM (
			SELECT s.id FROM card_set s LEFT JOIN card c ON c.set_id = s.id
			GROUP BY s.id, s.card_count HAVING COUNT(c.id) <> s.card_count
		) AS partial_sets`).Scan(&partial)
	if err != nil || partial != 0 {
		t.Fatalf("%d sets with missing cards (%v)", partial, err)
	}
	var orphans, uncharged int
	if err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM card WHERE set_id NOT IN (SELECT id FROM card_set)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d cards without a set (%v)", orphans, err)
	}
	err = s.DB.QueryRow(ctx, `SELECT (SELECT COUNT(*) FROM card) - (SELECT COUNT(*) FROM card_budget_charge)`).Scan(&uncharged)
	if err != nil || uncharged != 0 {
		t.Fatalf("cards and budget charges differ by %d (%v)", uncharged, err)
	}
	var stored int
	if err := s.DB.QueryRow(ctx, `SELECT COUNT(*) FROM card_set`).Scan(&stored); err != nil {
		t.Fatalf("count sets: %v", err)
	}
	if stored != next && stored != next+1 {
		t.Fatalf("%d sets stored, but the child reported %d: a reported set was lost or an unreported one is stored twice", stored, next)
	}
	cards := services.Wiring{Store: s, Clock: core.SystemClock{}}.Cards(crashConfig)
	for i := range stored + 1 {
		in := crashSet(i)
		prev, err := s.Cards().CardSetByKey(ctx, in.Key)
		found := err == nil
		switch {
		case errors.Is(err, core.ErrNotFound) && i >= next:
		case err != nil:
			t.Fatalf("set %s reported but missing: %v", in.Key, err)
		case prev.Size != len(in.Cards):
			t.Fatalf("set %s holds %d cards, want %d", in.Key, prev.Size, len(in.Cards))
		}
		again, err := cards.Publish(ctx, in)
		if err != nil {
			t.Fatalf("publish %s again: %v", in.Key, err)
		}
		if again.Replayed != found || (found && again.ID != prev.ID) {
			t.Fatalf("publishing %s again after the crash: replayed %v, set %s; stored set %q", in.Key, again.Replayed, again.ID, prev.ID)
		}
	}
	t.Logf("%d rounds killed with SIGKILL; %d sets stored, all complete", rounds, stored)
}

// TestPublishBudgetUnderConcurrency: sets published at once from several
// connections never overdraw a budget. The budget check reads the ledger
// before writing: SQLite's immediate transactions run one at a time,
// PostgreSQL's serializable ones refuse (and the store reruns) all but one
// of those that read the ledger before another's charge committed.
func TestPublishBudgetUnderConcurrency(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	cardsCfg := card.Config{Budget: map[string]card.BudgetRule{"P1": {Count: 5, Window: 24 * time.Hour}}}
	const publishers = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	published, refused := 0, 0
	start := make(chan struct{})
	for i := range publishers {
		s := testdb.OpenConfig(t, cfg)
		cards := services.Wiring{Store: s, Clock: core.SystemClock{}}.Cards(cardsCfg)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			in := card.SetInput{Key: fmt.Sprintf("race-%d", i), Author: card.MainAgent,
				Cards: []card.Input{{Spec: services.CardSpec(fmt.Sprintf("Card %d", i), card.P1)}}}
			_, err := cards.Publish(ctx, in)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				published++
			case errors.Is(err, core.ErrBudgetExceeded):
				refused++
			default:
				t.Errorf("publish %d: %v", i, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if published != 5 || refused != publishers-5 {
		t.Errorf("%d published and %d refused, want 5 and %d", published, refused, publishers-5)
	}
}

// TestCardNeedsItsSet: a card whose set does not exist is refused, on
// PostgreSQL when its transaction commits (the check is deferred there,
// see upgrade 31), and nothing of the transaction is kept.
func TestCardNeedsItsSet(t *testing.T) {
	ctx := context.Background()
	s := testdb.OpenStore(t, testEngine)
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	c := card.Card{ID: "card_orphan", SetID: "set_missing", Spec: services.CardSpec("An orphan", card.P2), Author: card.MainAgent,
		Priority: card.P2, State: card.Published, Revision: 1, CreatedAt: now, UpdatedAt: now}
	err := s.InTx(ctx, func(ctx context.Context) error {
		return s.Cards().InsertCards(ctx, "set_missing", []card.Card{c})
	})
	if err == nil {
		t.Fatal("a card of a set that does not exist was stored")
	}
	var n int
	if err := s.DB.QueryRow(ctx, "SELECT COUNT(*) FROM card").Scan(&n); err != nil || n != 0 {
		t.Errorf("%d cards stored (%v), want none", n, err)
	}
}
