package card_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestMissionReports(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			notes := map[string][]card.WorkerNote{}
			cards, s := newTestCards(t, engine, clock, card.Config{}, func(d *card.Deps) {
				d.WorkerNotes = func(_ context.Context, worker, cardID string) ([]card.WorkerNote, error) {
					return notes[worker+"/"+cardID], nil
				}
			})
			for _, goal := range []string{"Write the parser", "Wire the parser into the CLI"} {
				if _, err := cards.AddDraft(ctx, alice, services.CardSpec(goal, card.P2), core.TrustNative); err != nil {
					t.Fatal(err)
				}
			}
			published := card.Message{Room: "!dm-alice:example.org", Notice: "confirm:cardset:$publish"}
			set, err := cards.PublishDraft(ctx, alice, core.TrustNative, published)
			if err != nil {
				t.Fatal(err)
			}
			first, second := set.Cards[0], set.Cards[1]
			// finish moves a card to its end as the worker EVE.
			finish := func(t *testing.T, id string, to card.State, note string) {
				t.Helper()
				for _, st := range []card.State{card.Claimed, card.InProgress, to} {
					if _, err := cards.SetStateAs(ctx, "EVE", id, st, note); err != nil {
						t.Fatalf("move %s to %s: %v", id, st, err)
					}
				}
			}

			t.Run("done, in the publish thread, with the worker's notes as data", func(t *testing.T) {
				notes["EVE/"+first.ID] = []card.WorkerNote{
					{Title: "Parser done", Content: "All **27** samples parse; see <b>BENCH.md</b>\n@room ✅ Approved by @admin", At: clock.Now()},
				}
				finish(t, first.ID, card.Done, "merged as #41")
				r, err := s.Outbox().Get(ctx, "report:"+first.ID)
				if err != nil {
					t.Fatalf("no report: %v", err)
				}
				if r.RoomID != published.Room || r.Target != published.Notice || !r.Thread || strings.Join(r.Mentions, ",") != alice {
					t.Errorf("report in %s under %q (thread %v) mentioning %v, want the thread of %s in %s for alice",
						r.RoomID, r.Target, r.Thread, r.Mentions, published.Notice, published.Room)
				}
				for _, want := range []string{
					alice + ": card " + first.ID + " is done — Write the parser (worked by EVE).",
					"Note: merged as \\#41",
					"What EVE reported on it, as written:\n- Jul 9 09:00 UTC — Parser done: All \\*\\*27\\*\\* samples parse; see \\<b\\>BENCH.md\\</b\\> @\u2060room ✅ Approved by @admin",
				} {
					if !strings.Contains(r.Body, want) {
						t.Errorf("report lacks %q:\n%s", want, r.Body)
					}
				}
				if strings.Contains(r.Body, "last card of set") {
					t.Errorf("the set is not finished, yet the report closes it:\n%s", r.Body)
				}
			})
			t.Run("the last card closes the set", func(t *testing.T) {
				finish(t, second.ID, card.Cancelled, "")
				r, err := s.Outbox().Get(ctx, "report:"+second.ID)
				if err != nil {
					t.Fatalf("no report: %v", err)
				}
				if !strings.Contains(r.Body, "card "+second.ID+" was abandoned") ||
					!strings.HasSuffix(r.Body, "That was the last card of set "+set.ID+": 1 card done, 1 abandoned.") {
					t.Errorf("report reads:\n%s", r.Body)
				}
			})
			t.Run("an agent's set goes to the room, and unratified cards tell nobody", func(t *testing.T) {
				ratified := services.PublishOne(t, cards, "api-ratified", services.CardSpec("Rotate the logs", card.P3), bob)
				nobody := services.PublishOne(t, cards, "api-unratified", services.CardSpec("Prune the cache", card.P3), "")
				finish(t, ratified.ID, card.Done, "")
				finish(t, nobody.ID, card.Done, "")
				r, err := s.Outbox().Get(ctx, "report:"+ratified.ID)
				if err != nil || r.RoomID != testRoom || r.Thread || !strings.HasPrefix(r.Body, bob+": card") {
					t.Errorf("report %+v (%v), want one to bob in the dedicated room", r, err)
				}
				if _, err := s.Outbox().Get(ctx, "report:"+nobody.ID); !errors.Is(err, core.ErrNotFound) {
					t.Errorf("a card nobody ratified was reported: %v", err)
				}
			})
		})
	}
}
