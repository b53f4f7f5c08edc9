package card

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// DecisionStatus is where a worker's question stands.
type DecisionStatus string

// The question statuses. Every status but open is final.
const (
	// DecisionOpen waits for an answer.
	DecisionOpen DecisionStatus = "open"
	// DecisionAnswered was answered by a person.
	DecisionAnswered DecisionStatus = "answered"
	// DecisionDefaulted got its default option at the deadline.
	DecisionDefaulted DecisionStatus = "defaulted"
	// DecisionExpired reached its deadline with no answer and no default;
	// its card is blocked.
	DecisionExpired DecisionStatus = "expired"
	// DecisionWithdrawn was closed because its card was cancelled.
	DecisionWithdrawn DecisionStatus = "withdrawn"
)

// Limits on a question.
const (
	MinDecisionOptions = 2
	MaxDecisionOptions = 10
	MaxQuestionLen     = 2000
	MaxOptionLen       = 200
	MaxBranchLen       = 255
	MaxCheckpointNote  = 2000
)

// decisionIDPrefix starts every question id.
const decisionIDPrefix = "q_"

// Checkpoint is where a worker left its work when it asked: a pushed
// branch and a note, so that the answer, even days later, re-dispatches the
// card rather than continuing a lost context.
type Checkpoint struct {
	Branch string
	Note   string
}

// DecisionInput is a question a worker raises on a card.
type DecisionInput struct {
	Question   string
	Options    []string
	Checkpoint Checkpoint
	// Deadline, when set, is when the question closes: a reminder goes out
	// at half-time, and at the deadline DefaultOption (from 1) applies, or
	// the question expires when there is none.
	Deadline      time.Time
	DefaultOption int
}

// Decision is a worker's question on a card and what became of it.
type Decision struct {
	ID            string
	CardID        string
	Question      string
	Options       []string
	Checkpoint    Checkpoint
	Deadline      time.Time
	DefaultOption int
	// Asked are the people the question was put to: the card's ratifier,
	// or the admins.
	Asked  []string
	Status DecisionStatus
	// Option is the option chosen (from 1); AnsweredBy and Network say who
	// chose it and from which network.
	Option     int
	AnsweredBy string
	Network    string
	AskedAt    time.Time
	RemindAt   time.Time
	RemindedAt time.Time
	ClosedAt   time.Time
}

// NoticeKey is the key of the message that relays the question to the
// room. Reactions and replies to that message answer it.
func (d Decision) NoticeKey() string { return "decision:" + d.CardID + ":" + d.ID }

// DecisionStore keeps questions.
type DecisionStore interface {
	// InsertDecision writes a new question.
	InsertDecision(ctx context.Context, d Decision) error
	// Decision returns a question by id, or ErrNotFound.
	Decision(ctx context.Context, id string) (Decision, error)
	// LatestDecision returns the card's most recent question, or
	// ErrNotFound.
	LatestDecision(ctx context.Context, cardID string) (Decision, error)
	// DecisionsOfCard returns a card's questions, oldest first.
	DecisionsOfCard(ctx context.Context, cardID string) ([]Decision, error)
	// UpdateDecision writes the outcome and reminder fields of an open
	// question, and returns ErrConflict when it is no longer open.
	UpdateDecision(ctx context.Context, d Decision) error
	// DueDecisions returns up to limit open questions whose deadline or
	// unsent reminder is due at now.
	DueDecisions(ctx context.Context, now time.Time, limit int) ([]Decision, error)
	// OpenDecisions returns every open question.
	OpenDecisions(ctx context.Context) ([]Decision, error)
	// MoveAsked makes to one of the people asked, instead of from, in
	// every open question from is asked, and says how many.
	MoveAsked(ctx context.Context, from, to string) (int, error)
}

// Adopt gives the open questions a bridged puppet is asked to the Matrix
// account it was just linked to, and says how many.
func (c *Service) Adopt(ctx context.Context, from, to string) (int, error) {
	var n int
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		n, err = c.deps.Store.MoveAsked(ctx, from, to)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("move the questions asked of %s to %s: %w", from, to, err)
	}
	return n, nil
}

