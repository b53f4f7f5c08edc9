package card_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

const (
	alice = "@alice:example.org"
	bob   = "@bob:example.org"
)

// heldCard publishes a card ratified by ratifier and moves it to
// in_progress, as a worker would.
func heldCard(t *testing.T, cards *card.Service, key, ratifier string) card.Card {
	t.Helper()
	c := services.PublishOne(t, cards, key, services.CardSpec("Choose the queue", card.P1), ratifier)
	for _, to := range []card.State{card.Claimed, card.InProgress} {
		if _, err := cards.SetState(context.Background(), c.ID, to, ""); err != nil {
			t.Fatalf("move to %s: %v", to, err)
		}
	}
	return c
}

// question is a valid question with two options.
func question() card.DecisionInput {
	return card.DecisionInput{Question: "Which queue should the importer use?", Options: []string{"NATS", "Redis streams"},
		Checkpoint: card.Checkpoint{Branch: "card/queue", Note: "both adapters drafted; benchmarks in BENCH.md"}}
}

func TestRaiseDecisionRelaysTheQuestion(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			cards, s := newTestCards(t, engine, clock, card.Config{})
			tests := []struct {
				name         string
				ratifier     string
				deadline     time.Duration
				wantMentions string
				wantText     []string
			}{
				{
					name: "ratified card asks its ratifier", ratifier: alice, wantMentions: alice,
					wantText: []string{alice + ": a worker needs a decision on card", "Choose the queue",
						"Which queue should the importer use?\n\n1. NATS\n2. Redis streams\n", "React with the option's number"},
				},
				{
					name: "unratified card asks the admins", deadline: 4 * time.Hour, wantMentions: testAdmin,
					wantText: []string{testAdmin + ": a worker needs", "Deadline: Thu 9 Jul 2026 13:00 UTC, then the question expires and the card is blocked."},
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					c := heldCard(t, cards, tt.name, tt.ratifier)
					in := question()
					if tt.deadline > 0 {
						in.Deadline = clock.Now().Add(tt.deadline)
					}
					d, err := cards.RaiseDecision(ctx, c.ID, in)
					if err != nil {
						t.Fatalf("RaiseDecision: %v", err)
					}
					if st, _ := cards.StateOf(ctx, c.ID); st != card.NeedsDecision {
						t.Errorf("card is %s, want needs_decision", st)
					}
					relay, err := s.Outbox().Get(ctx, d.NoticeKey())
					if err != nil {
						t.Fatalf("relay notice: %v", err)
					}
					if relay.RoomID != testRoom || relay.Kind != core.NoticeMessage || strings.Join(relay.Mentions, ",") != tt.wantMentions {
						t.Errorf("relay to %s (%s) mentioning %v, want %s mentioning %s", relay.RoomID, relay.Kind, relay.Mentions, testRoom, tt.wantMentions)
					}
					for _, want := range tt.wantText {
						if !strings.Contains(relay.Body, want) {
							t.Errorf("relay lacks %q:\n%s", want, relay.Body)
						}
					}
					for n, emoji := range []string{"1️⃣", "2️⃣"} {
						r, err := s.Outbox().Get(ctx, d.NoticeKey()+":react:"+strconv.Itoa(n+1))
						if err != nil {
							t.Fatalf("reaction %d: %v", n+1, err)
						}
						if r.Kind != core.NoticeReaction || r.Body != emoji || r.Target != d.NoticeKey() {
							t.Errorf("reaction %d: %s %q on %q, want a %s reaction on the relay", n+1, r.Kind, r.Body, r.Target, emoji)
						}
						if r.Seq <= relay.Seq {
							t.Errorf("reaction %d is queued before the relay", n+1)
						}
					}
				})
			}

			t.Run("a second question while one is open is refused", func(t *testing.T) {
				card := heldCard(t, cards, "twice", alice)
				if _, err := cards.RaiseDecision(ctx, card.ID, question()); err != nil {
					t.Fatalf("first question: %v", err)
				}
				if _, err := cards.RaiseDecision(ctx, card.ID, question()); !errors.Is(err, core.ErrIllegalTransition) {
					t.Fatalf("second question = %v, want ErrIllegalTransition", err)
				}
			})
			t.Run("a service wired without a room fails, and does not blame the worker", func(t *testing.T) {
				c := heldCard(t, cards, "roomless", alice)
				roomless := services.Wiring{Store: s, Clock: clock}.Cards(card.Config{})
				_, err := roomless.RaiseDecision(ctx, c.ID, question())
				if err == nil || errors.Is(err, core.ErrInvalid) {
					t.Fatalf("RaiseDecision without a room = %v, want an internal error", err)
				}
				if st, _ := cards.StateOf(ctx, c.ID); st != card.InProgress {
					t.Errorf("card is %s, want in_progress", st)
				}
			})
			t.Run("a published card cannot ask", func(t *testing.T) {
				card := services.PublishOne(t, cards, "unclaimed", services.CardSpec("Nobody holds this", card.P2), "")
				if _, err := cards.RaiseDecision(ctx, card.ID, question()); !errors.Is(err, core.ErrIllegalTransition) {
					t.Fatalf("question on a published card = %v, want ErrIllegalTransition", err)
				}
			})
		})
	}
}

