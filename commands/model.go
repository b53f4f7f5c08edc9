package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
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

// ---- tools ----

// object is a JSON Schema object with its properties, the first required
// ones named.
func object(props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(desc string) map[string]any { return map[string]any{"type": "string", "description": desc} }

// tools are what the model may call for this message: read-only tools
// over the features this processor has, and proposal tools that draft
// what the person confirms with ✅.
func (t *modelTurn) tools() []converse.Tool {
	f := t.p.features
	var tools []converse.Tool
	if f.fleet != nil {
		tools = append(tools, t.readTool("fleet_status", "Every agent's status from its heartbeats: presence, mode, MII, missed heartbeats, notes.",
			object(map[string]any{}), core.TrustExternal, "the agents' heartbeats", t.fleetStatus))
		if _, ok := f.fleet.reader.(JournalReader); ok {
			tools = append(tools, t.readTool("agent_journal", "An agent's journal entries in its current cycle, newest last.",
				object(map[string]any{"agent": str("the agent's name")}, "agent"), core.TrustExternal, "", t.agentJournal))
		}
	}
	if f.breakers != nil {
		tools = append(tools, t.readTool("breakers", "Every agent's circuit breaker: closed, open or half-open, and since when.",
			object(map[string]any{}), core.TrustNative, "Jarvis's breakers", t.breakerStatus))
	}
	if f.cards != nil {
		tools = append(tools, t.readTool("cards", "The backlog's cards, most urgent first: id, goal, priority, state.",
			object(map[string]any{"state": str("only cards in this state, e.g. open, blocked, done")}), core.TrustExternal, "the backlog's cards", t.cardList))
	}
	if f.cards != nil {
		tools = append(tools, converse.Tool{Name: "propose_card_set",
			Description: "Draft a set of backlog cards from the discussion, after asking your clarifying questions in the thread. " +
				"The set is shown once; the person publishes it with ✅, all or none. This publishes nothing.",
			Parameters: object(map[string]any{"cards": map[string]any{"type": "array", "minItems": 1, "maxItems": maxModelCards,
				"items": object(map[string]any{
					"goal":       str("what the card achieves, in a sentence"),
					"acceptance": map[string]any{"type": "array", "minItems": 1, "items": map[string]any{"type": "string"}, "description": "the criteria the work is judged by"},
					"priority":   map[string]any{"type": "string", "enum": []string{"P0", "P1", "P2", "P3"}},
				}, "goal", "acceptance", "priority")}}, "cards"),
			Call: t.proposeCardSet})
	}
	if f.approvals != nil {
		tools = append(tools, t.readTool("approvals", "Agents' approval requests waiting for an answer.",
			object(map[string]any{}), core.TrustExternal, "agents' approval requests", t.approvalList))
	}
	if f.reminders != nil {
		tools = append(tools, t.readTool("my_reminders", "The reminders of the person speaking.",
			object(map[string]any{}), core.TrustNative, "the person's reminders", t.reminderList))
	}
	if f.notebook != nil && t.msg.Room.Direct {
		// Tasks are private: only in the person's direct room with Jarvis,
		// where the model's answer shows to them alone.
		tools = append(tools, t.readTool("my_tasks", "The open tasks of the person speaking, with their due dates.",
			object(map[string]any{}), core.TrustNative, "the person's tasks", t.taskList))
	}
	if f.reminders != nil {
		tools = append(tools, converse.Tool{Name: "propose_reminder",
			Description: "Propose a reminder for the person speaking; they set it with ✅. This sets nothing.",
			Parameters: object(map[string]any{
				"what": str("what to remind them of, e.g. call the bank"),
				"when": str("when, as the person would say it: in 20 minutes, at 10, tomorrow at 10, every Monday at 9"),
			}, "what", "when"),
			Call: t.proposeReminder})
	}
	if f.tripwires != nil {
		tools = append(tools, t.readTool("my_tripwires", "The tripwires of the person speaking: id, label, rule, status.",
			object(map[string]any{}), core.TrustNative, "the person's tripwires", t.tripwireList))
		tools = append(tools, converse.Tool{Name: "propose_tripwire",
			Description: "Propose a tripwire: Jarvis watches a source and tells the person when the condition holds. " +
				"This only drafts a proposal the person arms with ✅; it arms nothing. Sources: " + f.tripwires.kindNames() + ".",
			Parameters: object(map[string]any{
				"source":   str("what to watch: a source kind or its alias, e.g. agent.status or GI"),
				"param":    str("the source's parameter when it takes one, e.g. the agent's name"),
				"op":       map[string]any{"type": "string", "enum": []string{"lt", "lte", "gt", "gte", "eq", "neq", "in", "changed"}},
				"value":    str("the value compared with; several separated by commas for in; none for changed"),
				"label":    str("a short label, e.g. BACKUP not ok"),
				"push":     map[string]any{"type": "boolean", "description": "message the person when it trips (otherwise only their journal)"},
				"cooldown": str("the least time between two trips, e.g. 30m, 6h or 1d"),
			}, "source", "op"),
			Call: t.proposeTripwire})
	}
	return tools
}

// readTool wraps a read: the rows it gives go to the model as data, with
// the trust of the text in them.
func (t *modelTurn) readTool(name, desc string, params map[string]any, trust core.Trust, source string,
	read func(ctx context.Context, args json.RawMessage) (any, string, error)) converse.Tool {
	return converse.Tool{Name: name, Description: desc, Parameters: params, Call: func(ctx context.Context, args json.RawMessage) (converse.Result, error) {
		data, src, err := read(ctx, args)
		if err != nil {
			var fe *core.FieldError
			if errors.As(err, &fe) || errors.Is(err, core.ErrNotFound) {
				return converse.Result{Data: map[string]string{"error": err.Error()}, Source: "jarvis"}, nil
			}
			return converse.Result{}, err
		}
		src = cmp.Or(src, source)
		if !trust.AtLeast(core.TrustNative) {
			t.untrusted = appendOnce(t.untrusted, src)
		}
		return converse.Result{Data: data, Trust: trust, Source: src}, nil
	}}
}

func cut(s string) string { return core.Truncate(s, modelTextLimit) }

func (t *modelTurn) fleetStatus(ctx context.Context, _ json.RawMessage) (any, string, error) {
	reports, err := t.p.features.fleet.reader.FleetStatus(ctx)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, r := range reports[:min(len(reports), modelReadLimit)] {
		rows = append(rows, map[string]any{"agent": r.Agent, "presence": r.Presence, "reported": r.Reported, "mode": cut(r.Mode),
			"mii": r.MII, "missed": r.Missed, "last_at": r.LastAt.UTC().Format(time.RFC3339), "notes": cut(r.Notes)})
	}
	return rows, "", nil
}

func (t *modelTurn) agentJournal(ctx context.Context, raw json.RawMessage) (any, string, error) {
	var args struct{ Agent string }
	if err := json.Unmarshal(raw, &args); err != nil || args.Agent == "" {
		return nil, "", core.Invalid("agent", "name the agent")
	}
	reader := t.p.features.fleet.reader
	reports, err := reader.FleetStatus(ctx)
	if err != nil {
		return nil, "", err
	}
	for _, r := range reports {
		if !strings.EqualFold(r.Agent, args.Agent) {
			continue
		}
		source := "journal of agent " + r.Agent
		if r.Cycle == "" {
			return []any{}, source, nil
		}
		page, err := reader.(JournalReader).Journal(ctx, r.Agent, r.Cycle, modelReadLimit, "")
		if err != nil {
			return nil, "", err
		}
		var rows []map[string]any
		for _, j := range page.Entries {
			rows = append(rows, map[string]any{"title": cut(j.Title), "content": cut(j.Content), "at": j.Timestamp.UTC().Format(time.RFC3339)})
		}
		return rows, source, nil
	}
	return nil, "", core.Invalid("agent", "there is no agent %q", args.Agent)
}

func (t *modelTurn) breakerStatus(ctx context.Context, _ json.RawMessage) (any, string, error) {
	all, err := t.p.features.breakers.svc.StatusAll(ctx)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, b := range all[:min(len(all), modelReadLimit)] {
		rows = append(rows, map[string]any{"agent": b.Agent, "state": b.State, "since": b.Since.UTC().Format(time.RFC3339)})
	}
	return rows, "", nil
}

func (t *modelTurn) cardList(ctx context.Context, raw json.RawMessage) (any, string, error) {
	var args struct{ State string }
	json.Unmarshal(raw, &args)
	var f card.Filter
	f.State = card.State(strings.ReplaceAll(strings.ToLower(args.State), "-", "_"))
	if f.State != "" && !f.State.Valid() {
		return nil, "", core.Invalid("state", "is not a card state; one of %s", cardStateNames())
	}
	cards, err := t.p.features.cards.svc.List(ctx, f)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, k := range cards[:min(len(cards), modelReadLimit)] {
		rows = append(rows, map[string]any{"id": k.ID, "goal": cut(k.Spec.Goal), "priority": k.Priority, "state": k.State})
	}
	return rows, "", nil
}

func (t *modelTurn) approvalList(ctx context.Context, _ json.RawMessage) (any, string, error) {
	pending, err := t.p.features.approvals.svc.Pending(ctx)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, a := range pending[:min(len(pending), modelReadLimit)] {
		rows = append(rows, map[string]any{"agent": a.Agent, "action": cut(a.Action), "reason": cut(a.Reason),
			"deadline": a.Deadline.UTC().Format(time.RFC3339)})
	}
	return rows, "", nil
}

func (t *modelTurn) reminderList(ctx context.Context, _ json.RawMessage) (any, string, error) {
	list, err := t.p.features.reminders.svc.List(ctx, t.msg.Sender)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, r := range list[:min(len(list), modelReadLimit)] {
		rows = append(rows, map[string]any{"text": cut(r.Text), "due": r.Due.UTC().Format(time.RFC3339), "repeats": r.Every})
	}
	return rows, "", nil
}

func (t *modelTurn) taskList(ctx context.Context, _ json.RawMessage) (any, string, error) {
	tasks, err := t.p.features.notebook.svc.List(ctx, t.msg.Sender, notebook.Task)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, k := range tasks[:min(len(tasks), modelReadLimit)] {
		row := map[string]any{"id": k.ID, "text": cut(k.Text)}
		if !k.Due.IsZero() {
			row["due"] = k.Due.UTC().Format(time.RFC3339)
		}
		rows = append(rows, row)
	}
	return rows, "", nil
}

func (t *modelTurn) tripwireList(ctx context.Context, _ json.RawMessage) (any, string, error) {
	defs, err := t.p.features.tripwires.tw.List(ctx, t.msg.Sender)
	if err != nil {
		return nil, "", err
	}
	var rows []map[string]any
	for _, d := range defs[:min(len(defs), modelReadLimit)] {
		rows = append(rows, map[string]any{"id": d.ID, "label": cut(d.Label), "rule": twRule(d.Source, d.Condition), "status": d.Status})
	}
	return rows, "", nil
}

// tripwireArgs are propose_tripwire's arguments.
type tripwireArgs struct {
	Source   string `json:"source"`
	Param    string `json:"param"`
	Op       string `json:"op"`
	Value    any    `json:"value"`
	Label    string `json:"label"`
	Push     bool   `json:"push"`
	Cooldown string `json:"cooldown"`
}

// proposeTripwire checks the arguments as `!tw arm` reads its own, with
// the grammar's messages, and plans the proposal: it is made in the
// message's transaction through the grammar's own path (the rationale is
// the conversation, the ✅ arms it), never armed here.
func (t *modelTurn) proposeTripwire(_ context.Context, raw json.RawMessage) (converse.Result, error) {
	c := t.p.features.tripwires
	refused := func(why string) (converse.Result, error) {
		return converse.Result{Data: map[string]string{"refused": why}, Source: "jarvis"}, nil
	}
	if len(t.plans) >= maxModelProposals {
		return refused(fmt.Sprintf("at most %d proposals in one answer", maxModelProposals))
	}
	var args tripwireArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return refused("the arguments do not match the tool's schema: " + err.Error())
	}
	var param *string
	if args.Param != "" {
		param = &args.Param
	}
	src, problem := c.parseSource(strings.TrimSpace(args.Source), param)
	if problem != "" {
		return refused(problem)
	}
	var values []string
	switch v := args.Value.(type) {
	case nil:
	case string:
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				values = append(values, s)
			}
		}
	default:
		values = []string{fmt.Sprint(v)}
	}
	cond, problem := twCondition(args.Op, values)
	if problem != "" {
		return refused(problem)
	}
	d := tripwire.Draft{Source: src, Condition: cond, Label: core.Truncate(cmp.Or(strings.TrimSpace(args.Label), twRule(src, cond)), tripwire.MaxLabelLength),
		Action: &tripwire.Action{Journal: true, Push: args.Push}}
	cooldown := tripwire.DefaultCooldownSeconds
	if args.Cooldown != "" {
		dur, ok := twParseDuration(args.Cooldown)
		if !ok {
			return refused(fmt.Sprintf("`--cooldown` takes a duration like 30m, 6h or 1d, not %s.", twCode(args.Cooldown)))
		}
		cooldown = int(dur / time.Second)
	}
	d.CooldownSeconds = &cooldown
	check := d
	check.Rationale = t.msg.Body
	if err := twCheckProposal(check, c.tw.Sources()); err != nil {
		why, ok := twRefusal(err)
		if !ok {
			return converse.Result{}, err
		}
		return refused(fmt.Sprintf("I can't watch that as I read it: %s.", why))
	}
	untrusted := append([]string(nil), t.untrusted...)
	sentence := t.msg.Body
	t.plans = append(t.plans, func(e *Event) error {
		return c.proposeDraft(e, intent.Watch{Kind: intent.Proposal, Draft: d, Description: d.Label}, d, sentence, untrusted)
	})
	return converse.Result{Data: map[string]string{"proposed": twRule(src, cond),
		"note": "shown to the person with ✅; nothing is armed unless they tap it"}, Source: "jarvis"}, nil
}