// AnswerResult is what answering did. AlreadyAnswered is true when the
// question had been answered (or defaulted) before: nothing changed, and
// Decision shows the answer that stands.
type AnswerResult struct {
	Decision        Decision
	Card            Card
	AlreadyAnswered bool
}

// SweepResult counts what a sweep did.
type SweepResult struct {
	Reminded  int
	Defaulted int
	Expired   int
}

// SweepBatch is how many due questions one Sweep handles at most.
const SweepBatch = 100

// validate checks a question a worker raises, at now.
func (in DecisionInput) validate(now time.Time) error {
	switch {
	case strings.TrimSpace(in.Question) == "":
		return core.Invalid("question", "is required")
	case len(in.Question) > MaxQuestionLen:
		return core.Invalid("question", "longer than %d bytes", MaxQuestionLen)
	case len(in.Options) < MinDecisionOptions || len(in.Options) > MaxDecisionOptions:
		return core.Invalid("options", "give %d to %d options, not %d", MinDecisionOptions, MaxDecisionOptions, len(in.Options))
	case strings.TrimSpace(in.Checkpoint.Branch) == "":
		return core.Invalid("checkpoint.branch", "is required: push your work and name the branch")
	case len(in.Checkpoint.Branch) > MaxBranchLen:
		return core.Invalid("checkpoint.branch", "longer than %d bytes", MaxBranchLen)
	case strings.TrimSpace(in.Checkpoint.Note) == "":
		return core.Invalid("checkpoint.note", "is required: say where the work stands")
	case len(in.Checkpoint.Note) > MaxCheckpointNote:
		return core.Invalid("checkpoint.note", "longer than %d bytes", MaxCheckpointNote)
	case !in.Deadline.IsZero() && !in.Deadline.After(now):
		return core.Invalid("deadline", "must be in the future")
	case in.DefaultOption != 0 && in.Deadline.IsZero():
		return core.Invalid("default_option", "applies at a deadline; give one")
	case in.DefaultOption < 0 || in.DefaultOption > len(in.Options):
		return core.Invalid("default_option", "must be an option number from 1 to %d", len(in.Options))
	}
	if err := core.CheckOptions(in.Options, MaxOptionLen); err != nil {
		return err
	}
	return nil
}

// RaiseDecision records a worker's question on a card it holds: the card
// moves to needs_decision, and in the same transaction the question is
// relayed to the room, mentioning the card's ratifier (or the admins), with
// one reaction per option under it for answering with a tap.
func (c *Service) RaiseDecision(ctx context.Context, cardID string, in DecisionInput) (Decision, error) {
	return c.RaiseDecisionAs(ctx, "", cardID, in)
}

