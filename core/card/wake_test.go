package card_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/wake"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestCardWakeConditions: what the cards tell the wake router, and that
// the router surfaces each once.
func TestCardWakeConditions(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
			cfg := card.Config{Budget: map[string]card.BudgetRule{"P1": {Count: 5, Window: 24 * time.Hour}}}
			cards, s := newTestCards(t, engine, clock, cfg)

			blocked := services.PublishOne(t, cards, "k1", services.CardSpec("Ship the exporter", card.P2), "@alice:x")
			for _, st := range []card.State{card.Claimed, card.Blocked} {
				if _, err := cards.SetState(ctx, blocked.ID, st, "waiting on a key"); err != nil {
					t.Fatal(err)
				}
			}
			widened := services.PublishOne(t, cards, "k2", services.CardSpec("Import CSV", card.P2), "")
			if _, err := cards.Amend(ctx, widened.ID, card.AmendmentInput{Kind: card.AmendScopeChange, Text: "also XLSX",
				Acceptance: []string{"XLSX imports"}, Author: "worker"}); err != nil {
				t.Fatal(err)
			}
			for i := range 4 {
				services.PublishOne(t, cards, "p1-"+string(rune('a'+i)), services.CardSpec("urgent "+string(rune('a'+i)), card.P1), "")
			}

			conds, err := cards.WakeConditions(ctx)
			if err != nil {
				t.Fatal(err)
			}
			byKey := map[string]core.WakeCondition{}
			for _, c := range conds {
				byKey[c.Key] = c
			}
			tests := []struct {
				key, title string
				mentions   string
			}{
				{"card-blocked:" + blocked.ID, "a card is blocked", "@alice:x"},
				{"card-ratify:" + widened.ID, "waits for ratification", testAdmin},
				{"budget:P1", "P1 budget is nearly used up", testAdmin},
			}
			for _, tt := range tests {
				c, ok := byKey[tt.key]
				if !ok {
					t.Errorf("no condition %s among %d", tt.key, len(conds))
					continue
				}
				if !strings.Contains(c.Title, tt.title) || len(c.Mentions) == 0 || c.Mentions[0] != tt.mentions {
					t.Errorf("%s: title %q mentions %v", tt.key, c.Title, c.Mentions)
				}
			}
			if len(conds) != len(tests) {
				t.Errorf("%d conditions, want %d: %+v", len(conds), len(tests), conds)
			}

			router := wake.NewRouter(wake.Deps{Store: s, Tx: s, Outbox: s.Outbox(), Clock: clock, Room: testRoom,
				Sources: []wake.Source{{Name: "cards", List: cards.WakeConditions}}})
			for pass, want := range []int{3, 0} {
				res, err := router.Reconcile(ctx)
				if err != nil || res.Notified != want {
					t.Errorf("pass %d: %+v, %v; want %d notified", pass, res, err, want)
				}
			}
			clock.Advance(25 * time.Hour) // the ratification reminder's back-off, and the budget window, pass
			res, err := router.Reconcile(ctx)
			if err != nil || res.Notified != 1 || res.Cleared != 1 {
				t.Errorf("a day later: %+v, %v; want the ratification reminded and the budget advisory cleared", res, err)
			}
		})
	}
}
