package commands

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
)

// confirmCardSet is the confirmation kind of `!card publish`.
const confirmCardSet = "cardset"

// cardSetTTL is how long a publish question waits for its ✅. The drafts
// stay after it expires; only the question has to be asked again.
const cardSetTTL = time.Hour

// listCap is how many cards `!card list` shows in one message.
const listCap = 30

// DraftsClearer returns a `!sys clear` clearer that drops the draft cards
// of the people in a room, as members lists them, and says how many it
// dropped.
func DraftsClearer(cards *card.Service, members func(ctx context.Context, roomID string) ([]string, error)) func(ctx context.Context, roomID string) (string, error) {
	return func(ctx context.Context, roomID string) (string, error) {
		people, err := members(ctx, roomID)
		if err != nil {
			return "", fmt.Errorf("members of %s: %w", roomID, err)
		}
		total := 0
		for _, person := range people {
			n, err := cards.ClearDrafts(ctx, person)
			if err != nil {
				return "", err
			}
			total += n
		}
		if total == 0 {
			return "", nil
		}
		return core.Plural(total, "draft card", "draft cards"), nil
	}
}

// cardCommands are the `!card` verbs: drafting and publishing card sets,
// reading cards, ratifying them, answering their questions.
// confirmPublish publishes a draft set on its ✅, and onDecisionAnswer
// takes the answers to needs-decision relays: a reaction 1️⃣…🔟 on the
// relay, or a reply with the option's number or text.
type cardCommands struct {
	svc *card.Service
}

// handlers are `!card`.
func (c *cardCommands) handlers() []*Handler {
	return []*Handler{{
		Name: "card",
		Help: "Backlog cards for the orchestrator: draft a set, publish it in one go, follow the cards, answer their questions.",
		Subcommands: []*Handler{
			{Name: "draft", Args: `<goal> --accept "…" [--accept "…"] --priority P0|P1|P2|P3 [--depends d1|card-id] [--budget "…"]`,
				Help: "Add a card to your draft set.", Func: c.draft},
			{Name: "show-draft", Aliases: []string{"drafts"}, Help: "Show your draft set.", Func: c.showDraft},
			{Name: "drop", Args: "<ref>|all", Help: "Remove a card (d1, d2, …) or all of them from your draft set.", Func: c.drop},
			{Name: "publish", Help: "Publish your draft set, all cards or none, after your ✅: author main-agent, ratified by you.", Func: c.publish},
			{Name: "list", Aliases: []string{"ls"}, Args: "[state]", Help: "List cards, most urgent first, optionally only those in one state.", Func: c.list},
			{Name: "show", Args: "<card-id>", Help: "A card's goal, criteria, priority, state, revision, amendments and questions.", Func: c.show},
			{Name: "ratify", Args: "<card-id>", Help: "Ratify a card whose scope grew, so it can be dispatched again (dispatch only, never a merge).", Func: c.ratify},
			{Name: "amend", Args: `<card-id> [why] --accept "…" [--accept "…"] | --priority P0|P1|P2|P3`,
				Help: "Amend a card from chat: new acceptance criteria (it then waits for ratification again) or another priority; its worker sees the amendment on its next read.", Func: c.amend},
			{Name: "reopen", Args: "<card-id> [reason]", Help: "Put a done card back on the backlog, published for a worker to claim again.", Func: c.reopen},
			{Name: "cancel", Aliases: []string{"stop"}, Args: "<card-id>|<set-id> [reason] | <words of its goal>", Help: "NO-GO: cancel a card (by id, or the one open card whose goal has the words), or every card of a set not yet done; its worker sees it cancelled on its next read.", Func: c.cancel},
			{Name: "answer", Args: "<card-id> <option>", Help: "Answer a card's open question by option number or text (or react to the question).", Func: c.answer},
			{Name: "signoff", Args: "<card-id> [revision]", Help: "Sign off a card as its reviewer, pinned to the revision you reviewed (the current one when not given).", Func: c.signOff},
		},
	}}
}

// publishConfirm is the confirmation of `!card publish`.
func (c *cardCommands) publishConfirm() ConfirmKind {
	return ConfirmKind{Kind: confirmCardSet, TTL: cardSetTTL, OnConfirm: c.confirmPublish, OnDismiss: dismissPublish, Undo: c.undoPublish,
		YesWord: "publish", NoWord: "cancel", YesDoes: "publish", NoDoes: "keep drafting"}
}