// RaiseDecisionAs is RaiseDecision by the agent worker: a card another
// agent works is refused with ErrForbidden.
func (c *Service) RaiseDecisionAs(ctx context.Context, worker, cardID string, in DecisionInput) (Decision, error) {
	now := c.deps.Clock.Now()
	if err := in.validate(now); err != nil {
		return Decision{}, err
	}
	if c.deps.Room == "" {
		return Decision{}, errNoRoom
	}
	var out Decision
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		card, err := c.deps.Store.Card(ctx, cardID)
		if err != nil {
			return err
		}
		if err := checkWorker(card, worker); err != nil {
			return err
		}
		if err := CheckTransition(card.State, NeedsDecision, ByQuestion); err != nil {
			return err
		}
		d := Decision{ID: c.ids.Next(decisionIDPrefix, now), CardID: card.ID, Question: strings.TrimSpace(in.Question),
			Options: trimAll(in.Options), Checkpoint: in.Checkpoint, Deadline: in.Deadline,
			DefaultOption: in.DefaultOption, Asked: c.askFor(card), Status: DecisionOpen, AskedAt: now}
		if !d.Deadline.IsZero() {
			d.RemindAt = now.Add(d.Deadline.Sub(now) / 2)
		}
		if err := c.deps.Store.InsertDecision(ctx, d); err != nil {
			return err
		}
		if _, err := c.move(ctx, card, NeedsDecision, "waiting on question "+d.ID); err != nil {
			return err
		}
		notices := []core.Notice{{Key: d.NoticeKey(), RoomID: c.deps.Room, Kind: core.NoticeMessage,
			Body: relayBody(card, d, ""), Mentions: d.Asked}}
		for i := range d.Options {
			notices = append(notices, core.Notice{Key: fmt.Sprintf("%s:react:%d", d.NoticeKey(), i+1), RoomID: c.deps.Room,
				Kind: core.NoticeReaction, Body: OptionEmoji(i + 1), Target: d.NoticeKey()})
		}
		for _, n := range notices {
			if err := c.deps.Outbox.Enqueue(ctx, n); err != nil {
				return err
			}
		}
		out = d
		return nil
	})
	if err != nil {
		return Decision{}, fmt.Errorf("raise question on card %q: %w", cardID, err)
	}
	c.changed(ctx)
	return out, nil
}

// AnswerDecision applies a person's answer. ref is a question id, the key
// of the relay notice (Decision.NoticeKey), or a card id (its latest
// question); option counts from 1, as shown in the room. The first valid
// answer wins: it is written as an answer amendment, the card goes back to
// published for re-dispatch, and the relay message is edited to show it.
// Later answers change nothing and come back with AlreadyAnswered. An
// expired question is ErrExpired, a withdrawn one ErrGone, an option out
// of range ErrInvalid, and a person who was not asked (nor an admin)
// ErrForbidden.
func (c *Service) AnswerDecision(ctx context.Context, ref string, option int, who, network string, trust core.Trust) (AnswerResult, error) {
	if strings.TrimSpace(who) == "" {
		return AnswerResult{}, core.Invalid("who", "is required")
	}
	var out AnswerResult
	err := c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		d, err := c.findDecision(ctx, ref)
		if err != nil {
			return err
		}
		switch d.Status {
		case DecisionAnswered, DecisionDefaulted:
			card, err := c.deps.Store.Card(ctx, d.CardID)
			out = AnswerResult{Decision: d, Card: card, AlreadyAnswered: true}
			return err
		case DecisionExpired:
			return core.Refuse(core.ErrExpired,
				"question %s closed unanswered at %s and card %s is blocked", d.ID, d.Deadline.UTC().Format(time.RFC3339), d.CardID)
		case DecisionWithdrawn:
			return core.Refuse(core.ErrGone, "question %s was withdrawn when card %s was cancelled", d.ID, d.CardID)
		}
		if option < 1 || option > len(d.Options) {
			return core.Invalid("option", "question %s has options 1 to %d", d.ID, len(d.Options))
		}
		if !c.mayDecide(d.Asked, who) {
			return core.Refuse(core.ErrForbidden, "question %s is for %s", d.ID, strings.Join(d.Asked, ", "))
		}
		d.Status, d.Option, d.AnsweredBy, d.Network = DecisionAnswered, option, who, network
		out, err = c.close(ctx, d, core.Derive(trust))
		return err
	})
	if err != nil {
		return AnswerResult{}, fmt.Errorf("answer question %q: %w", ref, err)
	}
	if !out.AlreadyAnswered {
		c.changed(ctx)
	}
	return out, nil
}

// findDecision resolves what AnswerDecision was given to a question.
func (c *Service) findDecision(ctx context.Context, ref string) (Decision, error) {
	if rest, ok := strings.CutPrefix(ref, "decision:"); ok {
		// decision:<card>:<question>, maybe with a suffix such as :react:2.
		parts := strings.Split(rest, ":")
		if len(parts) < 2 {
			return Decision{}, core.Invalid("question", "%q is not a question's notice key", ref)
		}
		ref = parts[1]
	}
	if strings.HasPrefix(ref, IDPrefix) {
		return c.deps.Store.LatestDecision(ctx, ref)
	}
	return c.deps.Store.Decision(ctx, ref)
}

