package commands

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
)

// ask says a sentence to Jarvis by name and returns the one answer.
func (h *harness) ask(t *testing.T, sender, body string) string {
	t.Helper()
	h.proc.AddNames("jarvis")
	return onlyReply(t, h.say(t, sender, "Jarvis, "+body))
}

func TestQuestionsAboutBreakers(t *testing.T) {
	quiet := newBreakerHarness(t, "", false)
	wantText(t, "nothing halted", quiet.ask(t, alice, "is anything halted?"), "Nothing is halted", "More: `!breaker status`.")

	bh := newBreakerHarness(t, breaker.Open, false)
	bh.proc.AddFeatures(Features{Agents: func() []string { return []string{"eve"} }})
	wantText(t, "eve halted", bh.ask(t, alice, "is anything halted?"), "eve is halted since", "tried to delete the workspace",
		"More: `!breaker status`.")
	wantText(t, "why eve", bh.ask(t, alice, "why is eve stopped?"), "eve is halted", "More: `!breaker status eve`.")
}

func TestQuestionsAboutCardsAndDecisions(t *testing.T) {
	h, cards := newCardHarness(t, testconfig.Cards())
	wantText(t, "no cards", h.ask(t, ratifier, "any cards blocked?"), "No card is blocked", "More: `!card list`.")
	c := publishCard(t, cards, "Export reports as CSV")
	ctx := context.Background()
	for _, s := range []card.State{card.Claimed, card.InProgress, card.Blocked} {
		if _, err := cards.SetState(ctx, c.ID, s, "waiting for the API key"); err != nil {
			t.Fatal(err)
		}
	}
	wantText(t, "blocked", h.ask(t, ratifier, "any cards blocked?"), "1 card is blocked: Export reports as CSV ("+c.ID+")",
		"More: `!card list blocked`.")
	wantText(t, "backlog", h.ask(t, ratifier, "how is the backlog?"), "1 card: 1 blocked", "More: `!card list`.")

	wantText(t, "nothing waiting", h.ask(t, ratifier, "what is waiting for me?"), "Nothing is waiting for your decision")
	d := raiseQuestion(t, cards, "Pick a database", card.DecisionInput{})
	wantText(t, "waiting", h.ask(t, ratifier, "what is waiting for me?"), "1 question is waiting for your decision",
		"on "+d.CardID, "Which database?", "More: `!card show <card-id>`.")
	wantText(t, "not for bob", h.ask(t, stranger, "what is waiting for me?"), "Nothing is waiting for your decision")
}

func TestQuestionsAboutTripwires(t *testing.T) {
	th := newTripwireHarness(t, time.Hour)
	wantText(t, "nothing armed", th.ask(t, alice, "what am I watching?"), "not watching anything", "More: `!tw templates`.")
	onlyReply(t, th.say(t, alice, `!tw arm integrity.gi lt 0.70 --label "GI low" --because "the Seal needs it"`))
	wantText(t, "armed", th.ask(t, alice, "what am I watching?"), "You have 1 tripwire: GI low.", "More: `!tw list`.")
	wantText(t, "bob's", th.ask(t, bob, "what am I watching?"), "not watching anything")

	wantText(t, "no trip", th.ask(t, alice, "did anything trip overnight?"), "Nothing tripped overnight", "More: `!tw journal`.")
	th.tick(t, 0.6)
	for range 2 {
		wantText(t, "a trip", th.ask(t, alice, "did anything trip overnight?"), "1 trip overnight", "GI low", "More: `!tw journal`.")
	}
	// Asking left the journal unread.
	wantText(t, "journal", onlyReply(t, th.say(t, alice, "!tw journal")), "Since you last looked")
	wantText(t, "a day later", func() string { th.clock.Advance(30 * time.Hour); return th.ask(t, alice, "did anything trip today?") }(),
		"Nothing tripped today")
}

func TestQuestionsAboutJarvisAndTheLease(t *testing.T) {
	h := newHarness(t)
	h.proc.AddFeatures(Features{System: &System{Version: "v1.2.3", Started: h.clock.Now().Add(-3 * time.Hour),
		Sections: []StatusSection{{Title: "Lease", Verb: "lease", Lines: func(context.Context) ([]string, error) {
			return []string{"Held by host-a (epoch 4)."}, nil
		}}}}})
	wantText(t, "admin lease", h.ask(t, "@admin:x", "who holds the lease?"), "Held by host-a (epoch 4).", "More: `!sys lease`.")
	wantText(t, "lease for others", h.ask(t, alice, "who holds the lease?"), "admins only")
	wantText(t, "admin jarvis", h.ask(t, "@admin:x", "how are you?"), "version v1.2.3, up 3h", "More: `!sys status`.")
	if got := h.ask(t, alice, "how are you?"); strings.Contains(got, "v1.2.3") {
		t.Errorf("a non-admin learns the version: %q", got)
	}
}