// proposeCardSet checks a drafted card set as `!card draft` checks each
// card, with its messages, and plans it: in the message's transaction the
// cards become the person's draft and the set is asked for ✅ as
// `!card publish` asks, published through the same path. A person with a
// draft of their own already is left to finish it.
func (t *modelTurn) proposeCardSet(ctx context.Context, raw json.RawMessage) (converse.Result, error) {
	c := t.p.features.cards
	refused := func(why string) (converse.Result, error) {
		return converse.Result{Data: map[string]string{"refused": why}, Source: "jarvis"}, nil
	}
	if len(t.plans) >= maxModelProposals {
		return refused(fmt.Sprintf("at most %d proposals in one answer", maxModelProposals))
	}
	var args struct {
		Cards []struct {
			Goal       string   `json:"goal"`
			Acceptance []string `json:"acceptance"`
			Priority   string   `json:"priority"`
		} `json:"cards"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return refused("the arguments do not match the tool's schema: " + err.Error())
	}
	if len(args.Cards) == 0 || len(args.Cards) > maxModelCards {
		return refused(fmt.Sprintf("a set holds 1 to %d cards", maxModelCards))
	}
	drafts, err := c.svc.Drafts(ctx, t.msg.Sender)
	if err != nil {
		return converse.Result{}, err
	}
	if len(drafts) > 0 {
		return refused(fmt.Sprintf("the person has %s in their draft already: they publish or drop it first (`%scard show-draft`)",
			core.Plural(len(drafts), "card", "cards"), t.p.cfg.Prefix))
	}
	var specs []card.Spec
	for i, in := range args.Cards {
		spec := card.Spec{Goal: strings.TrimSpace(in.Goal), Priority: card.Priority(strings.ToUpper(strings.TrimSpace(in.Priority)))}
		for _, a := range in.Acceptance {
			if a = strings.TrimSpace(a); a != "" {
				spec.Acceptance = append(spec.Acceptance, a)
			}
		}
		switch {
		case spec.Goal == "":
			return refused(fmt.Sprintf("card %d: the goal is missing: say what the card achieves", i+1))
		case len(spec.Acceptance) == 0:
			return refused(fmt.Sprintf("card %d: `--accept` is missing: give at least one acceptance criterion", i+1))
		case !spec.Priority.Valid():
			return refused(fmt.Sprintf("card %d: `--priority` is missing: give P0, P1, P2 or P3", i+1))
		}
		specs = append(specs, spec)
	}
	t.plans = append(t.plans, func(e *Event) error {
		for _, spec := range specs {
			_, err := c.svc.AddDraft(e.Ctx, e.Sender, spec, e.Trust)
			if err != nil {
				// Nothing of the set stays: the message's changes roll back.
				return fmt.Errorf("draft the model's card set: %w", err)
			}
		}
		return c.publish(e)
	})
	return converse.Result{Data: map[string]any{"drafted": len(specs),
		"note": "shown to the person once; nothing is published unless they tap ✅"}, Source: "jarvis"}, nil
}

// proposeReminder reads the reminder as `!remind` reads "remind me to
// <what> <when>", with its questions for what is missing, and plans the
// proposal; the ✅ sets it.
func (t *modelTurn) proposeReminder(ctx context.Context, raw json.RawMessage) (converse.Result, error) {
	c := t.p.features.reminders
	refused := func(why string) (converse.Result, error) {
		return converse.Result{Data: map[string]string{"refused": why}, Source: "jarvis"}, nil
	}
	if len(t.plans) >= maxModelProposals {
		return refused(fmt.Sprintf("at most %d proposals in one answer", maxModelProposals))
	}
	var args struct{ What, When string }
	if err := json.Unmarshal(raw, &args); err != nil {
		return refused("the arguments do not match the tool's schema: " + err.Error())
	}
	loc := t.p.zone(&Event{Message: t.msg, Ctx: ctx, Proc: t.p})
	w := intent.Reminder("remind me to "+args.What+" "+args.When, t.p.deps.Clock.Now(), loc)
	if w.Question != "" {
		return refused(w.Question)
	}
	r := reminder.Reminder{Owner: t.msg.Sender, Text: w.What, Due: w.At, Every: reminder.Repeat(w.Every), Zone: loc.String()}
	t.plans = append(t.plans, func(e *Event) error { return c.proposeReminder(e, r, loc) })
	return converse.Result{Data: map[string]string{"proposed": w.What + " at " + w.At.In(loc).Format(time.RFC3339),
		"note": "shown to the person with ✅; nothing is set unless they tap it"}, Source: "jarvis"}, nil
}
