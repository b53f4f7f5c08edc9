package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// The card service's behaviour is tested in core/card; here, what the
// card tables and the write fence keep.

// testRoom and testAdmin are the room and admin the card service is wired
// with in tests.
const (
	testRoom  = "!jarvis:example.org"
	testAdmin = "@admin:example.org"
)

// newTestCards returns a card service on a fresh store, with no priority
// budget unless cfg gives one; wire, when given, changes what it is wired to.
func newTestCards(t testing.TB, clock core.Clock, cfg card.Config, wire ...func(*card.Deps)) (*card.Service, *store.Store) {
	t.Helper()
	s := testdb.OpenStore(t, testEngine)
	w := services.Wiring{Store: s, Clock: clock, Room: testRoom, Admins: []string{testAdmin}}
	return w.Cards(cfg, wire...), s
}

func TestUpdateCardRefusesStaleWrite(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, card.Config{})
	c := services.PublishOne(t, cards, "k", services.CardSpec("Refactor", card.P2), "")
	if _, err := cards.SetState(ctx, c.ID, card.Claimed, ""); err != nil {
		t.Fatalf("claim: %v", err)
	}
	next := c
	next.State = card.Cancelled
	err := s.Cards().UpdateCard(ctx, next, c) // card is the published version, no longer current
	if !errors.Is(err, core.ErrConflict) {
		t.Fatalf("UpdateCard with a stale version = %v, want ErrConflict", err)
	}
	got, _ := cards.StateOf(ctx, c.ID)
	if got != card.Claimed {
		t.Errorf("state = %s, want claimed", got)
	}
}

func TestFenceStopsWrites(t *testing.T) {
	ctx := context.Background()
	cards, s := newTestCards(t, core.SystemClock{}, card.Config{})
	s.SetFence(func(context.Context) error { return core.ErrStaleEpoch })
	_, err := cards.Publish(ctx, card.SetInput{Key: "fenced", Author: card.MainAgent,
		Cards: []card.Input{{Spec: services.CardSpec("Anything", card.P2)}}})
	if !errors.Is(err, core.ErrStaleEpoch) {
		t.Fatalf("Publish behind a lost lease = %v, want ErrStaleEpoch", err)
	}
	if _, err := s.Cards().CardSetByKey(ctx, "fenced"); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("the set was written anyway: %v", err)
	}
}