func TestAnswerDecision(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			clock := coretest.NewClock(time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC))
			cards, s := newTestCards(t, engine, clock, card.Config{})
			c := heldCard(t, cards, "k", alice)
			d, err := cards.RaiseDecision(ctx, c.ID, question())
			if err != nil {
				t.Fatalf("RaiseDecision: %v", err)
			}
			clock.Advance(3*time.Hour + 12*time.Minute)
			steps := []struct {
				name        string
				ref         string
				option      int
				who         string
				network     string
				wantErr     error
				wantAlready bool
				wantOption  int
			}{
				{name: "a stranger may not answer", ref: d.ID, option: 1, who: bob, wantErr: core.ErrForbidden},
				{name: "an option that does not exist", ref: d.ID, option: 3, who: alice, wantErr: core.ErrInvalid},
				{name: "an unknown question", ref: "q_missing", option: 1, who: alice, wantErr: core.ErrNotFound},
				{name: "alice answers from Telegram by the relay's key", ref: d.NoticeKey(), option: 2, who: alice, network: "telegram", wantOption: 2},
				{name: "the admin answers later: already answered", ref: d.ID, option: 1, who: testAdmin, network: "matrix", wantAlready: true, wantOption: 2},
				{name: "alice taps again by card id: already answered", ref: c.ID, option: 1, who: alice, wantAlready: true, wantOption: 2},
				{name: "the operator at the console may answer too: already answered", ref: d.ID, option: 1, who: "console:op", network: "console",
					wantAlready: true, wantOption: 2},
			}
			for _, st := range steps {
				t.Run(st.name, func(t *testing.T) {
					res, err := cards.AnswerDecision(ctx, st.ref, st.option, st.who, st.network, core.TrustNative)
					if !errors.Is(err, st.wantErr) {
						t.Fatalf("AnswerDecision = %v, want %v", err, st.wantErr)
					}
					if err != nil {
						return
					}
					if res.AlreadyAnswered != st.wantAlready || res.Decision.Option != st.wantOption {
						t.Errorf("already %v, option %d; want %v, %d", res.AlreadyAnswered, res.Decision.Option, st.wantAlready, st.wantOption)
					}
				})
			}

			got, _ := cards.Get(ctx, c.ID)
			if got.State != card.Published || got.Revision != 2 || len(got.Amendments) != 1 {
				t.Fatalf("card %s at revision %d with %d amendments; want published at 2 with 1", got.State, got.Revision, len(got.Amendments))
			}
			a := got.Amendments[0]
			if a.Kind != card.AmendAnswer || a.Option != 2 || a.Author != alice || a.Network != "telegram" || a.Elapsed != 3*time.Hour+12*time.Minute {
				t.Errorf("answer amendment %+v", a)
			}
			for _, want := range []string{"Answer: 2. Redis streams", "via telegram after 3h12m", "Resume from branch card/queue"} {
				if !strings.Contains(a.Text, want) {
					t.Errorf("answer amendment lacks %q:\n%s", want, a.Text)
				}
			}
			edit, err := s.Outbox().Get(ctx, d.NoticeKey()+":outcome")
			if err != nil {
				t.Fatalf("no edit of the relay: %v", err)
			}
			if edit.Kind != core.NoticeEdit || edit.Target != d.NoticeKey() ||
				!strings.Contains(edit.Body, "✅ Answered by "+alice+" via telegram after 3h12m: 2. Redis streams") ||
				!strings.Contains(edit.Body, "1. NATS\n2. Redis streams") {
				t.Errorf("relay edit %s on %q:\n%s", edit.Kind, edit.Target, edit.Body)
			}
			if len(got.Decisions) != 1 || got.Decisions[0].Status != card.DecisionAnswered || got.Decisions[0].AnsweredBy != alice {
				t.Errorf("decisions %+v", got.Decisions)
			}
			if n, _ := cards.Count(ctx, card.NeedsDecision); n != 0 {
				t.Errorf("%d cards still need a decision", n)
			}
		})
	}
}