// draft adds a card to the sender's draft set.
func (c *cardCommands) draft(e *Event) error {
	prefix := e.Proc.Prefix()
	if strings.TrimSpace(e.RawArgs) == "" {
		e.Reply("%s", draftUsage(prefix))
		return nil
	}
	spec, err := parseDraft(e.RawArgs)
	if err != nil {
		e.Reply("%s.\n\n%s", core.UpperFirst(err.Error()), draftUsage(prefix))
		return nil
	}
	drafts, err := c.svc.Drafts(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	unknown, err := checkDependencies(e.Ctx, c.svc, drafts, spec.DependsOn)
	if err != nil {
		return err
	}
	if unknown != "" {
		e.Reply("`--depends`: %s", unknown)
		return nil
	}
	d, err := c.svc.AddDraft(e.Ctx, e.Sender, spec, e.Trust)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		e.Reply("`%s`: %s.", flagOf(fe.Field), fe.Reason)
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("Added **%s** to your draft (%s): %s — %s.\n\n`%scard show-draft` shows the set, `%scard publish` publishes it.",
		d.Ref, core.Plural(len(drafts)+1, "card", "cards"), core.EscapeMarkdown(d.Goal), draftTraits(d.Spec), prefix, prefix)
	return nil
}

// checkDependencies says what is wrong with dependencies on drafts that
// do not exist or cards that were never published, or "" when all are
// known. It reads only, so a refusal writes nothing.
func checkDependencies(ctx context.Context, c *card.Service, drafts []card.Draft, deps []string) (string, error) {
	refs := make([]string, len(drafts))
	for i, d := range drafts {
		refs[i] = d.Ref
	}
	for _, dep := range deps {
		if slices.Contains(refs, dep) {
			continue
		}
		_, err := c.Get(ctx, dep)
		if err == nil {
			continue
		}
		if !errors.Is(err, core.ErrNotFound) {
			return "", err
		}
		if isDraftRef(dep) {
			if len(refs) == 0 {
				return fmt.Sprintf("you have no draft %s (your draft is empty).", dep), nil
			}
			return fmt.Sprintf("you have no draft %s (yours: %s).", dep, strings.Join(refs, ", ")), nil
		}
		return fmt.Sprintf("there is no card `%s`; name one of your drafts (d1, d2, …) or a published card id.", dep), nil
	}
	return "", nil
}

// showDraft lists the sender's draft set.
func (c *cardCommands) showDraft(e *Event) error {
	drafts, err := c.svc.Drafts(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	prefix := e.Proc.Prefix()
	if len(drafts) == 0 {
		e.Reply("You have no draft cards. Start with `%scard draft <goal> --accept \"…\" --priority P2`.", prefix)
		return nil
	}
	e.Reply("Your draft has %s:\n\n%s\n`%scard publish` publishes them together, `%scard drop <ref>` removes one.",
		core.Plural(len(drafts), "card", "cards"), renderDrafts(drafts), prefix, prefix)
	return nil
}

// drop removes one draft, or all of them, from the sender's set.
func (c *cardCommands) drop(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) != 1 {
		e.Reply("Which one? `%scard drop d2` removes d2, `%scard drop all` empties your draft.", prefix, prefix)
		return nil
	}
	ref := strings.ToLower(e.Args[0])
	if ref == "all" {
		n, err := c.svc.ClearDrafts(e.Ctx, e.Sender)
		if err != nil {
			return err
		}
		if n == 0 {
			e.Reply("Your draft was already empty.")
			return nil
		}
		e.Reply("Dropped all %s of your draft.", core.Plural(n, "card", "cards"))
		return nil
	}
	drafts, err := c.svc.Drafts(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(drafts, func(d card.Draft) bool { return d.Ref == ref })
	if i < 0 {
		e.Reply("You have no draft `%s`; `%scard show-draft` lists yours.", e.Args[0], prefix)
		return nil
	}
	var dependents []string
	for _, d := range drafts {
		if slices.Contains(d.DependsOn, ref) {
			dependents = append(dependents, d.Ref)
		}
	}
	if len(dependents) > 0 {
		e.Reply("%s depends on %s; drop %s first.", strings.Join(dependents, " and "), ref, strings.Join(dependents, " and "))
		return nil
	}
	if err := c.svc.DropDraft(e.Ctx, e.Sender, ref); err != nil {
		return err
	}
	e.Reply("Dropped %s (%s). %s left in your draft.", ref, core.EscapeMarkdown(drafts[i].Goal), core.UpperFirst(core.Plural(len(drafts)-1, "card", "cards")))
	return nil
}

// publish asks the sender to confirm publishing the whole draft set.
func (c *cardCommands) publish(e *Event) error {
	drafts, err := c.svc.Drafts(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	if len(drafts) == 0 {
		e.Reply("Your draft is empty: add cards with `%scard draft` first.", e.Proc.Prefix())
		return nil
	}
	sig, err := draftSignature(drafts)
	if err != nil {
		return err
	}
	what := "these " + core.Plural(len(drafts), "card", "cards")
	if len(drafts) == 1 {
		what = "this card"
	}
	how := fmt.Sprintf("to the backlog with author %s and ratified by %s", card.MainAgent, e.Sender)
	if !card.DraftTrust(drafts, e.Trust).AtLeast(core.TrustLinked) {
		how = fmt.Sprintf("with author %s, to wait for a Matrix account to ratify them (they come from a bridged account linked to nobody)", card.MainAgent)
	}
	return e.AskConfirm(confirmCardSet, sig, fmt.Sprintf(
		"Publish %s %s, all or none?\n\n%s",
		what, how, renderDrafts(drafts)))
}

// confirmPublish publishes the draft set the sender confirmed, unless it
// changed since the question. The returned text replaces the question.
func (c *cardCommands) confirmPublish(e *Event, p core.Pending) (string, error) {
	prefix := e.Proc.Prefix()
	drafts, err := c.svc.Drafts(e.Ctx, p.Requester)
	if err != nil {
		return "", err
	}
	if len(drafts) == 0 {
		return "Nothing published: the draft is empty now (published or cleared since I asked).", nil
	}
	sig, err := draftSignature(drafts)
	if err != nil {
		return "", err
	}
	if sig != p.Payload {
		return fmt.Sprintf("Nothing published: the draft changed since I asked (it has %s now). Say `%scard publish` again to see it and confirm.",
			core.Plural(len(drafts), "card", "cards"), prefix), nil
	}
	// Unknown dependencies are told in the draft's own terms (its refs)
	// before core is asked, which refuses them too, before writing.
	for _, d := range drafts {
		msg, err := checkDependencies(e.Ctx, c.svc, drafts, d.DependsOn)
		if err != nil {
			return "", err
		}
		if msg != "" {
			return fmt.Sprintf("Nothing published: %s depends on something unknown — %s Drop %s with `%scard drop %s` and draft it again.",
				d.Ref, msg, d.Ref, prefix, d.Ref), nil
		}
	}
	// The trust is the tap's: a draft confirmed from a puppet linked to
	// nobody waits for a Matrix account, whoever asked.
	set, err := c.svc.PublishDraft(e.Ctx, p.Requester, e.Trust, card.Message{Room: p.RoomID, Notice: p.Key})
	if why, ok := refusal(err); ok {
		return "Nothing published: " + why + ". Your draft is unchanged.", nil
	}
	if err != nil {
		return "", err
	}
	ids := make([]string, len(set.Cards))
	var b strings.Builder
	for i, card := range set.Cards {
		ids[i] = card.ID
		fmt.Fprintf(&b, "%d. %s (was %s) — %s, %s\n", i+1, card.ID, card.Ref, core.EscapeMarkdown(card.Spec.Goal), card.Priority)
	}
	if set.RatifiedBy == "" {
		return fmt.Sprintf("Published, waiting for ratification: %s\n\nTheir text came from %s, so they are not on the backlog: "+
			"a Matrix account (or one linked to it) that may ratify them must say `%scard ratify <card-id>` for each.\n\n%s",
			strings.Join(ids, " "), set.Cards[0].SourceTrust.Describe(), prefix, b.String()), nil
	}
	return fmt.Sprintf("Published: %s\n\nAuthor %s, ratified by %s; the orchestrator takes them from the backlog.\n\n%s",
		strings.Join(ids, " "), set.Author, set.RatifiedBy, b.String()), nil
}

func dismissPublish(e *Event, _ core.Pending) string {
	return fmt.Sprintf("Not published; the draft stays. `%scard publish` when it is ready.", e.Proc.Prefix())
}

// list shows cards, most urgent first.
func (c *cardCommands) list(e *Event) error {
	var f card.Filter
	if len(e.Args) > 1 {
		e.Reply("`%scard list` takes at most one state: %s.", e.Proc.Prefix(), cardStateNames())
		return nil
	}
	if len(e.Args) == 1 {
		f.State = card.State(strings.ReplaceAll(strings.ToLower(e.Args[0]), "-", "_"))
		if !f.State.Valid() {
			e.Reply("`%s` is not a card state; one of %s.", e.Args[0], cardStateNames())
			return nil
		}
	}
	cards, err := c.svc.List(e.Ctx, f)
	if err != nil {
		return err
	}
	where := ""
	if f.State != "" {
		where = " " + string(f.State)
	}
	if len(cards) == 0 {
		e.Reply("No%s cards.", where)
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%s, most urgent first:\n\n", core.UpperFirst(core.Plural(len(cards), "card", "cards")), where)
	for i, card := range cards[:min(len(cards), listCap)] {
		fmt.Fprintf(&b, "%d. %s — %s (%s, %s)\n", i+1, card.ID, core.EscapeMarkdown(card.Spec.Goal), card.Priority, card.State)
	}
	switch {
	case len(cards) >= card.DefaultListLimit:
		fmt.Fprintf(&b, "\nand at least %d more; `%scard list <state>` narrows the list.", len(cards)-listCap, e.Proc.Prefix())
	case len(cards) > listCap:
		fmt.Fprintf(&b, "\nand %d more; `%scard list <state>` narrows the list.", len(cards)-listCap, e.Proc.Prefix())
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
	return nil
}

// show describes one card.
func (c *cardCommands) show(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("Which card? `%scard show <card-id>`; `%scard list` shows the ids.", e.Proc.Prefix(), e.Proc.Prefix())
		return nil
	}
	d, err := c.svc.Get(e.Ctx, e.Args[0])
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("There is no card `%s`; `%scard list` shows them.", e.Args[0], e.Proc.Prefix())
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("%s", renderCard(d))
	return nil
}

// ratify puts a card whose scope grew back on the backlog.
func (c *cardCommands) ratify(e *Event) error {
	if len(e.Args) != 1 {
		e.Reply("Which card? `%scard ratify <card-id>`.", e.Proc.Prefix())
		return nil
	}
	card, err := c.svc.Ratify(e.Ctx, e.Args[0], e.Sender, e.Trust)
	switch {
	case errors.Is(err, core.ErrForbidden) && !e.Trust.AtLeast(core.TrustLinked):
		e.Reply("Ratify from your Matrix account (or a bridged account linked to it), not from %s. Nothing changed.", e.Trust.Describe())
	case errors.Is(err, core.ErrNotFound):
		e.Reply("There is no card `%s`; `%scard list awaiting_ratification` shows the cards waiting for you.", e.Args[0], e.Proc.Prefix())
	case errors.Is(err, core.ErrIllegalTransition):
		e.Reply("Card %s does not wait for ratification; only a card whose scope grew or that came from a bridge does (`%scard list awaiting_ratification`).",
			e.Args[0], e.Proc.Prefix())
	case errors.Is(err, core.ErrForbidden):
		e.Reply("Only the card's ratifier or an admin can ratify card %s.", e.Args[0])
	case err != nil:
		return err
	default:
		e.Reply("Ratified card %s at revision %d: it is back on the backlog for dispatch. Ratification authorises dispatch only, never a merge.",
			card.ID, card.Revision)
	}
	return nil
}

// cancel is a person's NO-GO on a card or a whole set.
func (c *cardCommands) cancel(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) < 1 {
		e.Reply("Which card? `%scard cancel <card-id> [reason]`, or a set's id to cancel all its cards.", prefix)
		return nil
	}
	id, reason := e.Args[0], rawAfter(e.RawArgs, 1)
	if !strings.HasPrefix(id, card.IDPrefix) && !strings.HasPrefix(id, card.SetIDPrefix) {
		match, ok, err := c.matchGoal(e, e.Args)
		if !ok || err != nil {
			return err
		}
		id, reason = match, ""
	}
	cards, err := c.svc.Cancel(e.Ctx, id, e.Sender, e.Trust, reason)
	var fe *core.FieldError
	switch {
	case errors.Is(err, core.ErrForbidden) && !e.Trust.AtLeast(core.TrustLinked):
		e.Reply("Cancel from your Matrix account (or a bridged account linked to it), not from %s. Nothing changed.", e.Trust.Describe())
	case errors.Is(err, core.ErrNotFound):
		e.Reply("There is no card or set `%s`; `%scard list` shows the cards.", id, prefix)
	case errors.Is(err, core.ErrIllegalTransition):
		e.Reply("Nothing to cancel: %s is already done or cancelled. Nothing changed.", id)
	case errors.Is(err, core.ErrForbidden):
		e.Reply("Only the card's ratifier or an admin can cancel %s. Nothing changed.", id)
	case errors.As(err, &fe):
		e.Reply("The reason is too long. Nothing changed.")
	case err != nil:
		return err
	case len(cards) == 1:
		e.Reply("Cancelled card %s (%s): its worker sees it cancelled on its next read.", cards[0].ID, core.EscapeMarkdown(cards[0].Spec.Goal))
	default:
		ids := make([]string, len(cards))
		for i, cd := range cards {
			ids[i] = cd.ID
		}
		e.Reply("Cancelled %s of set %s: %s. Their workers see them cancelled on their next read.",
			core.Plural(len(cards), "card", "cards"), id, strings.Join(ids, ", "))
	}
	return nil
}

// amend amends a card from chat, as the orchestrator's amendments over
// the API do: added acceptance criteria are a scope change that waits for
// ratification again, a priority is a priority change.
func (c *cardCommands) amend(e *Event) error {
	prefix := e.Proc.Prefix()
	usage := fmt.Sprintf("`%scard amend <card-id> [why] --accept \"…\"` adds acceptance criteria (the card then waits for ratification again); "+
		"`%scard amend <card-id> [why] --priority P1` changes its priority.", prefix, prefix)
	if len(e.Args) < 2 {
		e.Reply("%s", usage)
		return nil
	}
	spec, err := parseCardFlags(rawAfter(e.RawArgs, 1))
	if err != nil {
		e.Reply("%s.\n\n%s", core.UpperFirst(err.Error()), usage)
		return nil
	}
	in := card.AmendmentInput{Text: spec.Goal}
	switch {
	case len(spec.DependsOn) > 0 || spec.Budget != "":
		e.Reply("A card's dependencies and budget stay as published; amend its acceptance or its priority.\n\n%s", usage)
		return nil
	case len(spec.Acceptance) > 0 && spec.Priority != "":
		e.Reply("One amendment at a time: the acceptance criteria or the priority.\n\n%s", usage)
		return nil
	case len(spec.Acceptance) > 0:
		in.Kind, in.Acceptance = card.AmendScopeChange, spec.Acceptance
	case spec.Priority != "":
		in.Kind, in.Priority = card.AmendPriorityChange, spec.Priority
	default:
		e.Reply("%s", usage)
		return nil
	}
	if in.Text == "" {
		in.Text = "amended from chat"
	}
	id := e.Args[0]
	res, err := c.svc.AmendAs(e.Ctx, id, e.Sender, e.Trust, in)
	var fe *core.FieldError
	switch {
	case errors.Is(err, core.ErrForbidden) && !e.Trust.AtLeast(core.TrustLinked):
		e.Reply("Amend from your Matrix account (or a bridged account linked to it), not from %s. Nothing changed.", e.Trust.Describe())
	case errors.Is(err, core.ErrNotFound):
		e.Reply("There is no card `%s`; `%scard list` shows the cards.", id, prefix)
	case errors.Is(err, core.ErrForbidden):
		e.Reply("Only the card's ratifier or an admin can amend %s. Nothing changed.", id)
	case errors.As(err, &fe):
		e.Reply("`%s`: %s. Nothing changed.", flagOf(fe.Field), fe.Reason)
	case errors.Is(err, core.ErrConflict):
		e.Reply("Card %s was not amended: %s. Nothing changed.", id, reasonOf(err))
	case err != nil:
		// A transition or budget refusal is answered from the refusal table.
		return err
	case in.Kind == card.AmendScopeChange:
		e.Reply("Amended card %s to revision %d: %s added. It waits for ratification again (`%scard ratify %s`); its worker sees it on its next read.",
			id, res.Card.Revision, core.Plural(len(in.Acceptance), "acceptance criterion", "acceptance criteria"), prefix, id)
	default:
		e.Reply("Amended card %s to revision %d: priority %s. Its worker sees it on its next read.", id, res.Card.Revision, res.Card.Priority)
	}
	return nil
}

// reopen puts a done card back on the backlog.
func (c *cardCommands) reopen(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) < 1 {
		e.Reply("Which card? `%scard reopen <card-id> [reason]`.", prefix)
		return nil
	}
	id := e.Args[0]
	cd, err := c.svc.Reopen(e.Ctx, id, e.Sender, e.Trust, rawAfter(e.RawArgs, 1))
	var fe *core.FieldError
	switch {
	case errors.Is(err, core.ErrForbidden) && !e.Trust.AtLeast(core.TrustLinked):
		e.Reply("Reopen from your Matrix account (or a bridged account linked to it), not from %s. Nothing changed.", e.Trust.Describe())
	case errors.Is(err, core.ErrNotFound):
		e.Reply("There is no card `%s`; `%scard list done` shows the done cards.", id, prefix)
	case errors.Is(err, core.ErrIllegalTransition):
		e.Reply("Card %s is not done; only a done card is reopened. Nothing changed.", id)
	case errors.Is(err, core.ErrForbidden):
		e.Reply("Only the card's ratifier or an admin can reopen %s. Nothing changed.", id)
	case errors.As(err, &fe):
		e.Reply("The reason is too long. Nothing changed.")
	case err != nil:
		return err
	default:
		e.Reply("Reopened card %s (%s): it is published again for a worker to claim.", cd.ID, core.EscapeMarkdown(cd.Spec.Goal))
	}
	return nil
}

// undoPublish is a ❌ on a publish question after its ✅: a NO-GO on the
// whole set it published.
func (c *cardCommands) undoPublish(e *Event, p core.Pending) error {
	set, err := c.svc.SetPublishedBy(e.Ctx, p.Key)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	e.Args, e.RawArgs = []string{set.ID}, set.ID
	return c.cancel(e)
}

// matchGoal finds the one open card whose goal has every word (a plural
// or a singular of it too), as a NO-GO said in plain words names it; ok
// is false when it replied instead: no card, or more than one.
func (c *cardCommands) matchGoal(e *Event, words []string) (string, bool, error) {
	open, err := c.svc.List(e.Ctx, card.Filter{Limit: card.MaxListLimit})
	if err != nil {
		return "", false, err
	}
	var found []card.Card
	for _, cd := range open {
		if !cd.State.Final() && goalHas(cd.Spec.Goal, words) {
			found = append(found, cd)
		}
	}
	phrase := core.EscapeMarkdown(strings.Join(words, " "))
	switch len(found) {
	case 0:
		e.Reply("No open card's goal has %q; nothing changed. `%scard list` shows the cards.", phrase, e.Proc.Prefix())
		return "", false, nil
	case 1:
		return found[0].ID, true, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s have %q in their goal; nothing changed. Cancel one by its id (`%scard cancel <card-id>`):\n",
		core.UpperFirst(core.Plural(len(found), "open card", "open cards")), phrase, e.Proc.Prefix())
	for i, cd := range found[:min(len(found), listCap)] {
		fmt.Fprintf(&b, "%d. %s — %s (%s)\n", i+1, cd.ID, core.EscapeMarkdown(cd.Spec.Goal), cd.State)
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
	return "", false, nil
}

// goalHas reports whether every word is a word of goal, without regard to
// case or a plural's s.
func goalHas(goal string, words []string) bool {
	have := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(goal), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		have[strings.TrimSuffix(w, "s")] = true
	}
	for _, w := range words {
		if !have[strings.TrimSuffix(strings.ToLower(w), "s")] {
			return false
		}
	}
	return true
}

// cardStopIntent turns a NO-GO said to Jarvis in plain words ("stop the
// CSV export") into `!card cancel` with the words that name the card.
func cardStopIntent(text string) (string, []string, bool) {
	words, ok := intent.CardStop(text)
	if !ok {
		return "", nil, false
	}
	return "card cancel", words, true
}

// answer answers a card's open question from a command, for networks
// where replying to the relay message is awkward.
func (c *cardCommands) answer(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) < 2 {
		e.Reply("`%scard answer <card-id> <option>`: the option's number or its text.", prefix)
		return nil
	}
	cardID := e.Args[0]
	detail, err := c.svc.Get(e.Ctx, cardID)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("There is no card `%s`; `%scard list needs_decision` shows the cards waiting for an answer.", cardID, prefix)
		return nil
	}
	if err != nil {
		return err
	}
	if len(detail.Decisions) == 0 {
		e.Reply("Card %s has no question to answer.", cardID)
		return nil
	}
	d := detail.Decisions[len(detail.Decisions)-1]
	option, ok := parseOption(rawAfter(e.RawArgs, 1), d.Options)
	if !ok {
		e.Reply("%s", optionsHint(d))
		return nil
	}
	res, done, err := c.applyAnswer(e, d, option, e.Reply)
	switch {
	case err != nil:
		return err
	case !done:
	case res.AlreadyAnswered:
		e.Reply("Already answered: %d. %s. The first answer stands.", res.Decision.Option, core.EscapeMarkdown(res.Decision.Options[res.Decision.Option-1]))
	default:
		e.Reply("Answered card %s: %d. %s. The worker reads it when the card is dispatched again.", d.CardID, option, core.EscapeMarkdown(d.Options[option-1]))
	}
	return nil
}

