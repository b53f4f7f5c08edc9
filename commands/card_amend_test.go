package commands

import (
	"context"
	"testing"

	"github.com/jarvis-hmi/jarvis/core/card"
)

// TestCardAmend: a card's ratifier or an admin amends it from chat, as
// the orchestrator does over the API: new acceptance criteria send it
// back for ratification, a priority moves it; a stranger and a bad flag
// change nothing.
func TestCardAmend(t *testing.T) {
	ctx := context.Background()
	h, cards := newCardHarness(t, card.Config{})
	c := publishCard(t, cards, "Export the CSV")
	tests := []struct {
		name, sender, say string
		want              []string
	}{
		{"no flags", ratifier, "!card amend " + c.ID + " please", []string{"adds acceptance criteria"}},
		{"by someone else", stranger, "!card amend " + c.ID + ` --accept "it has a header row"`, []string{"Only the card's ratifier or an admin can amend " + c.ID}},
		{"both at once", ratifier, "!card amend " + c.ID + ` --accept "x" --priority P1`, []string{"One amendment at a time"}},
		{"a priority", ratifier, "!card amend " + c.ID + " it is urgent --priority P1", []string{"Amended card " + c.ID + " to revision 2: priority P1"}},
		{"acceptance", cardAdmin, "!card amend " + c.ID + ` the client asked --accept "it has a header row"`,
			[]string{"Amended card " + c.ID + " to revision 3: 1 acceptance criterion added", "waits for ratification again"}},
		{"ratified again", ratifier, "!card ratify " + c.ID, []string{"Ratified card " + c.ID + " at revision 3"}},
		{"an unknown card", ratifier, "!card amend card_nope --priority P3", []string{"There is no card `card_nope`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantText(t, "reply", h.say(t, tt.sender, tt.say)[0], tt.want...)
		})
	}
	got, err := cards.Get(ctx, c.ID)
	if err != nil || got.Priority != card.P1 || got.Revision != 3 || got.State != card.Published || len(got.Amendments) != 2 ||
		got.Amendments[1].Author != cardAdmin || got.Amendments[1].Text != "the client asked" {
		t.Errorf("the card is %+v (%v), want P1 at revision 3, published, with the admin's scope change", got, err)
	}
}

// TestCardReopen: a done card is reopened from chat by its ratifier,
// published again with no worker; a card not done and a stranger change
// nothing.
func TestCardReopen(t *testing.T) {
	ctx := context.Background()
	h, cards := newCardHarness(t, card.Config{})
	c := publishCard(t, cards, "Export the CSV")
	for _, to := range []card.State{card.Claimed, card.InProgress} {
		if _, err := cards.SetStateAs(ctx, "EVE", c.ID, to, ""); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, sender, say string
		want              []string
	}{
		{"not done yet", ratifier, "!card reopen " + c.ID, []string{"is not done"}},
		{"done", ratifier, "", nil},
		{"by someone else", stranger, "!card reopen " + c.ID, []string{"Only the card's ratifier or an admin can reopen"}},
		{"by the ratifier", ratifier, "!card reopen " + c.ID + " the header row is missing", []string{"Reopened card " + c.ID + " (Export the CSV)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.say == "" {
				if _, err := cards.SetStateAs(ctx, "EVE", c.ID, card.Done, "shipped"); err != nil {
					t.Fatal(err)
				}
				return
			}
			wantText(t, "reply", h.say(t, tt.sender, tt.say)[0], tt.want...)
		})
	}
	got, err := cards.Get(ctx, c.ID)
	if err != nil || got.State != card.Published || got.Worker != "" || got.StateNote != "reopened by "+ratifier+": the header row is missing" {
		t.Errorf("the card is %s, worker %q, note %q (%v); want published again with no worker", got.State, got.Worker, got.StateNote, err)
	}
}