func TestDecisionDeadline(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			t0 := time.Date(2026, 7, 9, 9, 0, 0, 0, time.UTC)
			tests := []struct {
				name          string
				defaultOption int
				wantStatus    card.DecisionStatus
				wantState     card.State
				wantDeadline  string
				wantLateErr   error
			}{
				{
					name: "the default option applies", defaultOption: 1,
					wantStatus: card.DecisionDefaulted, wantState: card.Published,
					wantDeadline: "the default applies: 1. NATS",
				},
				{
					name:       "without a default the question expires",
					wantStatus: card.DecisionExpired, wantState: card.Blocked,
					wantDeadline: "the question expired and the card is blocked", wantLateErr: core.ErrExpired,
				},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					clock := coretest.NewClock(t0)
					cards, s := newTestCards(t, engine, clock, card.Config{})
					c := heldCard(t, cards, "k", alice)
					in := question()
					in.Deadline = t0.Add(6 * time.Hour)
					in.DefaultOption = tt.defaultOption
					d, err := cards.RaiseDecision(ctx, c.ID, in)
					if err != nil {
						t.Fatalf("RaiseDecision: %v", err)
					}
					sweeps := []struct {
						at   time.Duration
						want card.SweepResult
					}{
						{at: 2 * time.Hour},
						{at: 3 * time.Hour, want: card.SweepResult{Reminded: 1}},
						{at: 4 * time.Hour},
						{at: 6 * time.Hour, want: card.SweepResult{Defaulted: min(tt.defaultOption, 1), Expired: 1 - min(tt.defaultOption, 1)}},
						{at: 7 * time.Hour},
					}
					for _, sw := range sweeps {
						clock.Set(t0.Add(sw.at))
						got, err := cards.Sweep(ctx)
						if err != nil {
							t.Fatalf("Sweep at +%s: %v", sw.at, err)
						}
						if got != sw.want {
							t.Errorf("Sweep at +%s = %+v, want %+v", sw.at, got, sw.want)
						}
					}
					reminder, err := s.Outbox().Get(ctx, d.NoticeKey()+":reminder")
					if err != nil {
						t.Fatalf("no reminder: %v", err)
					}
					if !strings.Contains(reminder.Body, "still open") || !strings.Contains(reminder.Body, "(in 3h00m)") || reminder.Mentions[0] != alice {
						t.Errorf("reminder mentioning %v:\n%s", reminder.Mentions, reminder.Body)
					}
					said, err := s.Outbox().Get(ctx, d.NoticeKey()+":deadline")
					if err != nil || !strings.Contains(said.Body, tt.wantDeadline) {
						t.Errorf("deadline message (%v):\n%s", err, said.Body)
					}
					if edit, err := s.Outbox().Get(ctx, d.NoticeKey()+":outcome"); err != nil || edit.Kind != core.NoticeEdit {
						t.Errorf("relay not edited at the deadline: %v", err)
					}
					got, _ := cards.Get(ctx, c.ID)
					if got.State != tt.wantState || got.Decisions[0].Status != tt.wantStatus {
						t.Errorf("card %s, question %s; want %s, %s", got.State, got.Decisions[0].Status, tt.wantState, tt.wantStatus)
					}
					late, err := cards.AnswerDecision(ctx, d.ID, 2, alice, "matrix", core.TrustNative)
					if !errors.Is(err, tt.wantLateErr) {
						t.Fatalf("late answer = %v, want %v", err, tt.wantLateErr)
					}
					if err == nil && (!late.AlreadyAnswered || late.Decision.Option != tt.defaultOption) {
						t.Errorf("late answer changed the outcome: %+v", late.Decision)
					}
				})
			}
		})
	}
}

func TestCancelWithdrawsQuestion(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			cards, s := newTestCards(t, engine, core.SystemClock{}, card.Config{})
			c := heldCard(t, cards, "k", alice)
			d, err := cards.RaiseDecision(ctx, c.ID, question())
			if err != nil {
				t.Fatalf("RaiseDecision: %v", err)
			}
			if _, err := cards.SetState(ctx, c.ID, card.Cancelled, "superseded"); err != nil {
				t.Fatalf("cancel: %v", err)
			}
			edit, err := s.Outbox().Get(ctx, d.NoticeKey()+":outcome")
			if err != nil || !strings.Contains(edit.Body, "Withdrawn: card "+c.ID+" was cancelled") {
				t.Errorf("relay edit (%v):\n%s", err, edit.Body)
			}
			if _, err := cards.AnswerDecision(ctx, d.ID, 1, alice, "matrix", core.TrustNative); !errors.Is(err, core.ErrGone) {
				t.Errorf("answer to a withdrawn question = %v, want ErrGone", err)
			}
		})
	}
}

