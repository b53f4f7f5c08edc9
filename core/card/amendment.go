package card

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// AmendmentKind says what an amendment changes.
type AmendmentKind string

// The amendment kinds.
const (
	// AmendClarification explains the spec without changing it.
	AmendClarification AmendmentKind = "clarification"
	// AmendAnswer records a person's answer to a worker's question. Only
	// AnswerDecision (and the default at a deadline) writes it.
	AmendAnswer AmendmentKind = "answer"
	// AmendPriorityChange moves the card to another priority class; it
	// draws from the new class's budget.
	AmendPriorityChange AmendmentKind = "priority_change"
	// AmendScopeChange expands the scope (new acceptance criteria, a
	// wider goal). The card waits for a person to ratify it again.
	AmendScopeChange AmendmentKind = "scope_change"
	// AmendScopeReduction narrows the scope; no ratification is needed.
	AmendScopeReduction AmendmentKind = "scope_reduction"
)

// AmendmentKinds lists the amendment kinds.
var AmendmentKinds = []AmendmentKind{AmendClarification, AmendAnswer, AmendPriorityChange, AmendScopeChange, AmendScopeReduction}

// MaxAmendmentText is the longest text an amendment may carry.
const MaxAmendmentText = 4000

// Amendment is one change to a published card. Amendments of a card are
// numbered by the revision they created: 2, 3, …
type Amendment struct {
	CardID   string
	Revision int
	Kind     AmendmentKind
	Text     string
	// Priority is the new class of a priority_change.
	Priority Priority
	// Acceptance lists the criteria a scope_change adds.
	Acceptance []string
	// DecisionID, Option and Elapsed describe an answer: which question,
	// which option (from 1), and how long after the question it came.
	DecisionID string
	Option     int
	Elapsed    time.Duration
	// Author made the amendment; Network is where a person's answer came
	// from ("matrix", "telegram", …).
	Author  string
	Network string
	// SourceTrust is where the text came from: external for an agent's
	// amendment, the answering account's trust for an answer.
	SourceTrust core.Trust
	CreatedAt   time.Time
}

// AmendmentInput is an amendment a worker or tool submits.
type AmendmentInput struct {
	Kind       AmendmentKind
	Text       string
	Priority   Priority
	Acceptance []string
	Author     string
	// BaseRevision, when not 0, is the revision the amendment was written
	// against; if the card has moved on since, it is refused (ErrConflict).
	BaseRevision int
	// SourceTrust is where the text came from; native when empty.
	SourceTrust core.Trust
}

// SignOff is a reviewer's sign-off, pinned to the revision they reviewed.
// An amendment after it makes it stale.
type SignOff struct {
	CardID   string
	Reviewer string
	Revision int
	Verdict  Verdict
	Note     string
	At       time.Time
}

// Verdict is what a reviewer found.
type Verdict string

// The verdicts.
const (
	Approved         Verdict = "approved"
	ChangesRequested Verdict = "changes_requested"
)

// MaxSignOffNote is the longest note a sign-off carries, in bytes.
const MaxSignOffNote = 2000

// Stale reports whether the card was amended after the sign-off.
func (s SignOff) Stale(c Card) bool { return s.Revision != c.Revision }

// AmendmentStore keeps amendments and sign-offs.
type AmendmentStore interface {
	// InsertAmendment writes an amendment; its revision must be new for
	// the card.
	InsertAmendment(ctx context.Context, a Amendment) error
	// Amendments returns a card's amendments by revision.
	Amendments(ctx context.Context, cardID string) ([]Amendment, error)
	// PutSignOff records a reviewer's sign-off, replacing theirs.
	PutSignOff(ctx context.Context, s SignOff) error
	// SignOffs returns a card's sign-offs by reviewer.
	SignOffs(ctx context.Context, cardID string) ([]SignOff, error)
}

// AmendResult is an amendment as written and the card after it.
type AmendResult struct {
	Amendment Amendment
	Card      Card
}

