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
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

func TestPublishIdempotency(t *testing.T) {
	ctx := context.Background()
	cards, _ := newTestCards(t, core.SystemClock{}, card.Config{})
	body := []card.Input{
		{Ref: "a", Spec: spec("Write the parser", card.P2)},
		{Ref: "b", Spec: spec("Wire the parser in", card.P2, "a")},
	}
	first, err := cards.Publish(ctx, card.SetInput{Key: "key-1", Author: card.MainAgent, Cards: body})
	if err != nil {
		t.Fatalf("first publish: %v", err)
	}
	if first.Replayed {
		t.Fatalf("first publish says replayed")
	}
	other := []card.Input{{Ref: "a", Spec: spec("Write a different parser", card.P2)}}
	tests := []struct {
		name         string
		key          string
		cards        []card.Input
		wantErr      error
		wantReplayed bool
		wantSameIDs  bool
	}{
		{name: "same key, same body: the first result again", key: "key-1", cards: body, wantReplayed: true, wantSameIDs: true},
		{name: "same key, different body: refused", key: "key-1", cards: other, wantErr: core.ErrUnprocessable},
		{name: "new key, same body: a new set", key: "key-2", cards: body},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cards.Publish(ctx, card.SetInput{Key: tt.key, Author: card.MainAgent, Cards: tt.cards})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Publish = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got.Replayed != tt.wantReplayed {
				t.Errorf("Replayed = %v, want %v", got.Replayed, tt.wantReplayed)
			}
			same := got.ID == first.ID && len(got.Cards) == len(first.Cards)
			for i := range got.Cards {
				same = same && got.Cards[i].ID == first.Cards[i].ID && got.Cards[i].Ref == first.Cards[i].Ref
			}
			if same != tt.wantSameIDs {
				t.Errorf("same ids as the first publish = %v, want %v", same, tt.wantSameIDs)
			}
		})
	}
	all, _ := cards.List(ctx, card.Filter{})
	if len(all) != 4 {
		t.Errorf("%d cards published, want 4 (two sets of two)", len(all))
	}
}

func TestPublishSameKeyConcurrently(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, card.Config{})
	in := card.SetInput{Key: "racing", Author: card.MainAgent, Cards: []card.Input{
		{Spec: spec("One", card.P2)}, {Spec: spec("Two", card.P2)},
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

func TestPublishIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	cards, s := newTestCards(t, clock, testconfig.Cards())
	tests := []struct {
		name      string
		cards     []card.Input
		wantErr   error
		wantField string
	}{
		{
			name: "unknown dependency refuses the whole set",
			cards: []card.Input{
				{Ref: "a", Spec: spec("First", card.P2)},
				{Ref: "b", Spec: spec("Second", card.P2, "card_0000000000000000")},
			},
			wantErr: core.ErrInvalid, wantField: "cards[1].depends_on[0]",
		},
		{
			name: "cycle refuses the whole set",
			cards: []card.Input{
				{Ref: "a", Spec: spec("First", card.P2, "b")},
				{Ref: "b", Spec: spec("Second", card.P2, "a")},
			},
			wantErr: core.ErrInvalid, wantField: "cards[1].depends_on",
		},
		{
			name: "a P0 over budget refuses the P2 beside it too",
			cards: []card.Input{
				{Spec: spec("Routine", card.P2)},
				{Spec: spec("Urgent 1", card.P0)},
				{Spec: spec("Urgent 2", card.P0)},
				{Spec: spec("Urgent 3", card.P0)},
			},
			wantErr: core.ErrBudgetExceeded,
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("refused-%d", i)
			_, err := cards.Publish(ctx, card.SetInput{Key: key, Author: card.MainAgent, Cards: tt.cards})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Publish = %v, want %v", err, tt.wantErr)
			}
			var fe *core.FieldError
			if tt.wantField != "" && (!errors.As(err, &fe) || fe.Field != tt.wantField) {
				t.Errorf("Publish = %v, want an error on %s", err, tt.wantField)
			}
			if _, err := s.Cards().CardSetByKey(ctx, key); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("the refused set was stored: %v", err)
			}
			if all, _ := cards.List(ctx, card.Filter{}); len(all) != 0 {
				t.Errorf("%d cards stored after a refusal, want 0", len(all))
			}
		})
	}
}

