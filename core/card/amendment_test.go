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
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

func TestAmendmentOrdering(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			cards, _ := newTestCards(t, engine, clock, card.Config{})
			c := services.PublishOne(t, cards, "k", services.CardSpec("Migrate the billing job", card.P2), "")
			steps := []struct {
				name         string
				in           card.AmendmentInput
				wantErr      error
				wantRevision int
				wantPriority card.Priority
			}{
				{
					name:         "clarification",
					in:           card.AmendmentInput{Kind: card.AmendClarification, Text: "Only the nightly job, not the hourly one.", Author: card.MainAgent},
					wantRevision: 2, wantPriority: card.P2,
				},
				{
					name:         "priority change against the current revision",
					in:           card.AmendmentInput{Kind: card.AmendPriorityChange, Text: "Finance needs it this week.", Priority: card.P1, Author: card.MainAgent, BaseRevision: 2},
					wantRevision: 3, wantPriority: card.P1,
				},
				{
					name:    "written against an old revision",
					in:      card.AmendmentInput{Kind: card.AmendClarification, Text: "Late note.", Author: card.MainAgent, BaseRevision: 2},
					wantErr: core.ErrConflict, wantRevision: 3, wantPriority: card.P1,
				},
				{
					name:    "answers do not come through the API",
					in:      card.AmendmentInput{Kind: card.AmendAnswer, Text: "Option 1.", Author: card.MainAgent},
					wantErr: core.ErrInvalid, wantRevision: 3, wantPriority: card.P1,
				},
				{
					name:    "same priority again",
					in:      card.AmendmentInput{Kind: card.AmendPriorityChange, Text: "Still P1.", Priority: card.P1, Author: card.MainAgent},
					wantErr: core.ErrInvalid, wantRevision: 3, wantPriority: card.P1,
				},
				{
					name:    "unknown kind",
					in:      card.AmendmentInput{Kind: "rewrite", Text: "Everything.", Author: card.MainAgent},
					wantErr: core.ErrInvalid, wantRevision: 3, wantPriority: card.P1,
				},
				{
					name:         "scope reduction needs no ratification",
					in:           card.AmendmentInput{Kind: card.AmendScopeReduction, Text: "Drop the CSV export.", Author: card.MainAgent},
					wantRevision: 4, wantPriority: card.P1,
				},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					clock.Advance(time.Minute)
					_, err := cards.Amend(ctx, c.ID, st.in)
					if !errors.Is(err, st.wantErr) {
						t.Fatalf("Amend = %v, want %v", err, st.wantErr)
					}
					got, err := cards.Get(ctx, c.ID)
					if err != nil {
						t.Fatalf("Get: %v", err)
					}
					if got.Revision != st.wantRevision || got.Priority != st.wantPriority || got.State != card.Published {
						t.Errorf("card at revision %d, %s, %s; want revision %d, %s, published", got.Revision, got.Priority, got.State, st.wantRevision, st.wantPriority)
					}
					if got.Spec.Priority != card.P2 || got.Spec.Goal != "Migrate the billing job" {
						t.Errorf("the spec changed: %+v", got.Spec)
					}
				})
			}
			got, _ := cards.Get(ctx, c.ID)
			var kinds []string
			for i, a := range got.Amendments {
				if a.Revision != i+2 {
					t.Errorf("amendment %d has revision %d, want %d", i, a.Revision, i+2)
				}
				kinds = append(kinds, string(a.Kind))
			}
			if want := "clarification,priority_change,scope_reduction"; strings.Join(kinds, ",") != want {
				t.Errorf("amendments %v, want %s", kinds, want)
			}

			if _, err := cards.SetState(ctx, c.ID, card.Cancelled, "no longer needed"); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			_, err := cards.Amend(ctx, c.ID, card.AmendmentInput{Kind: card.AmendClarification, Text: "Too late.", Author: card.MainAgent})
			if !errors.Is(err, core.ErrConflict) || !strings.Contains(err.Error(), "cancelled") {
				t.Errorf("amending a cancelled card = %v, want ErrConflict saying it is cancelled", err)
			}
		})
	}
}

