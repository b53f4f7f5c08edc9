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
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// testRoom and testAdmin are the room and admin the card service is wired
// with in tests.
const (
	testRoom  = "!jarvis:example.org"
	testAdmin = "@admin:example.org"
)

// newTestCards returns a card service on a fresh store of engine, with no
// priority budget unless cfg gives one; wire, when given, changes what it
// is wired to.
func newTestCards(t testing.TB, engine string, clock core.Clock, cfg card.Config, wire ...func(*card.Deps)) (*card.Service, *store.Store) {
	t.Helper()
	s := testdb.OpenStore(t, engine)
	w := services.Wiring{Store: s, Clock: clock, Room: testRoom, Admins: []string{testAdmin}}
	return w.Cards(cfg, wire...), s
}

func TestCardLifecycle(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, _ := newTestCards(t, engine, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), card.Config{})
			c := services.PublishOne(t, cards, "k1", services.CardSpec("Ship the importer", card.P2), "")
			steps := []struct {
				name      string
				to        card.State
				note      string
				wantState card.State
				wantErr   error
				wantText  string
			}{
				{name: "published cannot be done", to: card.Done, wantState: card.Published, wantErr: core.ErrIllegalTransition, wantText: "from published: claimed, cancelled"},
				{name: "claim", to: card.Claimed, note: "worker-3 took it", wantState: card.Claimed},
				{name: "start", to: card.InProgress, wantState: card.InProgress},
				{name: "no needs_decision without a question", to: card.NeedsDecision, wantState: card.InProgress, wantErr: core.ErrIllegalTransition, wantText: "raises a question"},
				{name: "block", to: card.Blocked, note: "CI is down", wantState: card.Blocked},
				{name: "resume", to: card.InProgress, wantState: card.InProgress},
				{name: "finish", to: card.Done, note: "merged", wantState: card.Done},
				{name: "done is final", to: card.Published, wantState: card.Done, wantErr: core.ErrIllegalTransition, wantText: "done is final"},
				{name: "unknown state", to: "shipped", wantState: card.Done, wantErr: core.ErrInvalid},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					got, err := cards.SetState(ctx, c.ID, st.to, st.note)
					if st.wantErr != nil {
						if !errors.Is(err, st.wantErr) || !strings.Contains(err.Error(), st.wantText) {
							t.Fatalf("SetState(%s) = %v, want %v saying %q", st.to, err, st.wantErr, st.wantText)
						}
					} else if err != nil {
						t.Fatalf("SetState(%s) = %v", st.to, err)
					} else if got.StateNote != st.note {
						t.Errorf("note = %q, want %q", got.StateNote, st.note)
					}
					stored, err := cards.Get(ctx, c.ID)
					if err != nil {
						t.Fatalf("Get: %v", err)
					}
					if stored.State != st.wantState {
						t.Errorf("state = %s, want %s", stored.State, st.wantState)
					}
				})
			}
		})
	}
}

func TestClaimWaitsForDependencies(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, _ := newTestCards(t, engine, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), card.Config{})
			set, err := cards.Publish(ctx, card.SetInput{Key: "deps", Author: card.MainAgent, Cards: []card.Input{
				{Ref: "schema", Spec: services.CardSpec("Design the schema", card.P1)},
				{Ref: "api", Spec: services.CardSpec("Build the API", card.P1, "schema")},
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
				to      card.State
				wantErr error
			}{
				{name: "api cannot be claimed before the schema is done", card: api.ID, to: card.Claimed, wantErr: core.ErrConflict},
				{name: "claim schema", card: schema.ID, to: card.Claimed},
				{name: "start schema", card: schema.ID, to: card.InProgress},
				{name: "api still waits", card: api.ID, to: card.Claimed, wantErr: core.ErrConflict},
				{name: "finish schema", card: schema.ID, to: card.Done},
				{name: "api can be claimed", card: api.ID, to: card.Claimed},
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
			later := services.PublishOne(t, cards, "later", services.CardSpec("Document the API", card.P3, api.ID), "")
			if later.Spec.DependsOn[0] != api.ID {
				t.Errorf("later depends on %v, want %s", later.Spec.DependsOn, api.ID)
			}
		})
	}
}