// onDecisionAnswer handles a reaction or reply to a needs-decision relay
// (or to its reminder). The first valid answer wins and the relay is
// edited to show it; later answers change nothing and say nothing.
// Refusals get one short reply.
func (c *cardCommands) onDecisionAnswer(e *Event, key, answer string) error {
	cardID, questionID, ok := parseDecisionKey(key)
	if !ok {
		return nil
	}
	d, err := question(e.Ctx, c.svc, cardID, questionID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, tap := card.OptionFromEmoji(answer)
	reply := e.Reply
	if tap {
		// Replying to a reaction reads oddly: answer under the question,
		// naming the person.
		reply = func(format string, args ...any) {
			e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, Body: e.Sender + ": " + fmt.Sprintf(format, args...),
				Mentions: []string{e.Sender}, Target: key})
		}
	}
	option, ok := parseOption(answer, d.Options)
	if !ok {
		// Other emoji are just reactions; text that names no option gets
		// a hint while the question is open.
		if d.Status == card.DecisionOpen && strings.IndexFunc(answer, isAnswerRune) >= 0 {
			reply("%s", optionsHint(d))
		}
		return nil
	}
	_, _, err = c.applyAnswer(e, d, option, reply)
	return err
}

// applyAnswer gives an answer to question d and replies to refusals. done
// is false when it replied with a refusal or failed.
func (c *cardCommands) applyAnswer(e *Event, d card.Decision, option int, reply func(string, ...any)) (card.AnswerResult, bool, error) {
	res, err := c.svc.AnswerDecision(e.Ctx, d.ID, option, e.Sender, e.Network, e.Trust)
	switch {
	case errors.Is(err, core.ErrForbidden):
		reply("Only %s (or an admin) can answer this question.", strings.Join(d.Asked, ", "))
	case errors.Is(err, core.ErrExpired):
		reply("Too late: this question closed unanswered and card %s is blocked.", d.CardID)
	case errors.Is(err, core.ErrGone):
		reply("This question was withdrawn: card %s was cancelled.", d.CardID)
	case errors.Is(err, core.ErrInvalid):
		reply("%s", optionsHint(d))
	case err != nil:
		return res, false, err
	default:
		return res, true, nil
	}
	return res, false, nil
}

