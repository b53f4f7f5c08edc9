package commands

import (
	"context"
	"testing"

	"github.com/jarvis-hmi/jarvis/core/card"
)

func TestCardSignOff(t *testing.T) {
	ctx := context.Background()
	h, cards := newCardHarness(t, card.Config{})
	c := publishCard(t, cards, "Add TOTP to the login")

	wantText(t, "a sign-off", onlyReply(t, h.say(t, ratifier, "!card signoff "+c.ID)),
		"Signed off card "+c.ID+" at revision 1.")
	wantText(t, "the show", onlyReply(t, h.say(t, ratifier, "!card show "+c.ID)),
		"Sign-offs:\n\n- @alice:x: approved at revision 1")
	if _, err := cards.SignOff(ctx, c.ID, card.SignOffInput{Reviewer: "sentinel", Revision: 1, Verdict: card.ChangesRequested,
		Note: "the *recovery* codes are missing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cards.Amend(ctx, c.ID, card.AmendmentInput{Kind: card.AmendClarification, Text: "Use TOTP.", Author: card.MainAgent}); err != nil {
		t.Fatal(err)
	}
	wantText(t, "the show after an amendment", onlyReply(t, h.say(t, ratifier, "!card show "+c.ID)),
		"- @alice:x: approved at revision 1 — stale: the card was amended since (revision 2 now)\n",
		"- sentinel: changes_requested at revision 1 — stale: the card was amended since (revision 2 now) — the \\*recovery\\* codes are missing")
	wantText(t, "signing the old revision", onlyReply(t, h.say(t, ratifier, "!card signoff "+c.ID+" 1")),
		"Card "+c.ID+" is at revision 2, not 1")
	wantText(t, "signing the new one", onlyReply(t, h.say(t, ratifier, "!card signoff "+c.ID+" 2")),
		"Signed off card "+c.ID+" at revision 2.")
	wantText(t, "the show after", onlyReply(t, h.say(t, ratifier, "!card show "+c.ID)),
		"- @alice:x: approved at revision 2")
}