// validate checks an amendment a worker submits.
func (in AmendmentInput) validate() error {
	switch {
	case !slices.Contains(AmendmentKinds, in.Kind):
		return core.Invalid("kind", "unknown kind %q; one of clarification, priority_change, scope_change, scope_reduction", in.Kind)
	case in.Kind == AmendAnswer:
		return core.Invalid("kind", "answers come from people in the room, not from the API")
	case strings.TrimSpace(in.Text) == "":
		return core.Invalid("text", "is required")
	case len(in.Text) > MaxAmendmentText:
		return core.Invalid("text", "longer than %d bytes", MaxAmendmentText)
	case strings.TrimSpace(in.Author) == "":
		return core.Invalid("author", "is required")
	case len(in.Author) > MaxAuthorLen:
		return core.Invalid("author", "longer than %d bytes", MaxAuthorLen)
	case in.BaseRevision < 0:
		return core.Invalid("base_revision", "must not be negative")
	case in.Kind == AmendPriorityChange && !in.Priority.Valid():
		return core.Invalid("priority", "must be P0, P1, P2 or P3, not %q", in.Priority)
	case in.Kind != AmendPriorityChange && in.Priority != "":
		return core.Invalid("priority", "only a priority_change sets a priority")
	case in.Kind != AmendScopeChange && len(in.Acceptance) > 0:
		return core.Invalid("acceptance", "only a scope_change adds criteria")
	case len(in.Acceptance) > MaxAcceptance:
		return core.Invalid("acceptance", "at most %d criteria", MaxAcceptance)
	}
	for i, a := range in.Acceptance {
		if strings.TrimSpace(a) == "" || len(a) > MaxCriterionLen {
			return core.Invalid(fmt.Sprintf("acceptance[%d]", i), "must be 1-%d bytes", MaxCriterionLen)
		}
	}
	return nil
}

// Amend adds an amendment to a card: the revision grows by one, a
// priority_change moves the card to the new class (drawing from its
// budget), and a scope_change sends the card back for ratification and
// asks for it in the room. Final cards take no amendments.
func (c *Service) Amend(ctx context.Context, cardID string, in AmendmentInput) (AmendResult, error) {
	if err := in.validate(); err != nil {
		return AmendResult{}, err
	}
	if in.Kind == AmendScopeChange && c.deps.Room == "" {
		return AmendResult{}, errNoRoom
	}
	var out AmendResult
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		card, err := c.deps.Store.Card(ctx, cardID)
		if err != nil {
			return err
		}
		if card.State.Final() {
			return core.Refuse(core.ErrConflict, "card %s is %s and takes no amendments", card.ID, card.State)
		}
		if in.BaseRevision != 0 && in.BaseRevision != card.Revision {
			return core.Refuse(core.ErrConflict,
				"written against revision %d, but card %s is at revision %d", in.BaseRevision, card.ID, card.Revision)
		}
		now := c.deps.Clock.Now()
		a := Amendment{CardID: card.ID, Revision: card.Revision + 1, Kind: in.Kind, Text: strings.TrimSpace(in.Text),
			Priority: in.Priority, Acceptance: slices.Clone(in.Acceptance), Author: in.Author,
			SourceTrust: core.Derive(in.SourceTrust), CreatedAt: now}
		next := card
		next.Revision = a.Revision
		next.UpdatedAt = now
		switch in.Kind {
		case AmendPriorityChange:
			if in.Priority == card.Priority {
				return core.Invalid("priority", "card %s is %s already", card.ID, card.Priority)
			}
			next.Priority = in.Priority
			if err := c.checkBudget(ctx, []Card{next}, now); err != nil {
				return err
			}
			if err := c.chargeBudget(ctx, []Card{next}, now); err != nil {
				return err
			}
		case AmendScopeChange:
			if err := CheckTransition(card.State, AwaitingRatification, ByScope); err != nil {
				return err
			}
			next.State = AwaitingRatification
			next.StateNote = fmt.Sprintf("scope changed at revision %d; waiting for ratification", a.Revision)
			if err := c.deps.Outbox.Enqueue(ctx, c.scopeNotice(next, a)); err != nil {
				return err
			}
		}
		if err := c.deps.Store.InsertAmendment(ctx, a); err != nil {
			return err
		}
		if err := c.deps.Store.UpdateCard(ctx, next, card); err != nil {
			return err
		}
		out = AmendResult{Amendment: a, Card: next}
		return nil
	})
	if err != nil {
		return AmendResult{}, fmt.Errorf("amend card %q: %w", cardID, err)
	}
	if in.Kind == AmendScopeChange {
		c.changed(ctx)
	}
	return out, nil
}

