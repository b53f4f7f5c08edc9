package away_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/away"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

func TestWhileIWasAway(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, store.SQLite)
	clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
	items := []away.Item{{Key: "breaker:EVE:open", Text: "EVE's breaker is open"}}
	svc := away.NewService(away.Config{After: 10 * time.Minute}, away.Deps{State: st, Tx: st, Outbox: st.Outbox(), Clock: clock,
		Room: "!room:x", Sources: []away.Source{func(context.Context) ([]away.Item, error) { return items, nil }}})
	messages := func(t *testing.T) []string {
		t.Helper()
		waiting, err := st.Outbox().Waiting(ctx, 100)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range waiting {
			if strings.HasPrefix(n.Key, "away:") {
				out = append(out, n.Body)
			}
		}
		return out
	}
	resume := func(t *testing.T) bool {
		t.Helper()
		posted, err := svc.Resume(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return posted
	}

	if resume(t) || len(messages(t)) != 0 {
		t.Fatal("the very first start said something")
	}
	clock.Advance(5 * time.Minute)
	if err := svc.Record(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(9 * time.Minute)
	if resume(t) {
		t.Error("a downtime shorter than the threshold said something")
	}
	// Down for 42 minutes: a card blocked, the breaker closed meanwhile.
	clock.Advance(42 * time.Minute)
	items = []away.Item{{Key: "card:card_1:blocked", Text: "card card_1 is blocked — Ship the exporter"}}
	if !resume(t) {
		t.Fatal("a downtime of 42 minutes said nothing")
	}
	got := messages(t)
	want := "**While I was away (42m):**\n- 🆕 card card_1 is blocked — Ship the exporter\n- ✅ no longer: EVE's breaker is open\n\n" +
		"Still needs someone:\n- card card_1 is blocked — Ship the exporter"
	if len(got) != 1 || got[0] != want {
		t.Fatalf("messages = %q, want one:\n%s", got, want)
	}
	// Once per downtime: starting again at once says nothing more.
	if resume(t) || len(messages(t)) != 1 {
		t.Error("a second start after the same downtime said it again")
	}
	// A long downtime in which nothing changed and nothing needs anyone
	// says nothing.
	items = nil
	if err := svc.Record(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(3 * time.Hour)
	if resume(t) {
		t.Error("a quiet downtime said something")
	}
}