// question finds a question of a card.
func question(ctx context.Context, c *card.Service, cardID, questionID string) (card.Decision, error) {
	detail, err := c.Get(ctx, cardID)
	if err != nil {
		return card.Decision{}, err
	}
	for _, d := range detail.Decisions {
		if d.ID == questionID {
			return d, nil
		}
	}
	return card.Decision{}, fmt.Errorf("question %s of card %s: %w", questionID, cardID, core.ErrNotFound)
}

// parseDecisionKey splits a relay notice key, decision:<card>:<question>
// with maybe a suffix (:reminder, :deadline).
func parseDecisionKey(key string) (cardID, questionID string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(key, "decision:"), ":")
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// parseOption reads an answer: an option's reaction, its number ("2",
// "2.", "option 2", "#2"), its text, or "2. text" copied from the list.
// Text must match an option exactly (case and spacing aside): a decision
// is not guessed at.
func parseOption(answer string, options []string) (int, bool) {
	if n, ok := card.OptionFromEmoji(strings.TrimSpace(answer)); ok {
		return n, true
	}
	s := normalizeAnswer(answer)
	if s == "" {
		return 0, false
	}
	for i, o := range options {
		if normalizeAnswer(o) == s {
			return i + 1, true
		}
	}
	s = strings.TrimPrefix(strings.TrimPrefix(s, "option "), "#")
	num, rest, _ := strings.Cut(s, " ")
	num = strings.TrimRight(num, ".):")
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0, false
	}
	if rest == "" {
		return n, true
	}
	if n >= 1 && n <= len(options) && normalizeAnswer(options[n-1]) == strings.TrimSpace(rest) {
		return n, true
	}
	return 0, false
}