// TestPublishReplayPastTheBudget: a set published again under its key is
// answered as the first time, though its own cards have since filled the
// budget that a new set would be refused by.
func TestPublishReplayPastTheBudget(t *testing.T) {
	ctx := context.Background()
	cards, _ := newTestCards(t, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), testconfig.Cards())
	full := []card.Input{{Spec: spec("First urgent card", card.P0)}, {Spec: spec("Second urgent card", card.P0)}}
	first, err := cards.Publish(ctx, card.SetInput{Key: "urgent", Author: card.MainAgent, Cards: full})
	if err != nil {
		t.Fatalf("first publish: %v", err)
	}
	tests := []struct {
		name         string
		key          string
		cards        []card.Input
		wantErr      error
		wantReplayed bool
	}{
		{name: "the same set again: the first result", key: "urgent", cards: full, wantReplayed: true},
		{name: "the key with other cards: refused as reused", key: "urgent", cards: full[:1], wantErr: core.ErrUnprocessable},
		{name: "a new set: refused by the budget", key: "urgent-2", cards: full[:1], wantErr: core.ErrBudgetExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cards.Publish(ctx, card.SetInput{Key: tt.key, Author: card.MainAgent, Cards: tt.cards})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Publish = %v, want %v", err, tt.wantErr)
			}
			if err == nil && (got.Replayed != tt.wantReplayed || got.ID != first.ID) {
				t.Errorf("set %s, replayed %v; want %s, replayed %v", got.ID, got.Replayed, first.ID, tt.wantReplayed)
			}
		})
	}
}

func TestPublishBudgetWindow(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)
	clock := coretest.NewClock(t0)
	cards, _ := newTestCards(t, clock, testconfig.Cards())
	steps := []struct {
		name      string
		at        time.Time
		p         card.Priority
		n         int
		wantErr   bool
		wantRetry time.Time
	}{
		{name: "first P0", at: t0, p: card.P0, n: 1},
		{name: "second P0 an hour later", at: t0.Add(time.Hour), p: card.P0, n: 1},
		{name: "third P0 waits for the first to leave the day", at: t0.Add(2 * time.Hour), p: card.P0, n: 1, wantErr: true, wantRetry: t0.Add(24 * time.Hour)},
		{name: "P2 is unlimited", at: t0.Add(2 * time.Hour), p: card.P2, n: 20},
		{name: "ten P1 fit", at: t0.Add(2 * time.Hour), p: card.P1, n: 10},
		{name: "an eleventh P1 does not", at: t0.Add(3 * time.Hour), p: card.P1, n: 1, wantErr: true, wantRetry: t0.Add(26 * time.Hour)},
		{name: "one millisecond early is still refused", at: t0.Add(24*time.Hour - time.Millisecond), p: card.P0, n: 1, wantErr: true, wantRetry: t0.Add(24 * time.Hour)},
		{name: "a day after the first P0 there is room for one", at: t0.Add(24 * time.Hour), p: card.P0, n: 1},
		{name: "but not for two", at: t0.Add(24 * time.Hour), p: card.P0, n: 1, wantErr: true, wantRetry: t0.Add(25 * time.Hour)},
	}
	for i, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			clock.Set(st.at)
			in := card.SetInput{Key: fmt.Sprintf("budget-%d", i), Author: card.MainAgent}
			for j := range st.n {
				in.Cards = append(in.Cards, card.Input{Spec: spec(fmt.Sprintf("Card %d.%d", i, j), st.p)})
			}
			_, err := cards.Publish(ctx, in)
			if !st.wantErr {
				if err != nil {
					t.Fatalf("Publish = %v", err)
				}
				return
			}
			var be *card.BudgetError
			if !errors.As(err, &be) || !errors.Is(err, core.ErrBudgetExceeded) {
				t.Fatalf("Publish = %v, want a BudgetError", err)
			}
			if be.Priority != st.p || !be.RetryAt.Equal(st.wantRetry) {
				t.Errorf("refused %s until %v, want %s until %v", be.Priority, be.RetryAt, st.p, st.wantRetry)
			}
			if !strings.Contains(err.Error(), string(st.p)) || !strings.Contains(err.Error(), st.wantRetry.UTC().Format(time.RFC3339)) {
				t.Errorf("error %q does not name the class and when room returns", err)
			}
		})
	}
}