// close records the outcome set on d (answered or defaulted), writes the
// answer amendment with the trust of whoever chose (external for the
// asking agent's default), re-publishes the card and edits the relay
// message.
func (c *Service) close(ctx context.Context, d Decision, trust core.Trust) (AnswerResult, error) {
	now := c.deps.Clock.Now()
	d.ClosedAt = now
	if err := c.deps.Store.UpdateDecision(ctx, d); err != nil {
		return AnswerResult{}, err
	}
	card, err := c.deps.Store.Card(ctx, d.CardID)
	if err != nil {
		return AnswerResult{}, err
	}
	if err := CheckTransition(card.State, Published, ByAnswer); err != nil {
		return AnswerResult{}, err
	}
	a := Amendment{CardID: card.ID, Revision: card.Revision + 1, Kind: AmendAnswer, Text: answerText(d),
		DecisionID: d.ID, Option: d.Option, Elapsed: now.Sub(d.AskedAt), Author: d.AnsweredBy,
		Network: d.Network, SourceTrust: trust, CreatedAt: now}
	if d.Status == DecisionDefaulted {
		a.Author = MainAgent
	}
	if err := c.deps.Store.InsertAmendment(ctx, a); err != nil {
		return AnswerResult{}, err
	}
	next := card
	next.Revision = a.Revision
	next.State = Published
	next.StateNote = fmt.Sprintf("question %s answered: %d. %s", d.ID, d.Option, d.Options[d.Option-1])
	next.UpdatedAt = now
	if err := c.deps.Store.UpdateCard(ctx, next, card); err != nil {
		return AnswerResult{}, err
	}
	if err := c.deps.Outbox.Enqueue(ctx, c.outcomeEdit(card, d)); err != nil {
		return AnswerResult{}, err
	}
	return AnswerResult{Decision: d, Card: next}, nil
}

// withdrawDecision closes the open question of a card being cancelled and
// edits its relay message to say so.
func (c *Service) withdrawDecision(ctx context.Context, card Card) error {
	d, err := c.deps.Store.LatestDecision(ctx, card.ID)
	if errors.Is(err, core.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	if d.Status != DecisionOpen {
		return nil
	}
	d.Status = DecisionWithdrawn
	d.ClosedAt = c.deps.Clock.Now()
	if err := c.deps.Store.UpdateDecision(ctx, d); err != nil {
		return err
	}
	return c.deps.Outbox.Enqueue(ctx, c.outcomeEdit(card, d))
}

// Sweep acts on questions whose time has come, as the clock says: at
// half-time before a deadline it reminds the people asked; at the deadline
// it applies the default option, or marks the question expired and blocks
// the card, and says so in the room. Each question is handled in its own
// transaction; one Sweep handles at most SweepBatch questions. The lead
// calls it on a ticker.
func (c *Service) Sweep(ctx context.Context) (SweepResult, error) {
	var res SweepResult
	due, err := c.deps.Store.DueDecisions(ctx, c.deps.Clock.Now(), SweepBatch)
	if err != nil {
		return res, fmt.Errorf("sweep questions: %w", err)
	}
	for _, d := range due {
		var status DecisionStatus
		err = c.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			var err error
			status, err = c.sweepOne(ctx, d.ID)
			return err
		})
		if err != nil {
			err = fmt.Errorf("sweep question %s: %w", d.ID, err)
			break
		}
		switch status {
		case DecisionOpen:
			res.Reminded++
		case DecisionDefaulted:
			res.Defaulted++
		case DecisionExpired:
			res.Expired++
		}
	}
	if res.Defaulted+res.Expired > 0 {
		c.changed(ctx)
	}
	return res, err
}