// TestAdoptQuestions: a question asked of a puppet is asked of the Matrix
// account it is linked to afterwards, which may then answer it; the
// puppet is no longer asked, and answered questions stay as they were.
func TestAdoptQuestions(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			const puppet, bob = "@telegram_7:example.org", "@bob:example.org"
			cards, _ := newTestCards(t, engine, core.SystemClock{}, card.Config{})
			open, err := cards.RaiseDecision(ctx, heldCard(t, cards, "open", puppet).ID, question())
			if err != nil {
				t.Fatal(err)
			}
			answered, err := cards.RaiseDecision(ctx, heldCard(t, cards, "answered", puppet).ID, question())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cards.AnswerDecision(ctx, answered.ID, 1, puppet, "telegram", core.TrustBridged); err != nil {
				t.Fatal(err)
			}
			if n, err := cards.Adopt(ctx, puppet, bob); err != nil || n != 1 {
				t.Fatalf("Adopt = %d, %v; want the 1 open question", n, err)
			}
			if _, err := cards.AnswerDecision(ctx, open.ID, 2, puppet, "telegram", core.TrustBridged); !errors.Is(err, core.ErrForbidden) {
				t.Errorf("the puppet answering after the move: %v, want ErrForbidden", err)
			}
			if res, err := cards.AnswerDecision(ctx, open.ID, 2, bob, "matrix", core.TrustNative); err != nil || res.Decision.AnsweredBy != bob {
				t.Errorf("the account answering after the move: %+v, %v", res.Decision, err)
			}
		})
	}
}

func TestCardSources(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			changes := 0
			cards, _ := newTestCards(t, engine, core.SystemClock{}, card.Config{}, func(d *card.Deps) {
				d.OnChange = func(context.Context) { changes++ }
			})
			reg := core.NewSourceRegistry()
			cards.RegisterSources(reg)

			asked := heldCard(t, cards, "asked", alice)
			blocked := heldCard(t, cards, "blocked", "")
			if _, err := cards.RaiseDecision(ctx, asked.ID, question()); err != nil {
				t.Fatalf("RaiseDecision: %v", err)
			}
			if _, err := cards.SetState(ctx, blocked.ID, card.Blocked, "CI down"); err != nil {
				t.Fatalf("block: %v", err)
			}
			// Two publishes, four moves, one question and one block.
			if changes != 8 {
				t.Errorf("OnChange heard %d changes, want 8", changes)
			}
			tests := []struct {
				name        string
				kind        string
				param       string
				want        any
				wantDisplay string
				wantErr     error
			}{
				{name: "cards waiting for anyone", kind: card.SourceCardsNeedsDecision, want: 1.0, wantDisplay: "1 card waits for a decision"},
				{name: "cards waiting for alice", kind: card.SourceCardsNeedsDecision, param: alice, want: 1.0},
				{name: "cards waiting for bob", kind: card.SourceCardsNeedsDecision, param: bob, want: 0.0, wantDisplay: "0 cards wait for a decision"},
				{name: "blocked cards", kind: card.SourceCardsBlocked, want: 1.0, wantDisplay: "1 card is blocked"},
				{name: "one card's state", kind: card.SourceCardState, param: asked.ID, want: "needs_decision"},
				{name: "an unknown card", kind: card.SourceCardState, param: "card_0000000000000000", wantErr: core.ErrNotFound},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					k, ok := reg.Lookup(tt.kind)
					if !ok {
						t.Fatalf("%s is not registered", tt.kind)
					}
					obs, err := k.Resolve(ctx, tt.param)
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("Resolve = %v, want %v", err, tt.wantErr)
					}
					if err == nil && obs.Value != tt.want {
						t.Errorf("value %v, want %v", obs.Value, tt.want)
					}
					if tt.wantDisplay != "" && obs.Display != tt.wantDisplay {
						t.Errorf("display %q, want %q", obs.Display, tt.wantDisplay)
					}
				})
			}
			if k, _ := reg.Lookup(card.SourceCardState); k.CheckParam("not-a-card") == nil {
				t.Errorf("card.state accepts a param that is no card id")
			}
			if _, err := cards.AnswerDecision(ctx, asked.ID, 1, alice, "matrix", core.TrustNative); err != nil {
				t.Fatalf("answer: %v", err)
			}
			if _, err := cards.AnswerDecision(ctx, asked.ID, 2, alice, "matrix", core.TrustNative); err != nil {
				t.Fatalf("second answer: %v", err)
			}
			if changes != 9 {
				t.Errorf("OnChange heard %d changes after an answer and a repeat, want 9", changes)
			}
		})
	}
}
