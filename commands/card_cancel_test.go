package commands

import (
	"context"
	"testing"

	"github.com/jarvis-hmi/jarvis/core/card"
)

// TestCardCancel: a person's NO-GO from chat cancels a card or a whole
// set, with authority as for ratification, by id or in plain words that
// name one open card's goal; a stranger, a card already cancelled, an
// unknown id and words that name no card or several change nothing.
func TestCardCancel(t *testing.T) {
	ctx := context.Background()
	h, cards := newCardHarness(t, card.Config{})
	h.proc.AddNames("jarvis")
	export := publishCard(t, cards, "Export the CSV")
	pdf := publishCard(t, cards, "Export the PDF reports")
	publishCard(t, cards, "Import the PDF reports")
	set, err := cards.Publish(ctx, card.SetInput{Key: "k-set", Author: card.MainAgent, RatifiedBy: ratifier,
		Cards: []card.Input{
			{Spec: card.Spec{Goal: "Draft the report", Acceptance: []string{"drafted"}, Priority: card.P2}},
			{Spec: card.Spec{Goal: "Send the report", Acceptance: []string{"sent"}, Priority: card.P2}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cards.SetState(ctx, set.Cards[0].ID, card.Claimed, ""); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name, sender, say string
		want              []string
	}{
		{"no id", ratifier, "!card cancel", []string{"Which card?"}},
		{"by someone else", stranger, "!card cancel " + export.ID, []string{"Only the card's ratifier or an admin can cancel " + export.ID}},
		{"by the ratifier, with a reason", ratifier, "!card cancel " + export.ID + " not needed any more",
			[]string{"Cancelled card " + export.ID + " (Export the CSV)", "next read"}},
		{"again", ratifier, "!card cancel " + export.ID, []string{"Nothing to cancel", "Nothing changed."}},
		{"an unknown id", ratifier, "!card cancel card_nope", []string{"There is no card or set `card_nope`"}},
		{"a whole set, by an admin", cardAdmin, "!card stop " + set.ID, []string{"Cancelled 2 cards of set " + set.ID, set.Cards[0].ID, set.Cards[1].ID}},
		{"plain words naming no open card", ratifier, "jarvis, stop the CSV export", []string{`No open card's goal has "csv export"`, "nothing changed"}},
		{"plain words naming two cards", ratifier, "jarvis, stop the PDF reports", []string{"2 open cards have", "Export the PDF reports", "Import the PDF reports", "nothing changed"}},
		{"plain words naming one card", ratifier, "Jarvis, please stop the PDF report export", []string{"Cancelled card " + pdf.ID + " (Export the PDF reports)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantText(t, "reply", h.say(t, tt.sender, tt.say)[0], tt.want...)
		})
	}
	got, err := cards.Get(ctx, export.ID)
	if err != nil || got.State != card.Cancelled || got.StateNote != "cancelled by "+ratifier+": not needed any more" {
		t.Errorf("card %s is %s (%q, %v), want cancelled with who and why", export.ID, got.State, got.StateNote, err)
	}
	for _, c := range set.Cards {
		if st, _ := cards.StateOf(ctx, c.ID); st != card.Cancelled {
			t.Errorf("card %s of the set is %s, want cancelled", c.ID, st)
		}
	}
}
