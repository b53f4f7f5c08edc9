package commands

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
)

// The people of the card tests: the ratifier of their cards, someone
// else, and the admin newHarness configures.
const (
	ratifier  = "@alice:x"
	stranger  = "@bob:x"
	cardAdmin = "@admin:x"
)

// newCardHarness is a harness with `!card` registered on a real card
// service, in room !room:x with @admin:x as admin.
func newCardHarness(t *testing.T, cfg card.Config) (*harness, *card.Service) {
	t.Helper()
	h := newHarness(t)
	cards := services.Wiring{Store: h.store, Clock: h.clock, Room: "!room:x", Admins: []string{cardAdmin}}.Cards(cfg)
	h.proc.AddFeatures(Features{Cards: cards})
	return h, cards
}

// one returns the only reply, failing the test when there is not exactly one.
func onlyReply(t *testing.T, replies []string) string {
	t.Helper()
	if len(replies) != 1 {
		t.Fatalf("replies = %q, want exactly one", replies)
	}
	return replies[0]
}

func wantText(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestCardDraft(t *testing.T) {
	tests := []struct {
		name string
		say  string
		// want are substrings of the reply; show are substrings of
		// `!card show-draft` afterwards (nothing is drafted when empty).
		want []string
		show []string
	}{
		{name: "straight quotes",
			say:  `!card draft Add CSV export --accept "every column is exported" --accept "opens in a spreadsheet" --priority P2 --budget "2 h"`,
			want: []string{"Added **d1**", "Add CSV export", "P2", "budget 2 h"},
			show: []string{"1. d1 — Add CSV export (P2, budget 2 h)", "- every column is exported", "- opens in a spreadsheet"}},
		{name: "curly quotes and a dash a phone made of --",
			say:  `!card draft Fix login —accept “the login works on Safari” —priority p1`,
			want: []string{"Added **d1**", "Fix login", "P1"},
			show: []string{"d1 — Fix login (P1)", "- the login works on Safari"}},
		{name: "unquoted values run to the next flag",
			say:  `!card draft Write docs --accept the README explains setup --priority P3`,
			want: []string{"Added **d1**"},
			show: []string{"- the README explains setup"}},
		{name: "flag=value and an apostrophe inside a word",
			say:  `!card draft Check the user's quota --accept="it's enforced" --priority=P2`,
			want: []string{"Added **d1**", "Check the user's quota"},
			show: []string{"- it's enforced"}},
		{name: "a quoted flag is text",
			say:  `!card draft Support flags --accept "--verbose prints more" --priority P2`,
			want: []string{"Added **d1**"},
			show: []string{"- --verbose prints more"}},
		{name: "unknown flag named",
			say:  `!card draft Something --acept "x" --priority P2`,
			want: []string{"`--acept` is not a flag", "--accept", "Usage:"}},
		{name: "missing goal",
			say:  `!card draft --accept "x" --priority P2`,
			want: []string{"The goal is missing"}},
		{name: "missing criterion",
			say:  `!card draft Do it --priority P2`,
			want: []string{"`--accept` is missing"}},
		{name: "empty criterion",
			say:  `!card draft Do it --accept --priority P2`,
			want: []string{"`--accept` needs a value"}},
		{name: "missing priority",
			say:  `!card draft Do it --accept "done"`,
			want: []string{"`--priority` is missing"}},
		{name: "bad priority",
			say:  `!card draft Do it --accept "done" --priority P5`,
			want: []string{"`--priority` must be one of P0, P1, P2, P3, not `P5`"}},
		{name: "goal after the flags",
			say:  `!card draft --accept "done" --priority P2 Do it`,
			want: []string{"`--priority` takes one of", "`P2 Do it`", "the goal goes first"}},
		{name: "priority twice",
			say:  `!card draft Do it --accept "done" --priority P2 --priority P1`,
			want: []string{"`--priority` is given twice"}},
		{name: "unclosed quote",
			say:  `!card draft Do it --accept "done --priority P2`,
			want: []string{"The quote that opens `\"done --priority P2` is never closed"}},
		{name: "dependency on a draft that does not exist",
			say:  `!card draft Do it --accept "done" --priority P2 --depends d4`,
			want: []string{"`--depends`: you have no draft d4"}},
		{name: "dependency on an unknown card",
			say:  `!card draft Do it --accept "done" --priority P2 --depends card_nope`,
			want: []string{"`--depends`: there is no card `card_nope`"}},
		{name: "criterion too long, as core says",
			say:  `!card draft Do it --accept "` + strings.Repeat("x", card.MaxCriterionLen+1) + `" --priority P2`,
			want: []string{"`--accept`: longer than"}},
		{name: "no arguments",
			say:  `!card draft`,
			want: []string{"Usage: `!card draft <goal>", "For example"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, _ := newCardHarness(t, card.Config{})
			wantText(t, "reply", onlyReply(t, h.say(t, ratifier, tt.say)), tt.want...)
			shown := onlyReply(t, h.say(t, ratifier, "!card show-draft"))
			if len(tt.show) == 0 {
				wantText(t, "show-draft after a refusal", shown, "You have no draft cards")
				return
			}
			wantText(t, "show-draft", shown, tt.show...)
		})
	}
}

func TestCardDraftDependsAndDrop(t *testing.T) {
	h, _ := newCardHarness(t, card.Config{})
	h.say(t, ratifier, `!card draft Collect requirements --accept "a list" --priority P2`)
	reply := onlyReply(t, h.say(t, ratifier, `!card draft Build it --accept "it works" --priority P1 --depends D1`))
	wantText(t, "second draft", reply, "Added **d2**", "(2 cards)", "after d1")
	if replies := h.say(t, stranger, "!card show-draft"); !strings.Contains(onlyReply(t, replies), "You have no draft cards") {
		t.Errorf("someone else sees the ratifier's drafts: %q", replies)
	}

	tests := []struct {
		name, say string
		want      []string
	}{
		{"a draft others depend on stays", "!card drop d1", []string{"d2 depends on d1; drop d2 first"}},
		{"an unknown ref", "!card drop d9", []string{"You have no draft `d9`"}},
		{"no ref", "!card drop", []string{"Which one?"}},
		{"the dependent goes", "!card drop d2", []string{"Dropped d2 (Build it). 1 card left"}},
		{"then the other", "!card drop d1", []string{"Dropped d1", "0 cards left"}},
		{"all of an empty draft", "!card drop all", []string{"already empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantText(t, "reply", onlyReply(t, h.say(t, ratifier, tt.say)), tt.want...)
		})
	}
}

// reactionsOn returns the reactions Jarvis queued on the notice with key.
func queuedReactions(t *testing.T, h *harness, key string) []string {
	t.Helper()
	waiting, err := h.store.Outbox().Waiting(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, n := range waiting {
		if n.Kind == core.NoticeReaction && n.Target == key {
			out = append(out, n.Body)
		}
	}
	return out
}

func backlog(t *testing.T, cards *card.Service) []card.Card {
	t.Helper()
	list, err := cards.List(context.Background(), card.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	return list
}

func TestCardPublish(t *testing.T) {
	draftTwo := func(t *testing.T, h *harness, priority string) {
		t.Helper()
		h.say(t, ratifier, `!card draft Write the parser --accept "parses every example" --priority `+priority)
		h.say(t, ratifier, `!card draft Wire the parser in --accept "the CLI uses it" --priority `+priority+` --depends d1`)
	}

	t.Run("the sender's ✅ publishes the whole set, ratified by them", func(t *testing.T) {
		h, cards := newCardHarness(t, card.Config{})
		draftTwo(t, h, "P2")
		question := onlyReply(t, h.sayAs(t, "$publish", ratifier, "!card publish"))
		wantText(t, "question", question, "Publish these 2 cards", "author main-agent", "ratified by @alice:x",
			"1. d1 — Write the parser (P2)", "- parses every example", "2. d2 — Wire the parser in (P2, after d1)")
		key := "confirm:cardset:$publish"
		if got := queuedReactions(t, h, key); len(got) != 2 || got[0] != YesReaction || got[1] != NoReaction {
			t.Errorf("reactions on the question = %q, want ✅ ❌", got)
		}
		if caused := h.answer(t, key, stranger, YesReaction); len(caused) != 0 || len(backlog(t, cards)) != 0 {
			t.Fatalf("someone else's ✅ on the question acted: %+v", caused)
		}
		caused := h.answer(t, key, ratifier, YesReaction)
		if len(caused) != 1 || caused[0].Kind != core.NoticeEdit {
			t.Fatalf("after ✅: %+v, want one edit of the question", caused)
		}
		published := backlog(t, cards)
		if len(published) != 2 {
			t.Fatalf("%d cards on the backlog, want 2", len(published))
		}
		first := strings.SplitN(caused[0].Body, "\n", 2)[0]
		for _, c := range published {
			if c.Author != card.MainAgent || c.RatifiedBy != ratifier || c.State != card.Published {
				t.Errorf("card %s: author %s, ratified by %q, %s", c.ID, c.Author, c.RatifiedBy, c.State)
			}
			if !strings.Contains(first, c.ID) {
				t.Errorf("the edit's first line %q does not name %s", first, c.ID)
			}
		}
		if !strings.HasPrefix(first, "Published: ") {
			t.Errorf("the question was edited into %q", caused[0].Body)
		}
		var parser, wiring card.Card
		for _, c := range published {
			if c.Ref == "d1" {
				parser = c
			} else {
				wiring = c
			}
		}
		if len(wiring.Spec.DependsOn) != 1 || wiring.Spec.DependsOn[0] != parser.ID {
			t.Errorf("d2 depends on %v, want the id of d1 (%s)", wiring.Spec.DependsOn, parser.ID)
		}
		wantText(t, "show-draft after publishing", onlyReply(t, h.say(t, ratifier, "!card show-draft")), "You have no draft cards")
	})

	t.Run("❌ keeps the draft", func(t *testing.T) {
		h, cards := newCardHarness(t, card.Config{})
		draftTwo(t, h, "P2")
		h.sayAs(t, "$publish", ratifier, "!card publish")
		caused := h.answer(t, "confirm:cardset:$publish", ratifier, NoReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Not published; the draft stays") {
			t.Fatalf("after ❌: %+v", caused)
		}
		if n := len(backlog(t, cards)); n != 0 {
			t.Errorf("%d cards published after ❌", n)
		}
		wantText(t, "show-draft", onlyReply(t, h.say(t, ratifier, "!card show-draft")), "Your draft has 2 cards")
	})

	t.Run("❌ after ✅ is a NO-GO on the published set", func(t *testing.T) {
		h, cards := newCardHarness(t, card.Config{})
		draftTwo(t, h, "P2")
		h.sayAs(t, "$publish", ratifier, "!card publish")
		h.answer(t, "confirm:cardset:$publish", ratifier, YesReaction)
		if caused := h.answer(t, "confirm:cardset:$publish", stranger, NoReaction); len(caused) != 1 ||
			!strings.Contains(caused[0].Body, "Only the card's ratifier or an admin") {
			t.Fatalf("a stranger's ❌ after publishing: %+v, want one refusal", caused)
		}
		caused := h.answer(t, "confirm:cardset:$publish", ratifier, NoReaction)
		if len(caused) == 0 || !strings.Contains(caused[0].Body, "Cancelled 2 cards of set") {
			t.Fatalf("the ratifier's ❌ after publishing: %+v, want the set cancelled", caused)
		}
		for _, c := range backlog(t, cards) {
			if c.State != card.Cancelled {
				t.Errorf("card %s is %s after the NO-GO, want cancelled", c.ID, c.State)
			}
		}
	})

	t.Run("a reply with the word works like the tap", func(t *testing.T) {
		h, cards := newCardHarness(t, card.Config{})
		draftTwo(t, h, "P2")
		h.sayAs(t, "$publish", ratifier, "!card publish")
		h.answer(t, "confirm:cardset:$publish", ratifier, "publish")
		if n := len(backlog(t, cards)); n != 2 {
			t.Errorf("%d cards published after the reply 'publish', want 2", n)
		}
	})

	t.Run("a draft changed after the question is not published", func(t *testing.T) {
		h, cards := newCardHarness(t, card.Config{})
		draftTwo(t, h, "P2")
		h.sayAs(t, "$publish", ratifier, "!card publish")
		h.say(t, ratifier, `!card draft A third thing --accept "done" --priority P3`)
		caused := h.answer(t, "confirm:cardset:$publish", ratifier, YesReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Nothing published: the draft changed since I asked (it has 3 cards now)") {
			t.Fatalf("after ✅ on a stale question: %+v", caused)
		}
		if n := len(backlog(t, cards)); n != 0 {
			t.Errorf("%d cards published from a changed draft", n)
		}
	})

	t.Run("over the priority budget nothing is published and the draft stays", func(t *testing.T) {
		cfg := card.Config{Budget: map[string]card.BudgetRule{"P0": {Count: 1, Window: 24 * time.Hour}}}
		h, cards := newCardHarness(t, cfg)
		draftTwo(t, h, "P0")
		h.sayAs(t, "$publish", ratifier, "!card publish")
		caused := h.answer(t, "confirm:cardset:$publish", ratifier, YesReaction)
		if len(caused) != 1 || !strings.Contains(caused[0].Body, "Nothing published") || !strings.Contains(caused[0].Body, "P0") {
			t.Fatalf("after ✅ over budget: %+v", caused)
		}
		if n := len(backlog(t, cards)); n != 0 {
			t.Errorf("%d cards published over the budget", n)
		}
		wantText(t, "show-draft", onlyReply(t, h.say(t, ratifier, "!card show-draft")), "Your draft has 2 cards")
	})

	t.Run("an empty draft is not asked about", func(t *testing.T) {
		h, _ := newCardHarness(t, card.Config{})
		wantText(t, "reply", onlyReply(t, h.say(t, ratifier, "!card publish")), "Your draft is empty")
	})
}

// publishOne publishes one card ratified by ratifier and returns it.
func publishCard(t *testing.T, cards *card.Service, goal string) card.Card {
	t.Helper()
	set, err := cards.Publish(context.Background(), card.SetInput{Key: "k-" + goal, Author: card.MainAgent, RatifiedBy: ratifier,
		Cards: []card.Input{{Spec: card.Spec{Goal: goal, Acceptance: []string{"it is done"}, Priority: card.P2}}}})
	if err != nil {
		t.Fatal(err)
	}
	return set.Cards[0]
}

func TestCardListShowRatify(t *testing.T) {
	ctx := context.Background()
	h, cards := newCardHarness(t, card.Config{})
	grown := publishCard(t, cards, "Export reports")
	publishCard(t, cards, "Import reports")
	if _, err := cards.Amend(ctx, grown.ID, card.AmendmentInput{Kind: card.AmendClarification, Text: "CSV, not Excel", Author: "mos"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cards.Amend(ctx, grown.ID, card.AmendmentInput{Kind: card.AmendScopeChange, Text: "Also PDF",
		Acceptance: []string{"PDF export works"}, Author: "mos"}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, sender, say string
		want              []string
	}{
		{"list all", ratifier, "!card list", []string{"2 cards, most urgent first", "Export reports (P2, awaiting_ratification)", "Import reports (P2, published)"}},
		{"list by state", ratifier, "!card list awaiting-ratification", []string{"1 card awaiting_ratification", grown.ID}},
		{"list an empty state", ratifier, "!card list done", []string{"No done cards."}},
		{"list an unknown state", ratifier, "!card list finished", []string{"`finished` is not a card state", "needs_decision"}},
		{"show", ratifier, "!card show " + grown.ID, []string{"Export reports", "Priority: P2", "State: awaiting_ratification",
			"Revision: 3", "ratified by @alice:x at revision 1", "1. it is done",
			"1. revision 2, clarification by mos (native): CSV, not Excel", "2. revision 3, scope_change by mos (native): Also PDF (adds: PDF export works)"}},
		{"show an unknown card", ratifier, "!card show card_nope", []string{"There is no card `card_nope`"}},
		{"ratify by someone else", stranger, "!card ratify " + grown.ID, []string{"Only the card's ratifier or an admin"}},
		{"ratify by the ratifier", ratifier, "!card ratify " + grown.ID, []string{"Ratified card " + grown.ID + " at revision 3", "never a merge"}},
		{"ratify again", ratifier, "!card ratify " + grown.ID, []string{"does not wait for ratification"}},
		{"state after ratifying", ratifier, "!card show " + grown.ID, []string{"State: published — ratified at revision 3 by @alice:x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantText(t, "reply", onlyReply(t, h.say(t, tt.sender, tt.say)), tt.want...)
		})
	}
}

// raise claims a card ratified by ratifier and has the worker ask about it.
func raiseQuestion(t *testing.T, cards *card.Service, goal string, in card.DecisionInput) card.Decision {
	t.Helper()
	ctx := context.Background()
	c := publishCard(t, cards, goal)
	if _, err := cards.SetState(ctx, c.ID, card.Claimed, ""); err != nil {
		t.Fatal(err)
	}
	if in.Question == "" {
		in.Question = "Which database?"
		in.Options = []string{"Use SQLite", "Use Postgres", "Ask again later"}
	}
	in.Checkpoint = card.Checkpoint{Branch: "feat/db", Note: "schema drafted"}
	d, err := cards.RaiseDecision(ctx, c.ID, in)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDecisionAnswers(t *testing.T) {
	tests := []struct {
		name   string
		sender string
		answer string
		// before prepares the question: cancel, expire or answer it first.
		before func(t *testing.T, h *harness, cards *card.Service, d card.Decision)
		// option is the answer that stands afterwards (0: none).
		option int
		// say is a substring of the one message Jarvis sends besides the
		// relay's edit; empty means it says nothing more.
		say string
	}{
		{name: "the ratifier's tap", sender: ratifier, answer: "2️⃣", option: 2},
		{name: "a tap without the variation selector", sender: ratifier, answer: "3\u20e3", option: 3},
		{name: "a reply with the option's text", sender: ratifier, answer: "use postgres!", option: 2},
		{name: "a reply with the number", sender: ratifier, answer: "1.", option: 1},
		{name: "a reply copying the line", sender: ratifier, answer: "2. Use Postgres", option: 2},
		{name: "an admin may answer", sender: cardAdmin, answer: "1️⃣", option: 1},
		{name: "someone else is refused once", sender: stranger, answer: "2️⃣", say: "Only @alice:x (or an admin) can answer this question."},
		{name: "an option out of range", sender: ratifier, answer: "5", say: "Answer with an option's number (1 to 3)"},
		{name: "text that names no option gets a hint", sender: ratifier, answer: "hmm, which is cheaper?", say: "2. Use Postgres"},
		{name: "other emoji are just reactions", sender: ratifier, answer: "👍"},
		{name: "a later answer changes nothing and says nothing", sender: ratifier, answer: "1️⃣", option: 2,
			before: func(t *testing.T, h *harness, cards *card.Service, d card.Decision) {
				if _, err := cards.AnswerDecision(context.Background(), d.ID, 2, ratifier, "matrix", core.TrustNative); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a withdrawn question", sender: ratifier, answer: "1️⃣", say: "This question was withdrawn: card",
			before: func(t *testing.T, h *harness, cards *card.Service, d card.Decision) {
				if _, err := cards.SetState(context.Background(), d.CardID, card.Cancelled, "not needed"); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "an expired question", sender: ratifier, answer: "1", say: "Too late: this question closed unanswered",
			before: func(t *testing.T, h *harness, cards *card.Service, d card.Decision) {
				h.clock.Advance(2 * time.Hour)
				if _, err := cards.Sweep(context.Background()); err != nil {
					t.Fatal(err)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			h, cards := newCardHarness(t, card.Config{})
			d := raiseQuestion(t, cards, "Store reports", card.DecisionInput{Deadline: h.clock.Now().Add(time.Hour)})
			if got := queuedReactions(t, h, d.NoticeKey()); len(got) != 3 || got[1] != "2️⃣" {
				t.Errorf("reactions on the relay = %q, want 1️⃣ 2️⃣ 3️⃣", got)
			}
			if tt.before != nil {
				tt.before(t, h, cards, d)
			}
			before, err := cards.Get(ctx, d.CardID)
			if err != nil {
				t.Fatal(err)
			}
			caused := h.answer(t, d.NoticeKey(), tt.sender, tt.answer)
			after, err := cards.Get(ctx, d.CardID)
			if err != nil {
				t.Fatal(err)
			}
			var edits, messages []string
			for _, n := range caused {
				switch {
				case n.Kind == core.NoticeEdit && n.Target == d.NoticeKey():
					edits = append(edits, n.Body)
				case n.Kind == core.NoticeMessage:
					messages = append(messages, n.Body)
				}
			}
			q := after.Decisions[len(after.Decisions)-1]
			answeredNow := len(after.Amendments) > len(before.Amendments)
			switch {
			case tt.option == 0 && (answeredNow || q.Option != 0):
				t.Errorf("the question took option %d, want none", q.Option)
			case tt.option != 0 && q.Option != tt.option:
				t.Errorf("the question took option %d, want %d", q.Option, tt.option)
			}
			if answeredNow {
				a := after.Amendments[len(after.Amendments)-1]
				if a.Kind != card.AmendAnswer || a.Option != tt.option || a.Author != tt.sender || after.State != card.Published {
					t.Errorf("amendment %+v, card %s; want an answer with option %d by %s and the card published", a, after.State, tt.option, tt.sender)
				}
				if len(edits) != 1 || !strings.Contains(edits[0], "Answered by "+tt.sender) {
					t.Errorf("the relay was edited into %q, want one edit showing the answer", edits)
				}
			} else if len(edits) != 0 {
				t.Errorf("no new answer, yet the relay was edited: %q", edits)
			}
			if tt.say == "" {
				if len(messages) != 0 {
					t.Errorf("Jarvis said %q, want nothing", messages)
				}
				return
			}
			if len(messages) != 1 || !strings.Contains(messages[0], tt.say) {
				t.Errorf("Jarvis said %q, want one message with %q", messages, tt.say)
			}
		})
	}
}

func TestCardAnswerCommand(t *testing.T) {
	h, cards := newCardHarness(t, card.Config{})
	d := raiseQuestion(t, cards, "Store reports", card.DecisionInput{})
	tests := []struct {
		name, sender, say string
		want              []string
	}{
		{"no option", ratifier, "!card answer " + d.CardID, []string{"`!card answer <card-id> <option>`"}},
		{"an unknown card", ratifier, "!card answer card_nope 1", []string{"There is no card `card_nope`"}},
		{"text that names no option", ratifier, "!card answer " + d.CardID + " MySQL", []string{"Answer with an option's number (1 to 3)"}},
		{"someone else", stranger, "!card answer " + d.CardID + " 2", []string{"Only @alice:x (or an admin)"}},
		{"the ratifier, by text", ratifier, "!card answer " + d.CardID + " Use Postgres", []string{"Answered card " + d.CardID + ": 2. Use Postgres"}},
		{"again", ratifier, "!card answer " + d.CardID + " 1", []string{"Already answered: 2. Use Postgres"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantText(t, "reply", onlyReply(t, h.say(t, tt.sender, tt.say)), tt.want...)
		})
	}
}

func TestDraftsClearer(t *testing.T) {
	ctx := context.Background()
	h, cards := newCardHarness(t, card.Config{})
	h.say(t, ratifier, `!card draft One --accept "a" --priority P2`)
	h.say(t, ratifier, `!card draft Two --accept "b" --priority P2`)
	h.say(t, stranger, `!card draft Three --accept "c" --priority P2`)
	tests := []struct {
		name    string
		members []string
		want    string
	}{
		{"nobody with drafts", []string{"@carol:x"}, ""},
		{"one person's", []string{stranger}, "1 draft card"},
		{"everyone else's", []string{ratifier, stranger}, "2 draft cards"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clear := DraftsClearer(cards, func(context.Context, string) ([]string, error) { return tt.members, nil })
			if got, err := clear(ctx, "!room:x"); err != nil || got != tt.want {
				t.Errorf("clearer said %q, %v; want %q", got, err, tt.want)
			}
		})
	}
	wantText(t, "show-draft", onlyReply(t, h.say(t, ratifier, "!card show-draft")), "You have no draft cards")
}

// TestCardFromABridge: cards a puppet linked to nobody drafts and
// publishes wait for ratification, and the edit says a Matrix account
// must ratify them; another such puppet, a relay and a puppet confirming a
// Matrix person's question cannot put them on the backlog; the admin's
// Matrix account can, and a puppet linked to the admin can too.
func TestCardFromABridge(t *testing.T) {
	const puppet, otherPuppet = "@telegram_1:x", "@telegram_2:x"
	bridged := func(sender string) Message {
		return Message{RoomID: "!room:x", Sender: sender, Puppet: sender, Network: "telegram"}
	}
	h, cards := newCardHarness(t, card.Config{})
	say := func(from Message, eventID, body string) []string {
		t.Helper()
		from.EventID, from.Body, from.Sent = eventID, body, h.clock.Now()
		return h.handle(t, from)
	}
	say(bridged(puppet), "$d1", `!card draft Rotate the keys --accept "old keys refused" --priority P2`)
	say(bridged(puppet), "$d2", `!card draft Tell the team --accept "they know" --priority P3 --depends d1`)
	question := onlyReply(t, say(bridged(puppet), "$publish", "!card publish"))
	wantText(t, "question", question, "Publish these 2 cards with author main-agent, to wait for a Matrix account to ratify them")
	caused := h.answerAs(t, "confirm:cardset:$publish", bridged(puppet), YesReaction)
	if len(caused) != 1 {
		t.Fatalf("after ✅: %+v, want one edit", caused)
	}
	wantText(t, "edit", caused[0].Body, "Published, waiting for ratification", "a bridged account linked to nobody (bridged)",
		"`!card ratify <card-id>`")
	if n := len(published(t, cards)); n != 0 {
		t.Fatalf("%d cards on the backlog after a bridged publish, want 0", n)
	}
	waiting, err := cards.List(context.Background(), card.Filter{State: card.AwaitingRatification})
	if err != nil || len(waiting) != 2 {
		t.Fatalf("awaiting ratification: %d cards, %v; want 2", len(waiting), err)
	}
	id := waiting[0].ID
	wantText(t, "show", onlyReply(t, say(bridged(puppet), "$show", "!card show "+id)),
		"State: awaiting_ratification", "Its text came from: a bridged account linked to nobody (bridged)")

	refusals := []struct {
		name string
		from Message
		want string
	}{
		{"the publishing puppet", bridged(puppet), "Ratify from your Matrix account (or a bridged account linked to it)"},
		{"a second bridged person", bridged(otherPuppet), "Ratify from your Matrix account (or a bridged account linked to it)"},
		{"a relay naming the admin", Message{RoomID: "!room:x", Sender: "@telegrambot:x", Network: "telegram", Relay: true, RelayedName: "admin"},
			"can't act on messages relayed"},
		{"a Matrix account that is not the admin", Message{RoomID: "!room:x", Sender: stranger, Network: "matrix"}, "Only the card's ratifier or an admin"},
	}
	for i, r := range refusals {
		t.Run(r.name, func(t *testing.T) {
			wantText(t, "reply", onlyReply(t, say(r.from, "$refused"+strconv.Itoa(i), "!card ratify "+id)), r.want)
			if st, _ := cards.StateOf(context.Background(), id); st != card.AwaitingRatification {
				t.Fatalf("card is %s after the refusal", st)
			}
		})
	}
	linkedAdmin := Message{RoomID: "!room:x", Sender: cardAdmin, Puppet: "@telegram_9:x", Network: "telegram"}
	wantText(t, "linked admin", onlyReply(t, say(linkedAdmin, "$linked", "!card ratify "+waiting[1].ID)), "Ratified card "+waiting[1].ID)
	wantText(t, "admin", onlyReply(t, say(Message{RoomID: "!room:x", Sender: cardAdmin, Network: "matrix"}, "$admin", "!card ratify "+id)),
		"Ratified card "+id)
	if n := len(published(t, cards)); n != 2 {
		t.Fatalf("%d cards on the backlog after ratifying, want 2", n)
	}
}

// published lists the cards on the backlog, those a worker may claim.
func published(t *testing.T, cards *card.Service) []card.Card {
	t.Helper()
	list, err := cards.List(context.Background(), card.Filter{State: card.Published})
	if err != nil {
		t.Fatal(err)
	}
	return list
}