func TestScopeChangeNeedsRatification(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, s := newTestCards(t, engine, core.SystemClock{}, card.Config{})
			const alice, bob = "@alice:example.org", "@bob:example.org"
			c := services.PublishOne(t, cards, "k", services.CardSpec("Export invoices", card.P2), alice)
			for _, to := range []card.State{card.Claimed, card.InProgress} {
				if _, err := cards.SetState(ctx, c.ID, to, ""); err != nil {
					t.Fatalf("move to %s: %v", to, err)
				}
			}
			res, err := cards.Amend(ctx, c.ID, card.AmendmentInput{Kind: card.AmendScopeChange, Text: "Also export credit notes.",
				Acceptance: []string{"credit notes appear in the export"}, Author: card.MainAgent})
			if err != nil {
				t.Fatalf("scope change: %v", err)
			}
			if res.Card.State != card.AwaitingRatification || res.Amendment.Revision != 2 {
				t.Fatalf("after a scope change: %s at revision %d; want awaiting_ratification at 2", res.Card.State, res.Amendment.Revision)
			}
			notice, err := s.Outbox().Get(ctx, "scope:"+c.ID+":2")
			if err != nil {
				t.Fatalf("no ratification request in the outbox: %v", err)
			}
			for _, want := range []string{alice, "Export invoices", "Also export credit notes.", "- credit notes appear in the export", "ratification"} {
				if !strings.Contains(notice.Body, want) {
					t.Errorf("ratification request lacks %q:\n%s", want, notice.Body)
				}
			}
			if notice.RoomID != testRoom || len(notice.Mentions) != 1 || notice.Mentions[0] != alice {
				t.Errorf("request goes to %s mentioning %v; want %s mentioning alice", notice.RoomID, notice.Mentions, testRoom)
			}

			steps := []struct {
				name      string
				do        func() error
				wantErr   error
				wantState card.State
			}{
				{
					name:    "workers cannot claim it meanwhile",
					do:      func() error { _, err := cards.SetState(ctx, c.ID, card.Claimed, ""); return err },
					wantErr: core.ErrIllegalTransition, wantState: card.AwaitingRatification,
				},
				{
					name:    "another person cannot ratify",
					do:      func() error { _, err := cards.Ratify(ctx, c.ID, bob, core.TrustNative); return err },
					wantErr: core.ErrForbidden, wantState: card.AwaitingRatification,
				},
				{
					name:      "the ratifier ratifies",
					do:        func() error { _, err := cards.Ratify(ctx, c.ID, alice, core.TrustNative); return err },
					wantState: card.Published,
				},
				{
					name:    "ratifying twice is refused",
					do:      func() error { _, err := cards.Ratify(ctx, c.ID, alice, core.TrustNative); return err },
					wantErr: core.ErrIllegalTransition, wantState: card.Published,
				},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					if err := st.do(); !errors.Is(err, st.wantErr) {
						t.Fatalf("got %v, want %v", err, st.wantErr)
					}
					if got, _ := cards.StateOf(ctx, c.ID); got != st.wantState {
						t.Errorf("state %s, want %s", got, st.wantState)
					}
				})
			}
			got, _ := cards.Get(ctx, c.ID)
			if got.RatifiedBy != alice || got.RatifiedRevision != 2 {
				t.Errorf("ratified by %s at %d, want alice at 2", got.RatifiedBy, got.RatifiedRevision)
			}
		})
	}
}

func TestPriorityChangeDrawsFromBudget(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			cards, _ := newTestCards(t, engine, clock, testconfig.Cards())
			services.PublishOne(t, cards, "p0-a", services.CardSpec("Outage A", card.P0), "")
			services.PublishOne(t, cards, "p0-b", services.CardSpec("Outage B", card.P0), "")
			c := services.PublishOne(t, cards, "p2", services.CardSpec("Nice to have", card.P2), "")
			_, err := cards.Amend(ctx, c.ID, card.AmendmentInput{Kind: card.AmendPriorityChange, Text: "Make it urgent.", Priority: card.P0, Author: card.MainAgent})
			var be *card.BudgetError
			if !errors.As(err, &be) || be.Priority != card.P0 {
				t.Fatalf("raising to a full P0 = %v, want a P0 BudgetError", err)
			}
			if got, _ := cards.Get(ctx, c.ID); got.Revision != 1 || got.Priority != card.P2 || len(got.Amendments) != 0 {
				t.Errorf("refused amendment left revision %d, %s, %d amendments", got.Revision, got.Priority, len(got.Amendments))
			}
			clock.Advance(24 * time.Hour)
			if _, err := cards.Amend(ctx, c.ID, card.AmendmentInput{Kind: card.AmendPriorityChange, Text: "Make it urgent.", Priority: card.P0, Author: card.MainAgent}); err != nil {
				t.Fatalf("raising to P0 a day later: %v", err)
			}
		})
	}
}

func TestSignOffPinsRevision(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, _ := newTestCards(t, engine, core.SystemClock{}, card.Config{})
			c := services.PublishOne(t, cards, "k", services.CardSpec("Harden the login", card.P1), "")
			steps := []struct {
				name     string
				amend    bool
				reviewer string
				revision int
				wantErr  error
			}{
				{name: "sign the published revision", reviewer: "sentinel-a", revision: 1},
				{name: "a future revision", reviewer: "sentinel-b", revision: 2, wantErr: core.ErrConflict},
				{name: "after an amendment, revision 1 is stale", amend: true, reviewer: "sentinel-a", revision: 1, wantErr: core.ErrConflict},
				{name: "sign the amended revision", reviewer: "sentinel-a", revision: 2},
				{name: "no reviewer", reviewer: "", revision: 2, wantErr: core.ErrInvalid},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					if st.amend {
						if _, err := cards.Amend(ctx, c.ID, card.AmendmentInput{Kind: card.AmendClarification, Text: "Use TOTP.", Author: card.MainAgent}); err != nil {
							t.Fatalf("amend: %v", err)
						}
					}
					_, err := cards.SignOff(ctx, c.ID, card.SignOffInput{Reviewer: st.reviewer, Revision: st.revision})
					if !errors.Is(err, st.wantErr) {
						t.Fatalf("SignOff = %v, want %v", err, st.wantErr)
					}
				})
			}
			got, _ := cards.Get(ctx, c.ID)
			if len(got.SignOffs) != 1 || got.SignOffs[0].Reviewer != "sentinel-a" || got.SignOffs[0].Revision != 2 {
				t.Errorf("sign-offs %+v, want sentinel-a at revision 2", got.SignOffs)
			}
		})
	}
}
