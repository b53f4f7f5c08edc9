package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// testRoom and testAdmin are the room and admin the card service is wired
// with in tests.
const (
	testRoom  = "!jarvis:example.org"
	testAdmin = "@admin:example.org"
)

// newTestCards returns a card service on a fresh store, with no priority
// budget unless cfg gives one.
func newTestCards(t testing.TB, clock core.Clock, cfg core.CardsConfig) (*core.Cards, *Store) {
	t.Helper()
	s := openTestStore(t)
	c := core.NewCards(s.Cards(), s, s.Outbox(), clock, cfg)
	c.Room = testRoom
	c.Admins = []string{testAdmin}
	return c, s
}

// spec is a valid card spec with the given goal and priority.
func spec(goal string, p core.Priority, deps ...string) core.CardSpec {
	return core.CardSpec{Goal: goal, Acceptance: []string{goal + " is verified"}, Priority: p, DependsOn: deps}
}

// publishOne publishes a one-card set and returns the card.
func publishOne(t testing.TB, c *core.Cards, key string, s core.CardSpec, ratifiedBy string) core.Card {
	t.Helper()
	set, err := c.Publish(context.Background(), core.CardSetInput{Key: key, Author: core.MainAgent, RatifiedBy: ratifiedBy,
		Cards: []core.CardInput{{CardSpec: s}}})
	if err != nil {
		t.Fatalf("publish %s: %v", key, err)
	}
	return set.Cards[0]
}

func TestCardLifecycle(t *testing.T) {
	ctx := context.Background()
	cards, _ := newTestCards(t, core.NewManualClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), core.CardsConfig{})
	card := publishOne(t, cards, "k1", spec("Ship the importer", core.P2), "")
	steps := []struct {
		name      string
		to        core.CardState
		note      string
		wantState core.CardState
		wantErr   error
		wantText  string
	}{
		{name: "published cannot be done", to: core.CardDone, wantState: core.CardPublished, wantErr: core.ErrIllegalTransition, wantText: "from published: claimed, cancelled"},
		{name: "claim", to: core.CardClaimed, note: "worker-3 took it", wantState: core.CardClaimed},
		{name: "start", to: core.CardInProgress, wantState: core.CardInProgress},
		{name: "no needs_decision without a question", to: core.CardNeedsDecision, wantState: core.CardInProgress, wantErr: core.ErrIllegalTransition, wantText: "raises a question"},
		{name: "block", to: core.CardBlocked, note: "CI is down", wantState: core.CardBlocked},
		{name: "resume", to: core.CardInProgress, wantState: core.CardInProgress},
		{name: "finish", to: core.CardDone, note: "merged", wantState: core.CardDone},
		{name: "done is final", to: core.CardPublished, wantState: core.CardDone, wantErr: core.ErrIllegalTransition, wantText: "done is final"},
		{name: "unknown state", to: "shipped", wantState: core.CardDone, wantErr: core.ErrInvalid},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := cards.SetState(ctx, card.ID, st.to, st.note)
			if st.wantErr != nil {
				if !errors.Is(err, st.wantErr) || !strings.Contains(err.Error(), st.wantText) {
					t.Fatalf("SetState(%s) = %v, want %v saying %q", st.to, err, st.wantErr, st.wantText)
				}
			} else if err != nil {
				t.Fatalf("SetState(%s) = %v", st.to, err)
			} else if got.StateNote != st.note {
				t.Errorf("note = %q, want %q", got.StateNote, st.note)
			}
			stored, err := cards.Get(ctx, card.ID)
			if err != nil {
				t.Fatalf("Get: %v", err)
			}
			if stored.State != st.wantState {
				t.Errorf("state = %s, want %s", stored.State, st.wantState)
			}
		})
	}
}

func TestClaimWaitsForDependencies(t *testing.T) {
	ctx := context.Background()
	cards, _ := newTestCards(t, core.NewManualClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), core.CardsConfig{})
	set, err := cards.Publish(ctx, core.CardSetInput{Key: "deps", Author: core.MainAgent, Cards: []core.CardInput{
		{Ref: "schema", CardSpec: spec("Design the schema", core.P1)},
		{Ref: "api", CardSpec: spec("Build the API", core.P1, "schema")},
	}})
	if err != nil {
		t.Fatalf("publish: %v", err)
	}
	schema, api := set.Cards[0], set.Cards[1]
	if len(api.Spec.DependsOn) != 1 || api.Spec.DependsOn[0] != schema.ID {
		t.Fatalf("api depends on %v, want [%s]", api.Spec.DependsOn, schema.ID)
	}
	steps := []struct {
		name    string
		card    string
		to      core.CardState
		wantErr error
	}{
		{name: "api cannot be claimed before the schema is done", card: api.ID, to: core.CardClaimed, wantErr: core.ErrConflict},
		{name: "claim schema", card: schema.ID, to: core.CardClaimed},
		{name: "start schema", card: schema.ID, to: core.CardInProgress},
		{name: "api still waits", card: api.ID, to: core.CardClaimed, wantErr: core.ErrConflict},
		{name: "finish schema", card: schema.ID, to: core.CardDone},
		{name: "api can be claimed", card: api.ID, to: core.CardClaimed},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			_, err := cards.SetState(ctx, st.card, st.to, "")
			if !errors.Is(err, st.wantErr) {
				t.Fatalf("SetState = %v, want %v", err, st.wantErr)
			}
			if st.wantErr != nil && !strings.Contains(err.Error(), "depends on "+schema.ID) {
				t.Errorf("error %q does not name the dependency", err)
			}
		})
	}
	// A later set may depend on a card published earlier, by id.
	later := publishOne(t, cards, "later", spec("Document the API", core.P3, api.ID), "")
	if later.Spec.DependsOn[0] != api.ID {
		t.Errorf("later depends on %v, want %s", later.Spec.DependsOn, api.ID)
	}
}

