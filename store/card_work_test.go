package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestCardsOfWorkers: a worker's heartbeat answer reads its open cards
// and those it finished or lost to a NO-GO within the window, newest
// first; another worker's and older final cards are left out.
func TestCardsOfWorkers(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, testEngine)
	clock := coretest.NewClock(time.Date(2026, 12, 4, 9, 0, 0, 0, time.UTC))
	cards := services.Wiring{Store: st, Clock: clock, Room: "!room:x", Admins: []string{"@admin:x"}}.Cards(card.Config{})
	claim := func(key, worker string) card.Card {
		c := services.PublishOne(t, cards, key, services.CardSpec(key, card.P2), "@admin:x")
		if _, err := cards.SetStateAs(ctx, worker, c.ID, card.Claimed, ""); err != nil {
			t.Fatal(err)
		}
		return c
	}
	old := claim("old", "EVE")
	if _, err := cards.Cancel(ctx, old.ID, "@admin:x", core.TrustNative, ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(48 * time.Hour)
	open, stopped := claim("open", "EVE"), claim("stopped", "EVE")
	claim("zeus", "ZEUS")
	clock.Advance(time.Minute)
	if _, err := cards.Cancel(ctx, stopped.ID, "@admin:x", core.TrustNative, ""); err != nil {
		t.Fatal(err)
	}
	got, err := st.Cards().CardsOfWorkers(ctx, []string{"EVE"}, clock.Now().Add(-24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range got {
		ids = append(ids, c.Worker+" "+c.ID+" "+string(c.State))
	}
	if want := []string{"EVE " + stopped.ID + " cancelled", "EVE " + open.ID + " claimed"}; !slices.Equal(ids, want) {
		t.Errorf("EVE's cards = %q, want %q", ids, want)
	}
}
