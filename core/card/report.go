package card

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// WorkerNote is one entry a worker journaled about a card: an entry whose
// evidence names the card.
type WorkerNote struct {
	Title   string
	Content string
	At      time.Time
}

// Limits on what a mission report quotes of the worker's notes.
const (
	reportNotes       = 5
	reportNoteContent = 300
)

// report tells the person who ratified a card that reached done or was
// cancelled what became of it, in the thread of the message they
// published its set with (in the dedicated room when there is none), with
// the worker's notes on the card quoted as data. The last card of its set
// to finish closes the loop with a summary line. It runs inside the
// transaction that moved the card.
func (c *Service) report(ctx context.Context, card Card) error {
	if card.RatifiedBy == "" || !card.State.Final() {
		return nil
	}
	set, err := c.deps.Store.CardSet(ctx, card.SetID)
	if err != nil {
		return err
	}
	var notes []WorkerNote
	if c.deps.WorkerNotes != nil && card.Worker != "" {
		if notes, err = c.deps.WorkerNotes(ctx, card.Worker, card.ID); err != nil {
			return fmt.Errorf("the notes of %s on card %s: %w", card.Worker, card.ID, err)
		}
	}
	cards, err := c.deps.Store.CardsOfSet(ctx, set.ID)
	if err != nil {
		return err
	}
	n := core.Notice{Key: "report:" + card.ID, RoomID: c.deps.Room, Kind: core.NoticeMessage,
		Body: reportBody(card, notes, set, cards), Mentions: []string{card.RatifiedBy}}
	if set.PublishedIn.Notice != "" {
		n.RoomID, n.Target, n.Thread = set.PublishedIn.Room, set.PublishedIn.Notice, true
	}
	return c.deps.Outbox.Enqueue(ctx, n)
}

// reportBody is a mission report: the card, its outcome, the worker's
// last notes on it, and, for the last card of its set, the set's tally.
func reportBody(card Card, notes []WorkerNote, set Set, cards []Card) string {
	var b strings.Builder
	outcome := "is done"
	if card.State == Cancelled {
		outcome = "was abandoned"
	}
	fmt.Fprintf(&b, "%s: card %s %s — %s", card.RatifiedBy, card.ID, outcome, core.EscapeMarkdown(card.Spec.Goal))
	if card.Worker != "" {
		fmt.Fprintf(&b, " (worked by %s)", core.EscapeMarkdown(card.Worker))
	}
	b.WriteString(".\n")
	if card.StateNote != "" {
		fmt.Fprintf(&b, "\nNote: %s\n", core.EscapeMarkdown(card.StateNote))
	}
	if len(notes) > reportNotes {
		notes = notes[len(notes)-reportNotes:]
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, "\nWhat %s reported on it, as written:\n", core.EscapeMarkdown(card.Worker))
		for _, n := range notes {
			fmt.Fprintf(&b, "- %s — %s: %s\n", core.TimeText(n.At), core.EscapeMarkdown(n.Title),
				core.EscapeMarkdown(core.TruncateAfter(n.Content, reportNoteContent)))
		}
	}
	if line := setSummary(set, cards); line != "" {
		b.WriteString("\n" + line)
	}
	return strings.TrimSpace(b.String())
}

// setSummary is the line that closes a set whose cards are all done or
// cancelled, or "" while any is still open.
func setSummary(set Set, cards []Card) string {
	done, cancelled := 0, 0
	for _, c := range cards {
		switch c.State {
		case Done:
			done++
		case Cancelled:
			cancelled++
		default:
			return ""
		}
	}
	line := fmt.Sprintf("That was the last card of set %s: %s done", set.ID, core.Plural(done, "card", "cards"))
	if cancelled > 0 {
		line += fmt.Sprintf(", %d abandoned", cancelled)
	}
	return line + "."
}
