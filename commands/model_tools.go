package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/converse"
	"github.com/jarvis-hmi/jarvis/core/notebook"
	"github.com/jarvis-hmi/jarvis/core/reminder"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// The model's tools: read-only ones over Jarvis's records, and proposal
// ones that draft through the grammar's own proposals.

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
	if tool, ok := t.proposeCommandTool(); ok {
		tools = append(tools, tool)
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

// mayPropose says why this turn may not plan one more proposal made by
// command, the command that makes the same proposal when the asker types
// it (`tw propose`, `card publish`, `remind`): at most maxModelProposals
// in one answer, and the table's own check of command, whose refusal the
// tool gives the model, so that no ✅ is shown that its asker may not
// use. It is "" when the turn may.
func (t *modelTurn) mayPropose(ctx context.Context, command string) (string, error) {
	if len(t.plans) >= maxModelProposals {
		return fmt.Sprintf("at most %d proposals in one answer", maxModelProposals), nil
	}
	h, path, _ := t.p.resolve(strings.Fields(command))
	return refusalText(t.p.mayRun(&Event{Message: t.msg, Ctx: ctx, Proc: t.p, Handler: h, Command: path}))
}

// refusedResult is a proposal tool's answer that it proposed nothing, and
// why, for the model to tell the person.
func refusedResult(why string) (converse.Result, error) {
	return converse.Result{Data: map[string]string{"refused": why}, Source: "jarvis"}, nil
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
func (t *modelTurn) proposeTripwire(ctx context.Context, raw json.RawMessage) (converse.Result, error) {
	c := t.p.features.tripwires
	if why, err := t.mayPropose(ctx, "tw propose"); why != "" || err != nil {
		if err != nil {
			return converse.Result{}, err
		}
		return refusedResult(why)
	}
	var args tripwireArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return refusedResult("the arguments do not match the tool's schema: " + err.Error())
	}
	var param *string
	if args.Param != "" {
		param = &args.Param
	}
	src, problem := c.parseSource(strings.TrimSpace(args.Source), param)
	if problem != "" {
		return refusedResult(problem)
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
		return refusedResult(problem)
	}
	d := tripwire.Draft{Source: src, Condition: cond, Label: core.Truncate(cmp.Or(strings.TrimSpace(args.Label), twRule(src, cond)), tripwire.MaxLabelLength),
		Action: &tripwire.Action{Journal: true, Push: args.Push}}
	cooldown := tripwire.DefaultCooldownSeconds
	if args.Cooldown != "" {
		dur, ok := twParseDuration(args.Cooldown)
		if !ok {
			return refusedResult(fmt.Sprintf("`--cooldown` takes a duration like 30m, 6h or 1d, not %s.", twCode(args.Cooldown)))
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
		return refusedResult(fmt.Sprintf("I can't watch that as I read it: %s.", why))
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
	if why, err := t.mayPropose(ctx, "card publish"); why != "" || err != nil {
		if err != nil {
			return converse.Result{}, err
		}
		return refusedResult(why)
	}
	var args struct {
		Cards []struct {
			Goal       string   `json:"goal"`
			Acceptance []string `json:"acceptance"`
			Priority   string   `json:"priority"`
		} `json:"cards"`
	}
	if err := json.Unmarshal(raw, &args); err != nil {
		return refusedResult("the arguments do not match the tool's schema: " + err.Error())
	}
	if len(args.Cards) == 0 || len(args.Cards) > maxModelCards {
		return refusedResult(fmt.Sprintf("a set holds 1 to %d cards", maxModelCards))
	}
	drafts, err := c.svc.Drafts(ctx, t.msg.Sender)
	if err != nil {
		return converse.Result{}, err
	}
	if len(drafts) > 0 {
		return refusedResult(fmt.Sprintf("the person has %s in their draft already: they publish or drop it first (`%scard show-draft`)",
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
		if err := checkDraft(spec); err != nil {
			return refusedResult(fmt.Sprintf("card %d: %v", i+1, err))
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
	if why, err := t.mayPropose(ctx, "remind"); why != "" || err != nil {
		if err != nil {
			return converse.Result{}, err
		}
		return refusedResult(why)
	}
	var args struct{ What, When string }
	if err := json.Unmarshal(raw, &args); err != nil {
		return refusedResult("the arguments do not match the tool's schema: " + err.Error())
	}
	loc := t.p.zone(&Event{Message: t.msg, Ctx: ctx, Proc: t.p})
	w := intent.Reminder("remind me to "+args.What+" "+args.When, t.p.deps.Clock.Now(), loc)
	if w.Question != "" {
		return refusedResult(w.Question)
	}
	r := reminder.Reminder{Owner: t.msg.Sender, Text: w.What, Due: w.At, Every: reminder.Repeat(w.Every), Zone: loc.String()}
	t.plans = append(t.plans, func(e *Event) error { return c.proposeReminder(e, r, loc) })
	return converse.Result{Data: map[string]string{"proposed": w.What + " at " + w.At.In(loc).Format(time.RFC3339),
		"note": "shown to the person with ✅; nothing is set unless they tap it"}, Source: "jarvis"}, nil
}