// sweepOne handles one due question inside a transaction, reading it again
// so that an answer that came in meanwhile wins. It returns what it did:
// DecisionOpen for a reminder, DecisionDefaulted or DecisionExpired at the
// deadline, "" for nothing.
func (c *Service) sweepOne(ctx context.Context, id string) (DecisionStatus, error) {
	d, err := c.deps.Store.Decision(ctx, id)
	if err != nil {
		return "", err
	}
	now := c.deps.Clock.Now()
	if d.Status != DecisionOpen || d.Deadline.IsZero() {
		return "", nil
	}
	card, err := c.deps.Store.Card(ctx, d.CardID)
	if err != nil {
		return "", err
	}
	if now.Before(d.Deadline) {
		if !d.RemindedAt.IsZero() || now.Before(d.RemindAt) {
			return "", nil
		}
		d.RemindedAt = now
		if err := c.deps.Store.UpdateDecision(ctx, d); err != nil {
			return "", err
		}
		return DecisionOpen, c.deps.Outbox.Enqueue(ctx, core.Notice{Key: d.NoticeKey() + ":reminder", RoomID: c.deps.Room,
			Kind: core.NoticeMessage, Body: reminderBody(card, d, now), Mentions: d.Asked, Target: d.NoticeKey()})
	}
	if d.DefaultOption > 0 {
		d.Status, d.Option = DecisionDefaulted, d.DefaultOption
		if _, err := c.close(ctx, d, core.TrustExternal); err != nil {
			return "", err
		}
	} else {
		d.Status = DecisionExpired
		d.ClosedAt = now
		if err := c.deps.Store.UpdateDecision(ctx, d); err != nil {
			return "", err
		}
		if err := CheckTransition(card.State, Blocked, ByExpiry); err != nil {
			return "", err
		}
		if _, err := c.move(ctx, card, Blocked, fmt.Sprintf("question %s expired unanswered", d.ID)); err != nil {
			return "", err
		}
		if err := c.deps.Outbox.Enqueue(ctx, c.outcomeEdit(card, d)); err != nil {
			return "", err
		}
	}
	return d.Status, c.deps.Outbox.Enqueue(ctx, core.Notice{Key: d.NoticeKey() + ":deadline", RoomID: c.deps.Room, Kind: core.NoticeMessage,
		Body: deadlineBody(card, d), Mentions: d.Asked, Target: d.NoticeKey()})
}

// outcomeEdit replaces the relay message with the question and what became
// of it.
func (c *Service) outcomeEdit(card Card, d Decision) core.Notice {
	return core.Notice{Key: d.NoticeKey() + ":outcome", RoomID: c.deps.Room, Kind: core.NoticeEdit,
		Body: relayBody(card, d, outcomeLine(card, d)), Target: d.NoticeKey()}
}

// relayBody is the relay message: who is asked, the card, the question
// and its numbered options, then how to answer — or, once closed, the
// outcome.
func relayBody(card Card, d Decision, outcome string) string {
	var b strings.Builder
	if len(d.Asked) > 0 {
		b.WriteString(strings.Join(d.Asked, " ") + ": ")
	}
	fmt.Fprintf(&b, "a worker needs a decision on card %s — %s\n\n%s\n\n", card.ID, core.EscapeMarkdown(card.Spec.Goal), core.EscapeMarkdown(d.Question))
	for i, o := range d.Options {
		fmt.Fprintf(&b, "%d. %s\n", i+1, core.EscapeMarkdown(o))
	}
	b.WriteString("\n")
	if outcome != "" {
		b.WriteString(outcome)
		return b.String()
	}
	b.WriteString("React with the option's number or reply with it.")
	if !d.Deadline.IsZero() {
		fmt.Fprintf(&b, " Deadline: %s, then %s.", core.DeadlineText(d.Deadline), afterDeadline(d))
	}
	return b.String()
}

