package commands

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
)

// signOff signs a card off as its reviewer, the sender, at the
// revision given or the current one.
func (c *cardCommands) signOff(e *Event) error {
	if len(e.Args) < 1 || len(e.Args) > 2 {
		e.Reply("`%scard signoff <card-id> [revision]`", e.Proc.Prefix())
		return nil
	}
	detail, err := c.svc.Get(e.Ctx, e.Args[0])
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("There is no card `%s`; `%scard list` shows them.", core.EscapeMarkdown(e.Args[0]), e.Proc.Prefix())
		return nil
	}
	if err != nil {
		return err
	}
	revision := detail.Revision
	if len(e.Args) == 2 {
		if revision, err = strconv.Atoi(e.Args[1]); err != nil || revision < 1 {
			e.Reply("The revision is a number: card %s is at revision %d.", detail.ID, detail.Revision)
			return nil
		}
	}
	s, err := c.svc.SignOff(e.Ctx, detail.ID, card.SignOffInput{Reviewer: e.Sender, Revision: revision})
	if errors.Is(err, core.ErrConflict) {
		e.Reply("Card %s is at revision %d, not %d: read its amendments (`%scard show %s`) and sign off what it says now.",
			detail.ID, detail.Revision, revision, e.Proc.Prefix(), detail.ID)
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("Signed off card %s at revision %d. An amendment after this makes your sign-off stale.", s.CardID, s.Revision)
	return nil
}

// signOffLine is one sign-off as `!card show` lists it.
func signOffLine(s card.SignOff, c card.Card) string {
	line := fmt.Sprintf("%s: %s at revision %d", core.EscapeMarkdown(s.Reviewer), s.Verdict, s.Revision)
	if s.Stale(c) {
		line += fmt.Sprintf(" — stale: the card was amended since (revision %d now)", c.Revision)
	}
	if s.Note != "" {
		line += " — " + core.EscapeMarkdown(s.Note)
	}
	return line
}