func TestListAndCountCards(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			cards, _ := newTestCards(t, engine, clock, card.Config{})
			low := services.PublishOne(t, cards, "low", services.CardSpec("Tidy the docs", card.P3), "")
			clock.Advance(time.Minute)
			high := services.PublishOne(t, cards, "high", services.CardSpec("Fix the outage", card.P0), "")
			clock.Advance(time.Minute)
			mid := services.PublishOne(t, cards, "mid", services.CardSpec("Add metrics", card.P2), "")
			if _, err := cards.SetState(ctx, mid.ID, card.Claimed, ""); err != nil {
				t.Fatalf("claim: %v", err)
			}
			if _, err := cards.SetState(ctx, mid.ID, card.Blocked, "waiting on infra"); err != nil {
				t.Fatalf("block: %v", err)
			}
			tests := []struct {
				name    string
				filter  card.Filter
				want    []string
				wantErr error
			}{
				{name: "all, most urgent first", filter: card.Filter{}, want: []string{high.ID, mid.ID, low.ID}},
				{name: "published only", filter: card.Filter{State: card.Published}, want: []string{high.ID, low.ID}},
				{name: "blocked only", filter: card.Filter{State: card.Blocked}, want: []string{mid.ID}},
				{name: "limit", filter: card.Filter{Limit: 1}, want: []string{high.ID}},
				{name: "unknown state", filter: card.Filter{State: "lost"}, wantErr: core.ErrInvalid},
				{name: "limit too large", filter: card.Filter{Limit: card.MaxListLimit + 1}, wantErr: core.ErrInvalid},
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
			if n, err := cards.Count(ctx, card.Blocked); err != nil || n != 1 {
				t.Errorf("Count(blocked) = %d, %v; want 1", n, err)
			}
			if st, err := cards.StateOf(ctx, mid.ID); err != nil || st != card.Blocked {
				t.Errorf("StateOf = %s, %v; want blocked", st, err)
			}
			if _, err := cards.StateOf(ctx, "card_missing"); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("StateOf(missing) = %v, want ErrNotFound", err)
			}
		})
	}
}

// TestCardStatesAtOnce: card.state read for many cards at once (one query)
// gives each card what reading it alone gives, an unknown card the same
// error, and CardsByID of no cards reads nothing.
func TestCardStatesAtOnce(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, s := newTestCards(t, engine, coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)), card.Config{})
			a := services.PublishOne(t, cards, "a", services.CardSpec("Ship the importer", card.P2), "")
			b := services.PublishOne(t, cards, "b", services.CardSpec("Fix the outage", card.P0), "")
			if _, err := cards.SetState(ctx, b.ID, card.Claimed, ""); err != nil {
				t.Fatal(err)
			}
			reg := core.NewSourceRegistry()
			cards.RegisterSources(reg)
			refs := []core.SourceRef{{Kind: card.SourceCardState, Param: a.ID}, {Kind: card.SourceCardState, Param: "card_missing"},
				{Kind: card.SourceCardState, Param: b.ID}}
			got := reg.ResolveAll(ctx, refs, 2)
			for i, ref := range refs {
				obs, err := reg.Resolve(ctx, ref)
				if fmt.Sprint(got[i].Err) != fmt.Sprint(err) || fmt.Sprint(got[i].Observation) != fmt.Sprint(obs) {
					t.Errorf("%s at once = %+v, %v; alone %+v, %v", ref, got[i].Observation, got[i].Err, obs, err)
				}
			}
			if got[0].Observation.Value != "published" || got[2].Observation.Value != "claimed" || !errors.Is(got[1].Err, core.ErrNotFound) {
				t.Errorf("at once: %+v; want published, not found, claimed", got)
			}
			if none, err := s.Cards().CardsByID(ctx, nil); err != nil || len(none) != 0 {
				t.Errorf("CardsByID(none) = %v, %v; want nothing", none, err)
			}
		})
	}
}
