package commands

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
)

// Limits of one turn with the model.
const (
	// maxModelProposals is how many proposals one turn may make.
	maxModelProposals = 3
	// modelReadLimit is how many rows a read-only tool gives the model.
	modelReadLimit = 20
	// modelTextLimit cuts each piece of text a tool gives the model.
	modelTextLimit = 500
	// maxModelCards is how many cards one drafted set may hold.
	maxModelCards = 10
	// progressEvery is how often a streamed reply's message is edited.
	progressEvery = 700 * time.Millisecond
)

// JournalReader reads an agent's journal, for the model's journal tool.
type JournalReader interface {
	Journal(ctx context.Context, agent, cycle string, limit int, cursor string) (fleet.JournalPage, error)
}

// modelTurn is one message answered through the model: what it said,
// the proposals its tools drafted (made in the message's transaction,
// through the same paths as the grammar's), and what untrusted text it
// read before proposing.
type modelTurn struct {
	p     *Processor
	msg   Message
	reply converse.Reply
	err   error
	// plans are the proposals to make, in order, each through the
	// grammar's own path.
	plans []func(e *Event) error
	// untrusted names the untrusted text the model read so far.
	untrusted []string
	// draftKey is the message a streamed reply showed in, when it did.
	draftKey string
}

// wantsModel says whether a message goes to the model: one addressed to
// Jarvis, when a model is configured, that the grammar does not
// understand (or answers only with a question, as it does for a worry:
// "I'm nervous about the backups this week").
func (p *Processor) wantsModel(msg Message) bool {
	if p.features.model == nil || !msg.Addressed || msg.Relay {
		return false
	}
	if strings.TrimFunc(msg.Body, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsPunct(r) }) == "" {
		return false
	}
	if !msg.Trust.AtLeast(core.TrustNative) && core.LooksLikeInstruction(msg.Body) {
		return false
	}
	for _, in := range append([]Intent{p.addressedIntent}, p.intents...) {
		name, _, ok := in(msg.Body)
		if !ok {
			continue
		}
		if name == "tw propose" && p.features.tripwires != nil && p.features.tripwires.asks(msg.Body) {
			continue
		}
		return false
	}
	return true
}

// runModel hands the message to the model, outside any transaction: the
// conversation as quoted data with each excerpt's trust, and the tools.
// What the tools propose is made later, in the message's transaction.
func (p *Processor) runModel(ctx context.Context, msg Message) *modelTurn {
	t := &modelTurn{p: p, msg: msg}
	req := converse.Request{
		Person:  msg.Sender,
		Message: converse.Quote{From: msg.Sender, Trust: cmp.Or(msg.Trust, core.TrustNative), At: msg.Sent, Text: msg.Body},
		Tools:   t.tools(),
	}
	if ex := p.deps.Excerpts; ex != nil {
		kept, err := ex.Excerpts(ctx, msg.RoomID, msg.Sender, core.ExcerptKeep)
		if err != nil {
			t.err = fmt.Errorf("read the conversation: %w", err)
			return t
		}
		// What the model answered this person before, so that it sees the
		// questions it asked.
		answers, err := ex.Excerpts(ctx, msg.RoomID, answersOf(msg.Sender), core.ExcerptKeep)
		if err != nil {
			t.err = fmt.Errorf("read the conversation: %w", err)
			return t
		}
		kept = append(kept, answers...)
		slices.SortStableFunc(kept, func(a, b core.Excerpt) int { return a.At.Compare(b.At) })
		for _, x := range kept {
			if x.EventID == msg.EventID || (x.Held && x.RatifiedBy == "") {
				continue
			}
			trust := cmp.Or(x.Trust, core.TrustNative)
			from, source := x.Sender, "messages written through a bridge"
			if x.Sender == answersOf(msg.Sender) {
				from, source = "jarvis (your earlier answer)", "my earlier answer, written after reading such text"
			}
			if !trust.AtLeast(core.TrustNative) {
				t.untrusted = appendOnce(t.untrusted, source)
			}
			req.Conversation = append(req.Conversation, converse.Quote{From: from, Trust: trust, At: x.At, Text: x.Body})
		}
	}
	req.Progress = t.progress(ctx)
	t.reply, t.err = p.features.model.Converse(ctx, req)
	if t.err != nil {
		zerolog.Ctx(ctx).Warn().Err(t.err).Msg("The model was not used; the grammar answers")
	}
	return t
}

// progress shows a streamed reply while it comes: a message, edited as
// more text arrives (at most every progressEvery), each through the
// outbox in a transaction of its own.
func (t *modelTurn) progress(ctx context.Context) func(string) {
	var last time.Time
	edits := 0
	return func(text string) {
		now := time.Now()
		if t.draftKey != "" && now.Sub(last) < progressEvery {
			return
		}
		last = now
		n := core.Notice{RoomID: t.msg.RoomID, Kind: core.NoticeMessage, Body: modelText(text) + " …", Urgent: true}
		if t.draftKey == "" {
			n.Key, n.TargetEvent, n.ThreadRoot = "model:"+t.msg.EventID, t.msg.EventID, t.msg.ThreadRoot
		} else {
			edits++
			n.Key, n.Kind, n.Target = fmt.Sprintf("model:%s:%d", t.msg.EventID, edits), core.NoticeEdit, t.draftKey
		}
		err := t.p.deps.Tx.InTx(ctx, func(ctx context.Context) error { return t.p.deps.Outbox.Enqueue(ctx, n) })
		if err != nil && !errors.Is(err, core.ErrDuplicate) {
			zerolog.Ctx(ctx).Warn().Err(err).Msg("Failed to show a streamed reply's progress")
			return
		}
		if t.draftKey == "" {
			t.draftKey = n.Key
		}
	}
}