func TestListAndCountCards(t *testing.T) {
	ctx := context.Background()
	clock := core.NewManualClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	cards, _ := newTestCards(t, clock, core.CardsConfig{})
	low := publishOne(t, cards, "low", spec("Tidy the docs", core.P3), "")
	clock.Advance(time.Minute)
	high := publishOne(t, cards, "high", spec("Fix the outage", core.P0), "")
	clock.Advance(time.Minute)
	mid := publishOne(t, cards, "mid", spec("Add metrics", core.P2), "")
	if _, err := cards.SetState(ctx, mid.ID, core.CardClaimed, ""); err != nil {
		t.Fatalf("claim: %v", err)
	}
	if _, err := cards.SetState(ctx, mid.ID, core.CardBlocked, "waiting on infra"); err != nil {
		t.Fatalf("block: %v", err)
	}
	tests := []struct {
		name    string
		filter  core.CardFilter
		want    []string
		wantErr error
	}{
		{name: "all, most urgent first", filter: core.CardFilter{}, want: []string{high.ID, mid.ID, low.ID}},
		{name: "published only", filter: core.CardFilter{State: core.CardPublished}, want: []string{high.ID, low.ID}},
		{name: "blocked only", filter: core.CardFilter{State: core.CardBlocked}, want: []string{mid.ID}},
		{name: "limit", filter: core.CardFilter{Limit: 1}, want: []string{high.ID}},
		{name: "unknown state", filter: core.CardFilter{State: "lost"}, wantErr: core.ErrInvalid},
		{name: "limit too large", filter: core.CardFilter{Limit: core.MaxCardListLimit + 1}, wantErr: core.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cards.List(ctx, tt.filter)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("List = %v, want %v", err, tt.wantErr)
			}
			var ids []string
			for _, c := range got {
				ids = append(ids, c.ID)
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") {
				t.Errorf("List = %v, want %v", ids, tt.want)
			}
		})
	}
	if n, err := cards.Count(ctx, core.CardBlocked); err != nil || n != 1 {
		t.Errorf("Count(blocked) = %d, %v; want 1", n, err)
	}
	if st, err := cards.StateOf(ctx, mid.ID); err != nil || st != core.CardBlocked {
		t.Errorf("StateOf = %s, %v; want blocked", st, err)
	}
	if _, err := cards.StateOf(ctx, "card_missing"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("StateOf(missing) = %v, want ErrNotFound", err)
	}
}

func TestUpdateCardRefusesStaleWrite(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, core.CardsConfig{})
	card := publishOne(t, cards, "k", spec("Refactor", core.P2), "")
	if _, err := cards.SetState(ctx, card.ID, core.CardClaimed, ""); err != nil {
		t.Fatalf("claim: %v", err)
	}
	next := card
	next.State = core.CardCancelled
	err := s.Cards().UpdateCard(ctx, next, card) // card is the published version, no longer current
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("UpdateCard with a stale version = %v, want ErrConflict", err)
	}
	got, _ := cards.StateOf(ctx, card.ID)
	if got != core.CardClaimed {
		t.Errorf("state = %s, want claimed", got)
	}
}

func TestFenceStopsWrites(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, core.CardsConfig{})
	cards.Fence = func(context.Context) error { return core.ErrStaleEpoch }
	_, err := cards.Publish(ctx, core.CardSetInput{Key: "fenced", Author: core.MainAgent,
		Cards: []core.CardInput{{CardSpec: spec("Anything", core.P2)}}})
	if !errors.Is(err, core.ErrStaleEpoch) {
		t.Fatalf("Publish behind a lost lease = %v, want ErrStaleEpoch", err)
	}
	if _, err := s.Cards().CardSetByKey(ctx, "fenced"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("the set was written anyway: %v", err)
	}
}