// normalizeAnswer lower-cases, collapses spaces and drops the punctuation
// people add at the end of a reply.
func normalizeAnswer(s string) string {
	s = strings.ToLower(strings.Join(strings.Fields(s), " "))
	return strings.TrimRight(s, ".!?")
}

func isAnswerRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// optionsHint says how to answer question d.
func optionsHint(d card.Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Answer with an option's number (1 to %d) or its text:\n\n", len(d.Options))
	for i, o := range d.Options {
		fmt.Fprintf(&b, "%d. %s\n", i+1, core.EscapeMarkdown(o))
	}
	return strings.TrimSpace(b.String())
}

// draftUsage explains `!card draft`.
func draftUsage(prefix string) string {
	return fmt.Sprintf("Usage: `%scard draft <goal> --accept \"…\" [--accept \"…\"] --priority P0|P1|P2|P3 [--depends d1|card-id] [--budget \"…\"]`\n"+
		"For example: `%scard draft Add CSV export --accept \"every column is exported\" --priority P2 --budget \"2h\"`", prefix, prefix)
}

// The flags of `!card draft`, by every name they go by.
const (
	flagAccept   = "--accept"
	flagPriority = "--priority"
	flagDepends  = "--depends"
	flagBudget   = "--budget"
)

var draftFlags = map[string]string{
	"accept": flagAccept, "acceptance": flagAccept, "criterion": flagAccept,
	"priority": flagPriority, "prio": flagPriority,
	"depends": flagDepends, "depends-on": flagDepends, "after": flagDepends,
	"budget": flagBudget,
}

