package card_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestPublishIdempotency(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, _ := newTestCards(t, engine, core.SystemClock{}, card.Config{})
			body := []card.Input{
				{Ref: "a", Spec: services.CardSpec("Write the parser", card.P2)},
				{Ref: "b", Spec: services.CardSpec("Wire the parser in", card.P2, "a")},
			}
			first, err := cards.Publish(ctx, card.SetInput{Key: "key-1", Author: card.MainAgent, Cards: body})
			if err != nil {
				t.Fatalf("first publish: %v", err)
			}
			if first.Replayed {
				t.Fatalf("first publish says replayed")
			}
			other := []card.Input{{Ref: "a", Spec: services.CardSpec("Write a different parser", card.P2)}}
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
		})
	}
}

func TestPublishIsAllOrNothing(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			cards, s := newTestCards(t, engine, clock, testconfig.Cards())
			tests := []struct {
				name      string
				cards     []card.Input
				wantErr   error
				wantField string
			}{
				{
					name: "unknown dependency refuses the whole set",
					cards: []card.Input{
						{Ref: "a", Spec: services.CardSpec("First", card.P2)},
						{Ref: "b", Spec: services.CardSpec("Second", card.P2, "card_0000000000000000")},
					},
					wantErr: core.ErrInvalid, wantField: "cards[1].depends_on[0]",
				},
				{
					name: "cycle refuses the whole set",
					cards: []card.Input{
						{Ref: "a", Spec: services.CardSpec("First", card.P2, "b")},
						{Ref: "b", Spec: services.CardSpec("Second", card.P2, "a")},
					},
					wantErr: core.ErrInvalid, wantField: "cards[1].depends_on",
				},
				{
					name: "a P0 over budget refuses the P2 beside it too",
					cards: []card.Input{
						{Spec: services.CardSpec("Routine", card.P2)},
						{Spec: services.CardSpec("Urgent 1", card.P0)},
						{Spec: services.CardSpec("Urgent 2", card.P0)},
						{Spec: services.CardSpec("Urgent 3", card.P0)},
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
		})
	}
}

// TestPublishReplayPastTheBudget: a set published again under its key is
// answered as the first time, though its own cards have since filled the
// budget that a new set would be refused by.
func TestPublishReplayPastTheBudget(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, _ := newTestCards(t, engine, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), testconfig.Cards())
			full := []card.Input{{Spec: services.CardSpec("First urgent card", card.P0)}, {Spec: services.CardSpec("Second urgent card", card.P0)}}
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
		})
	}
}

func TestPublishBudgetWindow(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)
			clock := coretest.NewClock(t0)
			cards, _ := newTestCards(t, engine, clock, testconfig.Cards())
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
						in.Cards = append(in.Cards, card.Input{Spec: services.CardSpec(fmt.Sprintf("Card %d.%d", i, j), st.p)})
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
		})
	}
}

// TestDraftTrust: drafts keep where their text came from; a set with any
// text below linked trust is published waiting for ratification, not on
// the backlog, ratified by nobody; ratification from a puppet linked to
// nobody or a relay is refused and changes nothing, from a Matrix admin it
// puts the cards on the backlog; the trust survives the store.
func TestDraftTrust(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, _ := newTestCards(t, engine, core.SystemClock{}, card.Config{})
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
					if _, err := cards.AddDraft(ctx, tt.who, services.CardSpec("Ship "+tt.name, card.P3), tt.drafted); err != nil {
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
		})
	}
}

func TestDrafts(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, s := newTestCards(t, engine, core.SystemClock{}, card.Config{})
			const alice = "@alice:example.org"
			d1, err := cards.AddDraft(ctx, alice, services.CardSpec("Collect requirements", card.P2), core.TrustNative)
			if err != nil {
				t.Fatalf("add d1: %v", err)
			}
			d2, err := cards.AddDraft(ctx, alice, services.CardSpec("Build the thing", card.P2, "d1"), core.TrustNative)
			if err != nil {
				t.Fatalf("add d2: %v", err)
			}
			d3, err := cards.AddDraft(ctx, alice, services.CardSpec("A mistake", card.P3), core.TrustNative)
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
			n1, _ := cards.AddDraft(ctx, alice, services.CardSpec("Next thing", card.P2), core.TrustNative)
			if n1.Ref != "d1" || n1.DraftID == d1.DraftID {
				t.Errorf("new draft: ref %s in %s, want d1 in a new draft", n1.Ref, n1.DraftID)
			}
			if n, err := cards.ClearDrafts(ctx, alice); err != nil || n != 1 {
				t.Errorf("ClearDrafts = %d, %v; want 1", n, err)
			}
		})
	}
}