// scopeNotice asks the people who ratify a card to ratify its new scope.
func (c *Service) scopeNotice(card Card, a Amendment) core.Notice {
	asked := c.askFor(card)
	var b strings.Builder
	if len(asked) > 0 {
		b.WriteString(strings.Join(asked, " ") + ": ")
	}
	fmt.Fprintf(&b, "the scope of card %s (%s) grew at revision %d and it waits for your ratification before it is dispatched again.\n\n%s\n",
		card.ID, core.EscapeMarkdown(card.Spec.Goal), a.Revision, core.EscapeMarkdown(a.Text))
	if len(a.Acceptance) > 0 {
		b.WriteString("\nNew acceptance criteria:\n\n")
		for _, crit := range a.Acceptance {
			b.WriteString("- " + core.EscapeMarkdown(crit) + "\n")
		}
	}
	return core.Notice{Key: fmt.Sprintf("scope:%s:%d", card.ID, a.Revision), RoomID: c.deps.Room, Kind: core.NoticeMessage,
		Body: b.String(), Mentions: asked}
}

// SignOffInput is a reviewer's sign-off as given.
type SignOffInput struct {
	Reviewer string
	// Revision is the spec revision reviewed; it must be the card's
	// current one.
	Revision int
	// Verdict defaults to Approved.
	Verdict Verdict
	Note    string
}

// SignOff records a reviewer's sign-off on a card at the given revision.
// A revision other than the card's current one is refused with ErrConflict:
// the reviewer must review what the card says now.
func (c *Service) SignOff(ctx context.Context, cardID string, in SignOffInput) (SignOff, error) {
	reviewer, revision := strings.TrimSpace(in.Reviewer), in.Revision
	if in.Verdict == "" {
		in.Verdict = Approved
	}
	switch {
	case reviewer == "":
		return SignOff{}, core.Invalid("reviewer", "is required")
	case len(reviewer) > 255:
		return SignOff{}, core.Invalid("reviewer", "longer than 255 bytes")
	case in.Verdict != Approved && in.Verdict != ChangesRequested:
		return SignOff{}, core.Invalid("verdict", "must be %s or %s, not %q", Approved, ChangesRequested, in.Verdict)
	case len(in.Note) > MaxSignOffNote:
		return SignOff{}, core.Invalid("note", "longer than %d bytes", MaxSignOffNote)
	}
	var out SignOff
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		card, err := c.deps.Store.Card(ctx, cardID)
		if err != nil {
			return err
		}
		if revision != card.Revision {
			return core.Refuse(core.ErrConflict, "signed revision %d, but card %s is at revision %d", revision, card.ID, card.Revision)
		}
		out = SignOff{CardID: card.ID, Reviewer: reviewer, Revision: revision, Verdict: in.Verdict,
			Note: strings.TrimSpace(in.Note), At: c.deps.Clock.Now()}
		return c.deps.Store.PutSignOff(ctx, out)
	})
	if err != nil {
		return SignOff{}, fmt.Errorf("sign off card %q: %w", cardID, err)
	}
	return out, nil
}