// outcomeLine says how a closed question ended.
func outcomeLine(card Card, d Decision) string {
	switch d.Status {
	case DecisionAnswered:
		return fmt.Sprintf("✅ Answered by %s after %s: %d. %s", core.EscapeMarkdown(d.AnsweredBy+core.ViaText(d.Network)),
			core.ClockDuration(d.ClosedAt.Sub(d.AskedAt)), d.Option, core.EscapeMarkdown(d.Options[d.Option-1]))
	case DecisionDefaulted:
		return fmt.Sprintf("⏱ No answer by the deadline; the default applies: %d. %s", d.Option, core.EscapeMarkdown(d.Options[d.Option-1]))
	case DecisionExpired:
		return fmt.Sprintf("⏱ No answer by the deadline; the question expired and card %s is blocked.", card.ID)
	default:
		return fmt.Sprintf("✖ Withdrawn: card %s was cancelled.", card.ID)
	}
}

// afterDeadline says what happens at the deadline.
func afterDeadline(d Decision) string {
	if d.DefaultOption > 0 {
		return fmt.Sprintf("option %d (%s) applies", d.DefaultOption, core.EscapeMarkdown(d.Options[d.DefaultOption-1]))
	}
	return "the question expires and the card is blocked"
}

// reminderBody reminds the people asked at half-time.
func reminderBody(card Card, d Decision, now time.Time) string {
	var b strings.Builder
	if len(d.Asked) > 0 {
		b.WriteString(strings.Join(d.Asked, " ") + ": ")
	}
	fmt.Fprintf(&b, "reminder — the question on card %s is still open: %s\n\nDeadline: %s (in %s), then %s.",
		card.ID, core.EscapeMarkdown(d.Question), core.DeadlineText(d.Deadline), core.ClockDuration(d.Deadline.Sub(now)), afterDeadline(d))
	return b.String()
}

// deadlineBody tells the room what happened at the deadline.
func deadlineBody(card Card, d Decision) string {
	if d.Status == DecisionDefaulted {
		return fmt.Sprintf("No answer on card %s by the deadline, so the default applies: %d. %s. The card is back in the queue.",
			card.ID, d.Option, core.EscapeMarkdown(d.Options[d.Option-1]))
	}
	return fmt.Sprintf("No answer on card %s by the deadline: the question expired and the card is blocked until someone moves it on.", card.ID)
}

// answerText is the text of the answer amendment a worker reads when the
// card is dispatched again.
func answerText(d Decision) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Question %s: %s\nAnswer: %d. %s\n", d.ID, d.Question, d.Option, d.Options[d.Option-1])
	if d.Status == DecisionDefaulted {
		b.WriteString("Nobody answered by the deadline; this is the default option.\n")
	} else {
		fmt.Fprintf(&b, "Answered by %s%s after %s.\n", d.AnsweredBy, core.ViaText(d.Network), core.ClockDuration(d.ClosedAt.Sub(d.AskedAt)))
	}
	fmt.Fprintf(&b, "Resume from branch %s: %s", d.Checkpoint.Branch, d.Checkpoint.Note)
	return b.String()
}

// optionEmoji are the reactions that stand for options 1 to 10.
var optionEmoji = []string{"1️⃣", "2️⃣", "3️⃣", "4️⃣", "5️⃣", "6️⃣", "7️⃣", "8️⃣", "9️⃣", "🔟"}

// OptionEmoji returns the reaction for option n (1 to 10), or "".
func OptionEmoji(n int) string {
	if n < 1 || n > len(optionEmoji) {
		return ""
	}
	return optionEmoji[n-1]
}

// OptionFromEmoji returns the option a reaction stands for, accepting the
// keycap digits with or without the variation selector.
func OptionFromEmoji(reaction string) (int, bool) {
	for i, e := range optionEmoji {
		if reaction == e || reaction == strings.ReplaceAll(e, "\uFE0F", "") {
			return i + 1, true
		}
	}
	return 0, false
}

func trimAll(in []string) []string {
	out := make([]string, len(in))
	for i, s := range in {
		out[i] = strings.TrimSpace(s)
	}
	return out
}