// parseDraft reads `!card draft` arguments: the goal, then flags. A flag's
// value is the quoted text or the words up to the next flag.
func parseDraft(raw string) (card.Spec, error) {
	spec, err := parseCardFlags(raw)
	if err != nil {
		return spec, err
	}
	return spec, checkDraft(spec)
}

// checkDraft says what a card to draft lacks: its goal, an acceptance
// criterion or a priority, in `!card draft`'s words (the model's card
// sets are checked with them too).
func checkDraft(spec card.Spec) error {
	switch {
	case spec.Goal == "":
		return errors.New("the goal is missing: say what the card achieves, before the flags")
	case len(spec.Acceptance) == 0:
		return errors.New("`--accept` is missing: give at least one acceptance criterion, e.g. --accept \"the export opens in a spreadsheet\"")
	case !spec.Priority.Valid():
		return errors.New("`--priority` is missing: give P0, P1, P2 or P3")
	}
	return nil
}

// parseCardFlags reads words and the flags of `card draft` (and `card
// amend`) into a spec: the words not in a flag are its goal.
func parseCardFlags(raw string) (card.Spec, error) {
	words, err := splitArgs(raw)
	if err != nil {
		return card.Spec{}, err
	}
	var spec card.Spec
	var goal []string
	seen := map[string]bool{}
	for i := 0; i < len(words); {
		name, isFlag := flagName(words[i])
		if !isFlag {
			goal = append(goal, words[i].text)
			i++
			continue
		}
		flag, known := draftFlags[name]
		if !known {
			return spec, fmt.Errorf("`%s` is not a flag of `card draft`; it takes --accept, --priority, --depends and --budget", words[i].text)
		}
		j := i + 1
		var value []string
		for ; j < len(words); j++ {
			if _, next := flagName(words[j]); next {
				break
			}
			value = append(value, words[j].text)
		}
		i = j
		text := strings.TrimSpace(strings.Join(value, " "))
		if text == "" {
			return spec, fmt.Errorf("`%s` needs a value after it, e.g. %s", flag, flagExample(flag))
		}
		if seen[flag] && flag != flagAccept && flag != flagDepends {
			return spec, fmt.Errorf("`%s` is given twice; give it once", flag)
		}
		seen[flag] = true
		switch flag {
		case flagAccept:
			spec.Acceptance = append(spec.Acceptance, text)
		case flagPriority:
			p := card.Priority(strings.ToUpper(text))
			switch {
			case len(value) > 1:
				return spec, fmt.Errorf("`--priority` takes one of P0, P1, P2, P3, not `%s` (the goal goes first, before the flags)", text)
			case !p.Valid():
				return spec, fmt.Errorf("`--priority` must be one of P0, P1, P2, P3, not `%s`", text)
			}
			spec.Priority = p
		case flagDepends:
			for _, dep := range strings.FieldsFunc(text, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
				if isDraftRef(strings.ToLower(dep)) {
					dep = strings.ToLower(dep)
				}
				if slices.Contains(spec.DependsOn, dep) {
					return spec, fmt.Errorf("`--depends` names %s twice", dep)
				}
				spec.DependsOn = append(spec.DependsOn, dep)
			}
		case flagBudget:
			spec.Budget = text
		}
	}
	spec.Goal = strings.TrimSpace(strings.Join(goal, " "))
	return spec, nil
}