// TestDraftTrust: drafts keep where their text came from; a set with any
// text below linked trust is published waiting for ratification, not on
// the backlog, ratified by nobody; ratification from a puppet linked to
// nobody or a relay is refused and changes nothing, from a Matrix admin it
// puts the cards on the backlog; the trust survives the store.
func TestDraftTrust(t *testing.T) {
	ctx := context.Background()
	cards, _ := newTestCards(t, core.SystemClock{}, card.Config{})
	const puppet, linked = "@telegram_7:example.org", "@carol:example.org"
	tests := []struct {
		name          string
		who           string
		drafted, tap  core.Trust
		wantState     card.State
		wantRatifier  string
		wantCardTrust core.Trust
	}{
		{name: "native drafts, native tap", who: linked, drafted: core.TrustNative, tap: core.TrustNative,
			wantState: card.Published, wantRatifier: linked, wantCardTrust: core.TrustNative},
		{name: "linked drafts go to the backlog", who: linked, drafted: core.TrustLinked, tap: core.TrustLinked,
			wantState: card.Published, wantRatifier: linked, wantCardTrust: core.TrustLinked},
		{name: "bridged drafts wait", who: puppet, drafted: core.TrustBridged, tap: core.TrustBridged,
			wantState: card.AwaitingRatification, wantCardTrust: core.TrustBridged},
		{name: "native drafts confirmed through a relay wait", who: linked, drafted: core.TrustNative, tap: core.TrustRelay,
			wantState: card.AwaitingRatification, wantCardTrust: core.TrustRelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := cards.AddDraft(ctx, tt.who, spec("Ship "+tt.name, card.P3), tt.drafted); err != nil {
				t.Fatal(err)
			}
			drafts, err := cards.Drafts(ctx, tt.who)
			if err != nil || len(drafts) != 1 || drafts[0].SourceTrust != tt.drafted {
				t.Fatalf("Drafts = %+v, %v; want one draft of trust %s", drafts, err, tt.drafted)
			}
			set, err := cards.PublishDraft(ctx, tt.who, tt.tap, card.Message{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := cards.Get(ctx, set.Cards[0].ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tt.wantState || got.RatifiedBy != tt.wantRatifier || got.SourceTrust != tt.wantCardTrust {
				t.Errorf("stored card: %s, ratified by %q, trust %s; want %s, %q, %s",
					got.State, got.RatifiedBy, got.SourceTrust, tt.wantState, tt.wantRatifier, tt.wantCardTrust)
			}
			if tt.wantState != card.AwaitingRatification {
				return
			}
			for _, trust := range []core.Trust{core.TrustBridged, core.TrustRelay, core.TrustExternal} {
				if _, err := cards.Ratify(ctx, got.ID, testAdmin, trust); !errors.Is(err, core.ErrForbidden) {
					t.Errorf("ratified by the admin at trust %s: %v, want ErrForbidden", trust, err)
				}
			}
			if _, err := cards.Ratify(ctx, got.ID, puppet, core.TrustNative); !errors.Is(err, core.ErrForbidden) {
				t.Errorf("ratified by a non-admin: %v, want ErrForbidden", err)
			}
			if st, _ := cards.StateOf(ctx, got.ID); st != card.AwaitingRatification {
				t.Fatalf("after refused ratifications the card is %s", st)
			}
			ratified, err := cards.Ratify(ctx, got.ID, testAdmin, core.TrustNative)
			if err != nil || ratified.State != card.Published || ratified.RatifiedBy != testAdmin {
				t.Errorf("native admin's ratification = %s by %s, %v; want published by the admin", ratified.State, ratified.RatifiedBy, err)
			}
		})
	}
}

func TestDrafts(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, card.Config{})
	const alice = "@alice:example.org"
	d1, err := cards.AddDraft(ctx, alice, spec("Collect requirements", card.P2), core.TrustNative)
	if err != nil {
		t.Fatalf("add d1: %v", err)
	}
	d2, err := cards.AddDraft(ctx, alice, spec("Build the thing", card.P2, "d1"), core.TrustNative)
	if err != nil {
		t.Fatalf("add d2: %v", err)
	}
	d3, err := cards.AddDraft(ctx, alice, spec("A mistake", card.P3), core.TrustNative)
	if err != nil {
		t.Fatalf("add d3: %v", err)
	}
	if d1.Ref != "d1" || d2.Ref != "d2" || d3.Ref != "d3" || d1.DraftID != d3.DraftID {
		t.Fatalf("refs %s %s %s in drafts %s/%s; want d1 d2 d3 in one draft", d1.Ref, d2.Ref, d3.Ref, d1.DraftID, d3.DraftID)
	}
	if _, err := cards.AddDraft(ctx, alice, card.Spec{Goal: "no criteria", Priority: card.P2}, core.TrustNative); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("AddDraft without criteria = %v, want ErrInvalid", err)
	}
	if err := cards.DropDraft(ctx, alice, "d3"); err != nil {
		t.Fatalf("drop d3: %v", err)
	}
	if err := cards.DropDraft(ctx, alice, "d3"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("drop d3 twice = %v, want ErrNotFound", err)
	}
	bobs, _ := cards.Drafts(ctx, "@bob:example.org")
	if len(bobs) != 0 {
		t.Errorf("bob sees %d drafts of alice", len(bobs))
	}
	drafts, err := cards.Drafts(ctx, alice)
	if err != nil || len(drafts) != 2 || drafts[1].Goal != "Build the thing" {
		t.Fatalf("Drafts = %+v, %v; want d1 and d2", drafts, err)
	}

	set, err := cards.PublishDraft(ctx, alice, core.TrustNative, card.Message{})
	if err != nil {
		t.Fatalf("PublishDraft: %v", err)
	}
	if len(set.Cards) != 2 || set.Author != card.MainAgent || set.RatifiedBy != alice {
		t.Fatalf("published %d cards by %s ratified by %s; want 2 by main-agent ratified by alice", len(set.Cards), set.Author, set.RatifiedBy)
	}
	for _, c := range set.Cards {
		if c.Author != card.MainAgent || c.RatifiedBy != alice || c.RatifiedRevision != 1 || c.State != card.Published {
			t.Errorf("card %s: author %s, ratified by %s at %d, %s", c.ID, c.Author, c.RatifiedBy, c.RatifiedRevision, c.State)
		}
	}
	if set.Cards[1].Spec.DependsOn[0] != set.Cards[0].ID {
		t.Errorf("d2 depends on %v, want the id of d1 (%s)", set.Cards[1].Spec.DependsOn, set.Cards[0].ID)
	}
	if drafts, _ := cards.Drafts(ctx, alice); len(drafts) != 0 {
		t.Errorf("%d drafts left after publishing", len(drafts))
	}
	if _, err := cards.PublishDraft(ctx, alice, core.TrustNative, card.Message{}); !errors.Is(err, core.ErrInvalid) {
		t.Errorf("PublishDraft of an empty draft = %v, want ErrInvalid", err)
	}
	if stored, err := s.Cards().CardSetByKey(ctx, "draft:"+d1.DraftID); err != nil || stored.Size != 2 {
		t.Errorf("set under the draft's key = %+v, %v", stored, err)
	}

	// A new draft starts a new draft id and counts from d1 again.
	n1, _ := cards.AddDraft(ctx, alice, spec("Next thing", card.P2), core.TrustNative)
	if n1.Ref != "d1" || n1.DraftID == d1.DraftID {
		t.Errorf("new draft: ref %s in %s, want d1 in a new draft", n1.Ref, n1.DraftID)
	}
	if n, err := cards.ClearDrafts(ctx, alice); err != nil || n != 1 {
		t.Errorf("ClearDrafts = %d, %v; want 1", n, err)
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
		c := card.Input{Ref: fmt.Sprintf("c%d", j), Spec: spec(fmt.Sprintf("Set %d card %d", i, j), card.P2)}
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
	cards := card.NewService(crashConfig, card.Deps{Store: s.Cards(), Tx: s, Outbox: s.Outbox(), Clock: core.SystemClock{}})
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
	cards := card.NewService(crashConfig, card.Deps{Store: s.Cards(), Tx: s, Outbox: s.Outbox(), Clock: core.SystemClock{}})
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
		cards := card.NewService(cardsCfg, card.Deps{Store: s.Cards(), Tx: s, Outbox: s.Outbox(), Clock: core.SystemClock{}})
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			in := card.SetInput{Key: fmt.Sprintf("race-%d", i), Author: card.MainAgent,
				Cards: []card.Input{{Spec: spec(fmt.Sprintf("Card %d", i), card.P1)}}}
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
	c := card.Card{ID: "card_orphan", SetID: "set_missing", Spec: spec("An orphan", card.P2), Author: card.MainAgent,
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