// answer answers the message in its transaction: the model's reply and
// its proposals; or, when the model was not used, the grammar's answer
// and why the model was not used.
func (t *modelTurn) answer(e *Event) error {
	if t.err != nil {
		reason := fallbackReason(t.err)
		metrics.ModelFallbacks.WithLabelValues(reason).Inc()
		if err := t.p.grammar(e, t.msg); err != nil {
			return err
		}
		t.send(e, fallbackText(t.err))
		return nil
	}
	for _, plan := range t.plans {
		if err := plan(e); err != nil {
			return err
		}
	}
	if err := t.remember(e); err != nil {
		return err
	}
	text := modelText(t.reply.Text)
	if text == "" && len(t.plans) == 0 {
		text = "I have nothing to add."
	}
	if t.reply.Warning != "" {
		text = strings.TrimSpace(text + "\n\n_" + core.EscapeMarkdown(t.reply.Warning) + "_")
	}
	if text != "" {
		t.send(e, text)
	}
	return nil
}

// answersOf is who the model's answers to person are kept under, beside
// the person's own messages: never a Matrix ID.
func answersOf(person string) string { return "jarvis answering " + person }

// remember keeps the model's answer as an excerpt, so that its next turn
// sees the questions it asked; it counts as external when the model read
// untrusted text before answering.
func (t *modelTurn) remember(e *Event) error {
	ex := t.p.deps.Excerpts
	text := strings.TrimSpace(t.reply.Text)
	if ex == nil || text == "" {
		return nil
	}
	trust := core.TrustNative
	if len(t.untrusted) > 0 {
		trust = core.TrustExternal
	}
	at := t.msg.Sent
	if at.IsZero() {
		at = t.p.deps.Clock.Now()
	}
	_, err := ex.AddExcerpt(e.Ctx, core.Excerpt{RoomID: t.msg.RoomID, Sender: answersOf(t.msg.Sender), EventID: t.msg.EventID + ":answer",
		Body: core.Truncate(text, modelTextLimit*4), Trust: trust, At: at.Add(time.Millisecond)})
	return err
}

// send says text: in the message a streamed reply showed in, or as a
// reply.
func (t *modelTurn) send(e *Event, text string) {
	if t.draftKey == "" {
		e.Reply("%s", text)
		return
	}
	e.Send(core.Notice{Key: "model:" + t.msg.EventID + ":final", RoomID: t.msg.RoomID, Kind: core.NoticeEdit, Target: t.draftKey, Body: text})
	t.draftKey = ""
}

// fallbackReason is the metric's label for why the model was not used.
func fallbackReason(err error) string {
	switch {
	case errors.Is(err, converse.ErrSlow):
		return "slow"
	case errors.Is(err, converse.ErrOverBudget):
		return "budget"
	case errors.Is(err, errCutOff):
		return "restart"
	}
	return "down"
}

// fallbackText says the model was not used, and why, naming the key that
// sets the limit: never a host, an address or an error's text.
func fallbackText(err error) string {
	var why string
	switch {
	case errors.Is(err, converse.ErrSlow):
		why = "it did not answer within model.timeout"
	case errors.Is(err, converse.ErrOverBudget):
		why = "today's model budget is spent (" + budgetKey(err) + ")"
	case errors.Is(err, errCutOff):
		why = "its answer was cut off by a restart"
	default:
		why = "it could not be reached"
	}
	return "_(I answered without my language model: " + why + ".)_"
}

func budgetKey(err error) string {
	if strings.Contains(err.Error(), "model.budget.person_tokens") {
		return "model.budget.person_tokens"
	}
	return "model.budget.workspace_tokens"
}

// modelText is the model's reply as a notice shows it: text the model
// wrote, which untrusted text may have shaped, so it goes through the
// renderer for untrusted text, line by line.
func modelText(s string) string {
	var lines []string
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		lines = append(lines, core.EscapeMarkdown(line))
	}
	return strings.TrimSpace(strings.Join(lines, "\n"))
}

// untrustedMark is the line a proposal carries when a model proposed it
// after reading text Jarvis does not trust.
func untrustedMark(sources []string) string {
	return "⚠️ Proposed after reading text I don't trust (" + core.EscapeMarkdown(strings.Join(sources, "; ")) +
		"): tap ✅ only if you want this yourself."
}

func appendOnce(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// grammar answers a message with the intents: the first that
// understands it runs its command; an addressed message nothing
// understood gets what Jarvis can do.
func (p *Processor) grammar(e *Event, msg Message) error {
	intents := p.intents
	if msg.Addressed {
		intents = append([]Intent{p.addressedIntent}, intents...)
	}
	for _, intent := range intents {
		name, args, ok := intent(msg.Body)
		if !ok {
			continue
		}
		h, path, rest := p.resolve(append(strings.Fields(name), args...))
		e.Handler, e.Command, e.Args, e.RawArgs = h, path, rest, strings.Join(rest, " ")
		return p.run(e)
	}
	if msg.Addressed {
		p.notUnderstood(e, false)
	}
	return nil
}