func flagExample(flag string) string {
	switch flag {
	case flagPriority:
		return "--priority P2"
	case flagDepends:
		return "--depends d1"
	case flagBudget:
		return `--budget "2h"`
	}
	return `--accept "the tests pass"`
}

// flagOf names the `!card draft` flag behind a field core refused.
func flagOf(field string) string {
	field = strings.TrimPrefix(field, "card.")
	if i := strings.IndexByte(field, '['); i >= 0 {
		field = field[:i]
	}
	switch field {
	case "acceptance":
		return flagAccept
	case "priority":
		return flagPriority
	case "depends_on":
		return flagDepends
	case "budget":
		return flagBudget
	case "goal":
		return "goal"
	}
	return "card draft"
}

// isDraftRef reports whether s looks like a draft's ref: d1, d2, …
func isDraftRef(s string) bool {
	if len(s) < 2 || s[0] != 'd' {
		return false
	}
	_, err := strconv.Atoi(s[1:])
	return err == nil
}

// draftSignature identifies a draft set's content, so that a ✅ publishes
// exactly the set the question showed.
func draftSignature(drafts []card.Draft) (string, error) {
	inputs := make([]card.Input, len(drafts))
	for i, d := range drafts {
		inputs[i] = d.Input
	}
	b, err := json.Marshal(struct {
		DraftID string
		Cards   []card.Input
	}{drafts[0].DraftID, inputs})
	if err != nil {
		return "", fmt.Errorf("draft signature: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// renderDrafts lists drafts as numbered lines with their criteria below.
func renderDrafts(drafts []card.Draft) string {
	var b strings.Builder
	for i, d := range drafts {
		fmt.Fprintf(&b, "%d. %s — %s (%s)\n", i+1, d.Ref, core.EscapeMarkdown(d.Goal), draftTraits(d.Spec))
		for _, a := range d.Acceptance {
			fmt.Fprintf(&b, "    - %s\n", core.EscapeMarkdown(a))
		}
	}
	return b.String()
}

// draftTraits says a spec's priority, dependencies and budget.
func draftTraits(s card.Spec) string {
	parts := []string{string(s.Priority)}
	if len(s.DependsOn) > 0 {
		parts = append(parts, "after "+strings.Join(s.DependsOn, ", "))
	}
	if s.Budget != "" {
		parts = append(parts, "budget "+core.EscapeMarkdown(s.Budget))
	}
	return strings.Join(parts, ", ")
}

// renderCard describes a card for `!card show`, one fact a line.
func renderCard(d card.Detail) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** — %s\n\n", d.ID, core.EscapeMarkdown(d.Spec.Goal))
	priority := string(d.Priority)
	if d.Priority != d.Spec.Priority {
		priority += fmt.Sprintf(" (published as %s)", d.Spec.Priority)
	}
	fmt.Fprintf(&b, "Priority: %s\n", priority)
	state := string(d.State)
	if d.StateNote != "" {
		state += " — " + core.EscapeMarkdown(d.StateNote)
	}
	fmt.Fprintf(&b, "State: %s\n", state)
	fmt.Fprintf(&b, "Revision: %d\n", d.Revision)
	author := "Author: " + core.EscapeMarkdown(d.Author)
	if d.RatifiedBy != "" {
		author += fmt.Sprintf(", ratified by %s at revision %d", core.EscapeMarkdown(d.RatifiedBy), d.RatifiedRevision)
	}
	b.WriteString(author + "\n")
	fmt.Fprintf(&b, "Its text came from: %s\n", d.SourceTrust.Describe())
	if len(d.Spec.DependsOn) > 0 {
		fmt.Fprintf(&b, "Depends on: %s\n", strings.Join(d.Spec.DependsOn, ", "))
	}
	if d.Spec.Budget != "" {
		fmt.Fprintf(&b, "Budget: %s\n", core.EscapeMarkdown(d.Spec.Budget))
	}
	b.WriteString("\nAcceptance criteria:\n\n")
	for i, a := range d.Spec.Acceptance {
		fmt.Fprintf(&b, "%d. %s\n", i+1, core.EscapeMarkdown(a))
	}
	if len(d.Amendments) > 0 {
		b.WriteString("\nAmendments:\n\n")
		for i, a := range d.Amendments {
			fmt.Fprintf(&b, "%d. revision %d, %s by %s (%s): %s\n", i+1, a.Revision, a.Kind, core.EscapeMarkdown(a.Author+viaNetwork(a.Network)),
				cmp.Or(a.SourceTrust, core.TrustNative), amendmentSummary(a, d.Decisions))
		}
	}
	if len(d.SignOffs) > 0 {
		b.WriteString("\nSign-offs:\n\n")
		for _, so := range d.SignOffs {
			b.WriteString("- " + signOffLine(so, d.Card) + "\n")
		}
	}
	for _, q := range d.Decisions {
		if q.Status != card.DecisionOpen {
			continue
		}
		fmt.Fprintf(&b, "\nOpen question for %s: %s\n\n", strings.Join(q.Asked, ", "), core.EscapeMarkdown(q.Question))
		for i, o := range q.Options {
			fmt.Fprintf(&b, "%d. %s\n", i+1, core.EscapeMarkdown(o))
		}
	}
	return strings.TrimSpace(b.String())
}

// amendmentSummary is one line about an amendment.
func amendmentSummary(a card.Amendment, questions []card.Decision) string {
	switch a.Kind {
	case card.AmendAnswer:
		for _, q := range questions {
			if q.ID == a.DecisionID && a.Option >= 1 && a.Option <= len(q.Options) {
				return fmt.Sprintf("%s → %d. %s", core.EscapeMarkdown(q.Question), a.Option, core.EscapeMarkdown(q.Options[a.Option-1]))
			}
		}
	case card.AmendPriorityChange:
		return fmt.Sprintf("to %s — %s", a.Priority, amendmentLine(a.Text))
	case card.AmendScopeChange:
		if len(a.Acceptance) > 0 {
			return fmt.Sprintf("%s (adds: %s)", amendmentLine(a.Text), core.EscapeMarkdown(strings.Join(a.Acceptance, "; ")))
		}
	}
	return amendmentLine(a.Text)
}

func viaNetwork(network string) string {
	if network == "" {
		return ""
	}
	return " via " + network
}

func amendmentLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return core.EscapeMarkdown(core.TruncateAfter(line, 200))
}

func cardStateNames() string {
	names := make([]string, len(card.States))
	for i, s := range card.States {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
