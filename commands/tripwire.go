package commands

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// DefaultProposalTTL is how long a tripwire proposed in chat waits for the
// proposer's ✅ when the configuration does not say.
const DefaultProposalTTL = 24 * time.Hour

const (
	confirmTripwire = "tripwire"
	// proposalContext is how many of the sender's earlier messages a
	// proposal quotes in its rationale, and proposalWindow how far back
	// they may go: the conversation that led to it, not last week's.
	proposalContext = 3
	proposalWindow  = 30 * time.Minute
	// Quoted messages are cut to these lengths, so the sentence and some
	// context always fit in core.MaxRationaleLength.
	quotedSentence = 1000
	quotedEarlier  = 400
	// Limits of `!tw history` and of one look at the journal.
	defaultTripHistory = 10
	maxTripHistory     = 50
	journalPageSize    = 20
)

// tripwireCommands is what the `!tw` verbs, the proposals made from plain
// sentences and their confirmations act on.
type tripwireCommands struct {
	tw     *tripwire.Service
	agents func() []string
}

// handlers are the `!tw` verbs. Every verb acts in the sender's own
// scope: nobody sees or changes another person's tripwires.
func (c *tripwireCommands) handlers() []*Handler {
	return []*Handler{{
		Name:    "tw",
		Aliases: []string{"tripwire", "tripwires"},
		Help:    "Your tripwires: things Jarvis watches for you, noted in your journal and, if you like, messaged to you.",
		Subcommands: []*Handler{
			{Name: "list", Aliases: []string{"ls"}, Help: "Your tripwires, one line each.", Func: c.list},
			{Name: "show", Args: "<id>", Help: "One tripwire in full: rule, status, what a trip does, why you armed it.", Func: c.show},
			{Name: "arm", Args: `<source> <op> [value] --because "…" [--label "…"] [--push|--urgent] [--cooldown 6h] [--param P]`,
				Help: "Arm a tripwire. op is lt lte gt gte eq neq in changed (or < <= > >= = !=); without --push it is only journaled; --urgent pushes even in your quiet hours.",
				Func: c.arm},
			{Name: "propose", Args: "<sentence>", Help: `Read a sentence like "tell me when GI drops below 0.70" and propose the tripwire; saying it in chat does the same.`,
				Func: c.propose},
			{Name: "disable", Args: "<id>", Help: "Stop watching it until you enable it again.", Func: c.disable},
			{Name: "enable", Args: "<id>", Help: "Watch a disabled tripwire again.", Func: c.enable},
			{Name: "delete", Aliases: []string{"rm"}, Args: "<id>", Help: "Delete it; its past trips stay in its history and your journal.", Func: c.remove},
			{Name: "push", Args: "<id> on|off", Help: "on: message you when it trips. off: only note it in your journal.", Func: c.push},
			{Name: "cooldown", Args: "<id> <duration>", Help: "The least time between two trips, e.g. 30m, 6h or 1d (at most 30d).", Func: c.cooldown},
			{Name: "chart", Args: "<id> [24h|7d|30d]", Help: "A chart of what it watches over the last day (or 7 or 30), its threshold and its last trip.", Func: c.chart},
			{Name: "history", Args: "<id> [N]", Help: fmt.Sprintf("Its latest N trips (default %d, at most %d), oldest first.", defaultTripHistory, maxTripHistory), Func: c.history},
			{Name: "journal", Help: "What Jarvis noticed since you last looked; then it counts as read.", Func: c.journal},
			{Name: "templates", Help: "Starter tripwires you can arm with one command.", Func: c.templates},
			{Name: "template", Args: "<N> [param]", Help: "Arm starter template N from `tw templates`.", Func: c.template},
			{Name: "release", Args: "<id>", Help: "Re-arm a quarantined tripwire once you have looked at why it was stopped.", Func: c.release},
			{Name: "token", Args: "[label]", Help: "A personal API token for /api/tripwires, shown once, only in our direct chat; `tw token feed`, `tw token list`, `tw token revoke <id>`.", Func: c.token,
				Subcommands: []*Handler{
					{Name: "feed", Help: "A token that reads your calendar feed (reminders and tasks) and nothing else, shown once, only in our direct chat.", Func: c.tokenFeed},
					{Name: "list", Help: "Your API tokens (never their secret).", Func: c.tokenList},
					{Name: "revoke", Args: "<token id>", Help: "Turn a token off; requests with it fail from then on.", Func: c.tokenRevoke},
				}},
		},
	}}
}

// ---- reading tripwires ----

func (c *tripwireCommands) list(e *Event) error {
	prefix := e.Proc.Prefix()
	defs, err := c.tw.List(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	if len(defs) == 0 {
		e.Reply("You have no tripwires yet.\n"+
			"Say what to watch (\"tell me when GI drops below 0.70\"), arm one with `%stw arm`, or pick a starter from `%stw templates`.", prefix, prefix)
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Your tripwires** (%d)\n\n", len(defs))
	for _, d := range defs {
		traits := []string{string(d.Status)}
		if d.Action.Push {
			traits = append(traits, "push")
		}
		if d.Action.Urgent {
			traits = append(traits, "urgent")
		}
		fmt.Fprintf(&b, "- `%s` **%s**: %s (%s)\n", d.ID, core.EscapeMarkdown(d.Label), twCode(twRule(d.Source, d.Condition)), strings.Join(traits, ", "))
	}
	fmt.Fprintf(&b, "\n`%stw show <id>` shows one in full.", prefix)
	e.Reply("%s", b.String())
	return nil
}

func (c *tripwireCommands) show(e *Event) error {
	prefix := e.Proc.Prefix()
	id, ok := c.oneID(e, "show")
	if !ok {
		return nil
	}
	d, err := c.tw.Get(e.Ctx, e.Sender, id)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** `%s`\n\n", core.EscapeMarkdown(d.Label), d.ID)
	fmt.Fprintf(&b, "- Watching: %s\n", twCode(twRule(d.Source, d.Condition)))
	fmt.Fprintf(&b, "- Status: %s\n", twStatus(prefix, d))
	fmt.Fprintf(&b, "- When it trips: %s\n", twAction(prefix, d.Action))
	fmt.Fprintf(&b, "- Cooldown: %s between trips\n", twDuration(d.CooldownSeconds))
	fmt.Fprintf(&b, "- Armed: %s\n", breakerTime(d.CreatedAt))
	fmt.Fprintf(&b, "- Last tripped: %s; last cleared: %s\n", twTimeOrNever(d.LastTrippedAt), twTimeOrNever(d.LastResetAt))
	if d.LastError != "" {
		fmt.Fprintf(&b, "- Its source could not be read last time: %s\n", core.EscapeMarkdown(d.LastError))
	}
	if line, err := c.skipLine(e, d.ID); err != nil {
		return err
	} else if line != "" {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	fmt.Fprintf(&b, "- Its reason came from: %s\n", d.SourceTrust.Describe())
	fmt.Fprintf(&b, "\n**Why you armed it:**\n%s\n\n`%stw history %s` shows its trips.", twMDLines(d.Rationale), prefix, d.ID)
	e.Reply("%s", b.String())
	return c.sendChart(e, d.ID, history.ChartSpan)
}

// skipLine says how often the evaluator skipped the tripwire since
// midnight in the sender's zone, by reason: "Skipped 14 times today:
// cooldown 12, source error 2"; empty when it skipped none.
func (c *tripwireCommands) skipLine(e *Event, id string) (string, error) {
	now := e.Proc.deps.Clock.Now().In(e.Proc.zone(e))
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, now.Location())
	sum, err := c.tw.Skips(e.Ctx, e.Sender, id, midnight, 1)
	if err != nil || sum.Total == 0 {
		return "", err
	}
	var parts []string
	for _, r := range tripwire.SkipLogReasons {
		if n := sum.Counts[r]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", strings.ReplaceAll(string(r), "-", " "), n))
		}
	}
	times := core.Plural(sum.Total, "time", "times")
	if sum.Truncated {
		times = "at least " + times
	}
	return fmt.Sprintf("Skipped %s today: %s", times, strings.Join(parts, ", ")), nil
}

// twChartSpans are the spans `!tw chart` draws.
var twChartSpans = map[string]time.Duration{"24h": 24 * time.Hour, "1d": 24 * time.Hour, "7d": 7 * 24 * time.Hour, "30d": 30 * 24 * time.Hour}

func (c *tripwireCommands) chart(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) == 0 || len(e.Args) > 2 {
		e.Reply("Which tripwire, over how long? `%stw chart <id> [24h|7d|30d]`", prefix)
		return nil
	}
	span := 24 * time.Hour
	if len(e.Args) == 2 {
		var ok bool
		if span, ok = twChartSpans[strings.ToLower(e.Args[1])]; !ok {
			e.Reply("I draw the last 24h, 7d or 30d, not %s.", twCode(e.Args[1]))
			return nil
		}
	}
	return c.sendChart(e, e.Args[0], span)
}

// sendChart sends, in reply to e, the chart of the tripwire id over the
// last span, as an image the sender draws.
func (c *tripwireCommands) sendChart(e *Event, id string, span time.Duration) error {
	request, err := c.tw.Chart(e.Ctx, e.Sender, id, span)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeImage, Body: request, TargetEvent: e.EventID})
	return nil
}

func (c *tripwireCommands) history(e *Event) error {
	prefix := e.Proc.Prefix()
	n := defaultTripHistory
	if len(e.Args) == 2 {
		v, err := strconv.Atoi(e.Args[1])
		if err != nil || v < 1 || v > maxTripHistory {
			e.Reply("N must be a number from 1 to %d: `%stw history <id> [N]`.", maxTripHistory, prefix)
			return nil
		}
		n = v
	}
	if len(e.Args) == 0 || len(e.Args) > 2 {
		e.Reply("Which tripwire? `%stw history <id> [N]`; `%stw list` shows your tripwires with their IDs.", prefix, prefix)
		return nil
	}
	id := strings.Trim(e.Args[0], "`")
	events, err := c.tw.History(e.Ctx, e.Sender, id, n)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	if len(events) == 0 {
		e.Reply("%s has not tripped yet. `%stw show %s` shows what it watches.", twCode(id), prefix, strings.ReplaceAll(id, "`", "'"))
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Trips of %s** %s, oldest first\n\n", core.EscapeMarkdown(events[len(events)-1].Label), twCode(id))
	for _, ev := range events {
		fmt.Fprintf(&b, "- %s: %s\n", breakerTime(ev.Timestamp), core.EscapeMarkdown(ev.Summary))
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
	return nil
}

// journal shows what was noticed since the citizen last looked, and marks
// it read.
func (c *tripwireCommands) journal(e *Event) error {
	prefix := e.Proc.Prefix()
	page, err := c.tw.Journal(e.Ctx, e.Sender, tripwire.JournalQuery{UnreadOnly: true, MarkRead: true, Limit: journalPageSize})
	if err != nil {
		return err
	}
	if len(page.Entries) == 0 {
		e.Reply("Nothing new since you last looked. `%stw history <id>` shows a tripwire's past trips.", prefix)
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "**Since you last looked**: %s\n\n", core.Plural(page.Unread, "trip", "trips"))
	for _, en := range page.Entries {
		fmt.Fprintf(&b, "- %s **%s**: %s\n", breakerTime(en.Timestamp), core.EscapeMarkdown(en.Label), core.EscapeMarkdown(en.Summary))
	}
	if more := page.Unread - len(page.Entries); more > 0 {
		fmt.Fprintf(&b, "\n%s more: say `%stw journal` again.", core.Plural(more, "trip", "trips"), prefix)
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
	return nil
}

// templates offers the starter templates whose sources this Jarvis
// reads, each as a proposal of its own with ✅ on it: one tap arms it,
// through the same confirmation as a proposal from a sentence, and
// nothing is armed until then. A template about one agent, while no agent
// reports yet, is listed to arm by name.
func (c *tripwireCommands) templates(e *Event) error {
	prefix := e.Proc.Prefix()
	starters := c.tw.Starters(e.Sender, c.agents())
	if len(starters) == 0 {
		e.Reply("No starter template fits the sources this Jarvis can read. `%stw arm` arms your own.", prefix)
		return nil
	}
	var b strings.Builder
	b.WriteString("**Starter tripwires**: nothing is armed until you tap ✅ on one.\n")
	for i, st := range starters {
		if st.Draft == nil {
			fmt.Fprintf(&b, "\n%d. **%s**: no agent reports yet; `%stw template %d <%s>` arms it for one.", i+1,
				core.EscapeMarkdown(st.Template.Label), prefix, i+1, st.Template.Param)
		}
	}
	e.Reply("%s", strings.TrimSpace(b.String()))
	for i, st := range starters {
		if st.Draft == nil {
			continue
		}
		payload, err := json.Marshal(st.Draft)
		if err != nil {
			return fmt.Errorf("encode starter %s: %w", st.Template.ID, err)
		}
		def := twProposed(*st.Draft)
		text := fmt.Sprintf("%d. **%s**: %s\nWhen it trips: %s; at most once every %s.\n_%s_", i+1, core.EscapeMarkdown(def.Label),
			twCode(twRule(def.Source, def.Condition)), twAction(prefix, def.Action), twDuration(def.CooldownSeconds),
			core.EscapeMarkdown(def.Rationale))
		if len(st.Left) > 0 {
			text += fmt.Sprintf("\nIt watches the first %d agents; `%stw template %d <%s>` arms it for another one.",
				tripwire.MaxSubConditions, prefix, i+1, st.Template.Param)
		}
		if err := e.AskConfirmPart(confirmTripwire, st.Template.ID, string(payload), text); err != nil {
			return err
		}
	}
	return nil
}

// ---- arming ----

func (c *tripwireCommands) arm(e *Event) error {
	d, problem := c.parseArm(e.RawArgs, e.Proc.Prefix())
	if problem != "" {
		e.Reply("Not armed: %s", problem)
		return nil
	}
	d.SourceTrust = cmp.Or(e.Trust, core.TrustNative)
	def, err := c.tw.Arm(e.Ctx, e.Sender, d)
	if err != nil {
		return c.refused(e, "Not armed", "", err)
	}
	e.Reply("%s", twArmed(e.Proc.Prefix(), def)+twBacktestSuffix(c.backtest(e, def)))
	return nil
}

// twBacktestSuffix puts a backtest on a line of its own after a reply.
func twBacktestSuffix(bt string) string {
	if bt == "" {
		return ""
	}
	return "\n" + bt
}

func (c *tripwireCommands) template(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) == 0 {
		e.Reply("Which template? `%stw template <N> [param]`; `%stw templates` lists them.", prefix, prefix)
		return nil
	}
	list := c.tw.Templates()
	id := e.Args[0]
	if n, err := strconv.Atoi(id); err == nil {
		if n < 1 || n > len(list) {
			e.Reply("There is no template %d: `%stw templates` lists %d.", n, prefix, len(list))
			return nil
		}
		id = list[n-1].ID
	}
	param := strings.TrimSpace(rawAfter(e.RawArgs, 1))
	def, err := c.tw.ArmTemplate(e.Ctx, e.Sender, id, param)
	switch {
	case errors.Is(err, core.ErrNotFound):
		e.Reply("There is no template %s: `%stw templates` lists them.", twCode(id), prefix)
		return nil
	case twField(err) == "param":
		for _, t := range list {
			if t.ID == id {
				e.Reply("Not armed: %s needs the %s. Give it after the number: `%stw template %s <%s>`.",
					core.EscapeMarkdown(t.Label), core.EscapeMarkdown(t.Param), prefix, e.Args[0], t.Param)
				return nil
			}
		}
	}
	if err != nil {
		return c.refused(e, "Not armed", "", err)
	}
	e.Reply("%s", twArmed(prefix, def))
	return nil
}

// parseArm reads `!tw arm`'s arguments into a draft; problem says what is
// wrong and what to type instead.
func (c *tripwireCommands) parseArm(raw, prefix string) (d tripwire.Draft, problem string) {
	usage := c.armExample(prefix)
	words, err := splitArgs(raw)
	if err != nil {
		return d, err.Error() + ". " + usage
	}
	var pos []string
	var label, because, param, cooldown *string
	push, urgent := false, false
	for i := 0; i < len(words); i++ {
		name, isFlag := flagName(words[i])
		if !isFlag {
			pos = append(pos, words[i].text)
			continue
		}
		var dst **string
		switch name {
		case "push":
			push = true
			if i+1 < len(words) && !words[i+1].quoted {
				if on, ok := twOnOff(words[i+1].text); ok {
					push = on
					i++
				}
			}
			continue
		case "urgent":
			push, urgent = true, true
			continue
		case "label":
			dst = &label
		case "because", "rationale", "why", "reason":
			dst = &because
		case "param":
			dst = &param
		case "cooldown":
			dst = &cooldown
		default:
			return d, fmt.Sprintf("%s is not a flag of `tw arm`; it takes --because, --label, --push, --urgent, --cooldown and --param.", twCode(words[i].text))
		}
		if i+1 == len(words) {
			return d, fmt.Sprintf("`--%s` needs a value, e.g. %s.", name, twFlagSample(name))
		}
		i++
		v := words[i].text
		*dst = &v
	}
	if len(pos) == 0 {
		return d, "say what to watch and when. " + usage
	}
	src, problem := c.parseSource(pos[0], param)
	if problem != "" {
		return d, problem
	}
	if len(pos) == 1 {
		return d, fmt.Sprintf("what should %s be compared with? Give an op and a value. %s", twCode(src.String()), usage)
	}
	cond, problem := twCondition(pos[1], pos[2:])
	if problem != "" {
		return d, problem + " " + usage
	}
	if because == nil || strings.TrimSpace(*because) == "" {
		return d, "say why with --because \"…\": a tripwire keeps its reason, so that when it fires you remember why you armed it. " + usage
	}
	d = tripwire.Draft{Source: src, Condition: cond, Rationale: *because,
		Label: core.Truncate(twRule(src, cond), tripwire.MaxLabelLength), Action: &tripwire.Action{Journal: true, Push: push, Urgent: urgent}}
	if label != nil {
		d.Label = *label
	}
	if cooldown != nil {
		dur, ok := twParseDuration(*cooldown)
		if !ok {
			return d, fmt.Sprintf("`--cooldown` takes a duration like 30m, 6h or 1d, not %s.", twCode(*cooldown))
		}
		secs := int(dur / time.Second)
		d.CooldownSeconds = &secs
	}
	return d, ""
}

// parseSource reads "integrity.gi", an alias ("GI"), or "kind[param]".
func (c *tripwireCommands) parseSource(word string, param *string) (core.SourceRef, string) {
	name, inner := word, ""
	if open := strings.IndexByte(word, '['); open > 0 && strings.HasSuffix(word, "]") {
		name, inner = word[:open], word[open+1:len(word)-1]
	}
	k, ok := c.tw.Sources().Match(name)
	if !ok {
		return core.SourceRef{}, fmt.Sprintf("I know no source %s. I can watch: %s.", twCode(name), c.kindNames())
	}
	ref := core.SourceRef{Kind: k.Kind, Param: inner}
	if param != nil {
		if inner != "" && inner != *param {
			return ref, fmt.Sprintf("give %s's param once: in brackets or with --param, not both.", twCode(k.Kind))
		}
		ref.Param = *param
	}
	if k.Param != "" && !k.ParamOptional && strings.TrimSpace(ref.Param) == "" {
		return ref, fmt.Sprintf("%s needs a param (%s): write %s or add --param.", twCode(k.Kind), core.EscapeMarkdown(k.Param), twCode(k.Kind+"[…]"))
	}
	return ref, ""
}

// twOps are the ops `!tw arm` takes, by name and by symbol.
var twOps = map[string]tripwire.Op{
	"lt": tripwire.OpLT, "<": tripwire.OpLT, "below": tripwire.OpLT,
	"lte": tripwire.OpLTE, "<=": tripwire.OpLTE, "≤": tripwire.OpLTE,
	"gt": tripwire.OpGT, ">": tripwire.OpGT, "above": tripwire.OpGT,
	"gte": tripwire.OpGTE, ">=": tripwire.OpGTE, "≥": tripwire.OpGTE,
	"eq": tripwire.OpEQ, "=": tripwire.OpEQ, "==": tripwire.OpEQ, "is": tripwire.OpEQ,
	"neq": tripwire.OpNEQ, "!=": tripwire.OpNEQ, "≠": tripwire.OpNEQ,
	"in": tripwire.OpIn, "changed": tripwire.OpChanged, "changes": tripwire.OpChanged,
}

// twCondition reads an op and the values after it.
func twCondition(opWord string, values []string) (tripwire.Condition, string) {
	op, ok := twOps[strings.ToLower(opWord)]
	if !ok {
		return tripwire.Condition{}, fmt.Sprintf("%s is not an op: use lt, lte, gt, gte, eq, neq, in or changed (or <, <=, >, >=, =, !=).", twCode(opWord))
	}
	switch op {
	case tripwire.OpChanged:
		if len(values) > 0 {
			return tripwire.Condition{}, fmt.Sprintf("changed takes no value, and %s came after it; put a label in --label \"…\".", twCode(values[0]))
		}
		return tripwire.Condition{Op: op}, ""
	case tripwire.OpIn:
		var list []any
		for _, v := range values {
			for _, part := range strings.Split(v, ",") {
				if part = strings.TrimSpace(part); part != "" {
					list = append(list, twScalar(part))
				}
			}
		}
		if len(list) == 0 {
			return tripwire.Condition{}, "in needs values, e.g. `in open,half-open`."
		}
		return tripwire.Condition{Op: op, Threshold: list}, ""
	}
	switch {
	case len(values) == 0:
		return tripwire.Condition{}, fmt.Sprintf("%s needs a value after it.", twCode(opWord))
	case len(values) > 1:
		return tripwire.Condition{}, fmt.Sprintf("I read one value, %s, and then %s; put a label in --label \"…\".", twCode(values[0]), twCode(values[1]))
	}
	v := twScalar(values[0])
	if _, num := v.(float64); !num && op != tripwire.OpEQ && op != tripwire.OpNEQ {
		return tripwire.Condition{}, fmt.Sprintf("%s needs a number, not %s.", twCode(opWord), twCode(values[0]))
	}
	return tripwire.Condition{Op: op, Threshold: v}, ""
}

// twScalar reads a value as a number, a boolean, or else text.
func twScalar(s string) any {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
		return f
	}
	switch strings.ToLower(s) {
	case "true":
		return true
	case "false":
		return false
	}
	return s
}

// armExample is a `!tw arm` that works here, on integrity.gi when it is
// registered.
func (c *tripwireCommands) armExample(prefix string) string {
	kind := "integrity.gi"
	if _, ok := c.tw.Sources().Lookup(kind); !ok {
		for _, k := range c.tw.Sources().Kinds() {
			kind = k.Kind
			if k.Param == "" {
				break
			}
		}
	}
	return fmt.Sprintf("For example: `%stw arm %s lt 0.70 --because \"the substrate degrades\" --push`", prefix, kind)
}

func twFlagSample(name string) string {
	switch name {
	case "label":
		return `--label "GI low"`
	case "cooldown":
		return "--cooldown 6h"
	case "param":
		return "--param EVE"
	}
	return `--because "I want to know before the Seal"`
}

// ---- conversational arming ----

// intent recognises a request to watch something in a plain sentence; it
// becomes `tw propose <sentence>`.
func (c *tripwireCommands) intent(text string) (string, []string, bool) {
	if intent.Parse(text, c.tw.Sources(), c.agents()).Kind == intent.None {
		return "", nil, false
	}
	return "tw propose", []string{text}, true
}

// asks says whether the grammar reads text as a request to watch
// something it can only answer with a question ("What should I watch?"),
// as it does for a worry.
func (c *tripwireCommands) asks(text string) bool {
	return intent.Parse(text, c.tw.Sources(), c.agents()).Kind == intent.Question
}

// propose answers a sentence: a proposal to confirm with ✅, or a
// question when Jarvis needs to know more.
func (c *tripwireCommands) propose(e *Event) error {
	prefix := e.Proc.Prefix()
	sentence := strings.TrimSpace(e.RawArgs)
	reg := c.tw.Sources()
	w := intent.Parse(sentence, reg, c.agents())
	switch w.Kind {
	case intent.None:
		e.Reply("I don't read that as something to watch. Say it like \"tell me when GI drops below 0.70\", or arm one exactly with `%stw arm`.\n\n%s",
			prefix, c.watchable())
		return nil
	case intent.Question:
		e.Reply("%s", c.clarify(e, w.Question))
		return nil
	}
	d := w.Draft
	if w.Mine && d.Source.Param == "" {
		if k, ok := reg.Lookup(d.Source.Kind); ok && k.Param != "" {
			d.Source.Param = e.Sender
		}
	}
	return c.proposeDraft(e, w, d, sentence, nil)
}

// proposeDraft asks the person to confirm a draft with ✅: its rationale
// is the conversation that led to it, sentence last. The grammar and the
// model's proposal tool both end here, so that the same request makes the
// same proposal. untrusted names the text Jarvis does not trust that a
// model read before proposing it: the proposal says so, and its rationale
// counts as external.
func (c *tripwireCommands) proposeDraft(e *Event, w intent.Watch, d tripwire.Draft, sentence string, untrusted []string) error {
	var err error
	if d.Rationale, d.SourceTrust, err = c.rationale(e, sentence); err != nil {
		return err
	}
	if len(untrusted) > 0 {
		d.SourceTrust = core.Derive(d.SourceTrust, core.TrustExternal)
	}
	if err := twCheckProposal(d, c.tw.Sources()); err != nil {
		why, ok := twRefusal(err)
		if !ok {
			return err
		}
		e.Reply("%s", c.clarify(e, fmt.Sprintf("I can't watch that as I read it: %s.", why)))
		return nil
	}
	payload, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode tripwire proposal: %w", err)
	}
	text := c.proposalText(e, w, d)
	if len(untrusted) > 0 {
		text += "\n\n" + untrustedMark(untrusted)
	}
	return e.AskConfirm(confirmTripwire, string(payload), text)
}

// twCheckProposal validates a draft the way TripwireService.Arm does, so
// that nothing is proposed that a ✅ could not arm.
func twCheckProposal(d tripwire.Draft, reg *core.SourceRegistry) error {
	return twProposed(d).Validate(reg)
}

// twProposed is the tripwire a ✅ on a proposal would arm.
func twProposed(d tripwire.Draft) tripwire.Definition {
	def := tripwire.Definition{Label: d.Label, Rationale: d.Rationale, Source: d.Source, Condition: d.Condition,
		Action: tripwire.DefaultAction, CooldownSeconds: tripwire.DefaultCooldownSeconds}
	if d.Action != nil {
		def.Action = *d.Action
	}
	if d.CooldownSeconds != nil {
		def.CooldownSeconds = *d.CooldownSeconds
	}
	return def
}

// backtest says what a tripwire would have done over the last
// tripwire.BacktestSpan of its sources' history, as one line; empty when
// the history could not be read (the reply goes out without it); when too
// many backtests run, the line says so.
func (c *tripwireCommands) backtest(e *Event, def tripwire.Definition) string {
	bt, err := c.tw.Backtest(e.Ctx, e.Sender, def, tripwire.BacktestSpan)
	if errors.Is(err, core.ErrRateLimited) {
		return "I didn't backtest this: " + reasonOf(err) + "."
	}
	if err != nil {
		zerolog.Ctx(e.Ctx).Err(err).Str("tripwire", def.ID).Msg("Failed to backtest a tripwire")
		return ""
	}
	return twBacktestText(bt, def)
}

// twBacktestText renders a backtest: "Over the last 7 days this would have
// tripped 14 times, last on …; with its 1h cooldown you would have had 9
// messages."
func twBacktestText(bt tripwire.Backtest, def tripwire.Definition) string {
	plain, cooled := bt.Plain, bt.Cooled
	if plain.Passes == 0 {
		return fmt.Sprintf("I have no readings of %s yet, so I can't say how often this would have tripped.", twCode(def.Source.String()))
	}
	span := "Over the last " + twDuration(int(bt.Span/time.Second))
	if covered := plain.To.Sub(plain.From); covered < bt.Span-time.Hour {
		span = fmt.Sprintf("Since %s (the history I have, %s)", breakerTime(plain.From), core.Plural(plain.Passes, "reading", "readings"))
	}
	if len(plain.Trips) == 0 {
		text := span + " this would not have tripped."
		if !plain.QuarantinedAt.IsZero() {
			text += fmt.Sprintf(" It would have been quarantined on %s: its sources gave values it cannot compare.", breakerTime(plain.QuarantinedAt))
		}
		return text
	}
	text := fmt.Sprintf("%s this would have tripped %s, last on %s", span, core.Plural(len(plain.Trips), "time", "times"),
		breakerTime(plain.Trips[len(plain.Trips)-1]))
	noun := "trip in your journal"
	if def.Action.Push {
		noun = "message"
	}
	if bt.Cooldown > 0 {
		text += fmt.Sprintf("; with its %s cooldown you would have had %s", twDuration(int(bt.Cooldown/time.Second)),
			core.Plural(len(cooled.Trips), noun, noun+"s"))
	}
	text += "."
	if !cooled.QuarantinedAt.IsZero() {
		text += fmt.Sprintf(" It would have been quarantined on %s.", breakerTime(cooled.QuarantinedAt))
	}
	return text
}

// proposalText says what Jarvis will watch, in words and as the exact
// rule, and what a trip does; the channel says how to answer.
func (c *tripwireCommands) proposalText(e *Event, w intent.Watch, d tripwire.Draft) string {
	action := tripwire.DefaultAction
	if d.Action != nil {
		action = *d.Action
	}
	cooldown := tripwire.DefaultCooldownSeconds
	if d.CooldownSeconds != nil {
		cooldown = *d.CooldownSeconds
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Shall I watch this for you? **%s**\n\n", core.EscapeMarkdown(core.UpperFirst(cmp.Or(w.Description, d.Label))))
	fmt.Fprintf(&b, "- Rule: %s\n", twCode(twRule(d.Source, d.Condition)))
	fmt.Fprintf(&b, "- Label: %s\n", core.EscapeMarkdown(d.Label))
	fmt.Fprintf(&b, "- When it trips: %s\n", twAction(e.Proc.Prefix(), action))
	fmt.Fprintf(&b, "- Cooldown: %s between trips\n", twDuration(cooldown))
	if bt := c.backtest(e, twProposed(d)); bt != "" {
		fmt.Fprintf(&b, "\n%s\n", bt)
	}
	if w.Note != "" {
		fmt.Fprintf(&b, "\n%s\n", core.EscapeMarkdown(w.Note))
	}
	return strings.TrimSpace(b.String())
}

// rationale is the conversation that led to a proposal: the sentence,
// after up to proposalContext of the sender's earlier messages in the room
// from the last proposalWindow, since their last request to watch
// something, never held ones; within core.MaxRationaleLength. Its trust
// is the weakest of the sentence's and those of the messages quoted.
func (c *tripwireCommands) rationale(e *Event, sentence string) (string, core.Trust, error) {
	when := e.Sent
	if when.IsZero() {
		when = e.Proc.deps.Clock.Now()
	}
	var earlier []string
	var trusts []core.Trust
	if ex := e.Proc.deps.Excerpts; ex != nil {
		kept, err := ex.Excerpts(e.Ctx, e.RoomID, e.Sender, core.ExcerptKeep)
		if err != nil {
			return "", "", fmt.Errorf("read the conversation: %w", err)
		}
		// Newest first, back to an earlier request to watch something:
		// that one had its own proposal.
	scan:
		for i := len(kept) - 1; i >= 0 && len(earlier) < proposalContext; i-- {
			switch x := kept[i]; {
			case x.EventID == e.EventID, x.At.After(when), x.Held && x.RatifiedBy == "":
			case x.At.Before(when.Add(-proposalWindow)),
				intent.Parse(x.Body, c.tw.Sources(), c.agents()).Kind != intent.None:
				break scan
			default:
				earlier = append([]string{x.Body}, earlier...)
				trusts = append([]core.Trust{cmp.Or(x.Trust, core.TrustNative)}, trusts...)
			}
		}
	}
	head := "You said in chat on " + breakerTime(when) + ":"
	trust := cmp.Or(e.Trust, core.TrustNative)
	lines := []string{twQuote(sentence, quotedSentence)}
	budget := tripwire.MaxRationaleLength - utf8.RuneCountInString(head) - 1 - utf8.RuneCountInString(lines[0])
	for i := len(earlier) - 1; i >= 0; i-- {
		q := twQuote(earlier[i], quotedEarlier)
		n := utf8.RuneCountInString(q) + 1
		if n > budget {
			break
		}
		budget -= n
		lines = append([]string{q}, lines...)
		trust = core.Derive(trust, trusts[i])
	}
	return head + "\n" + strings.Join(lines, "\n"), trust, nil
}

// confirmProposal arms a proposal on the proposer's ✅, through the same
// validation and rate limit as `!tw arm`. A refusal becomes the question's
// new text.
func (c *tripwireCommands) confirmProposal(e *Event, p core.Pending) (string, error) {
	prefix := e.Proc.Prefix()
	var d tripwire.Draft
	if err := json.Unmarshal([]byte(p.Payload), &d); err != nil {
		return "", fmt.Errorf("read tripwire proposal %s: %w", p.Key, err)
	}
	def, err := c.tw.Arm(e.Ctx, p.Requester, d)
	if err == nil {
		return twArmed(prefix, def) + twBacktestSuffix(c.backtest(e, def)), nil
	}
	if why, ok := twRefusal(err); ok {
		return fmt.Sprintf("Not armed: %s. Nothing changed; say it again later and I'll propose it anew.", why), nil
	}
	return "", err
}

func (c *tripwireCommands) dismissProposal(_ *Event, p core.Pending) string {
	var d tripwire.Draft
	if json.Unmarshal([]byte(p.Payload), &d) != nil || d.Label == "" {
		return "Dismissed — nothing armed."
	}
	return fmt.Sprintf("Dismissed — nothing armed; I won't watch %s.", core.EscapeMarkdown(d.Label))
}

// clarify asks a question, listing what can be watched unless the
// question does.
func (c *tripwireCommands) clarify(e *Event, question string) string {
	text := question
	listed := true
	for _, k := range c.tw.Sources().Kinds() {
		listed = listed && strings.Contains(question, k.Kind)
	}
	if !listed {
		text += "\n\n" + c.watchable()
	}
	return text + fmt.Sprintf("\n\nOr arm it exactly: `%stw arm <source> <op> <value> --because \"…\"`.", e.Proc.Prefix())
}

// watchable lists the source kinds, one line each.
func (c *tripwireCommands) watchable() string {
	var b strings.Builder
	b.WriteString("I can watch:\n")
	for _, k := range c.tw.Sources().Kinds() {
		name := k.Kind
		if k.Param != "" {
			name += "[…]"
		}
		fmt.Fprintf(&b, "- %s", twCode(name))
		if len(k.Aliases) > 0 {
			fmt.Fprintf(&b, " (%s)", core.EscapeMarkdown(k.Aliases[0]))
		}
		if k.Description != "" {
			fmt.Fprintf(&b, ": %s", core.EscapeMarkdown(k.Description))
		}
		if k.Param != "" {
			fmt.Fprintf(&b, "; give the %s", core.EscapeMarkdown(k.Param))
		}
		b.WriteString("\n")
	}
	return strings.TrimSpace(b.String())
}

func (c *tripwireCommands) kindNames() string {
	kinds := c.tw.Sources().Kinds()
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = k.Kind
	}
	return strings.Join(names, ", ")
}

// ---- changing tripwires ----

func (c *tripwireCommands) disable(e *Event) error {
	prefix := e.Proc.Prefix()
	id, ok := c.oneID(e, "disable")
	if !ok {
		return nil
	}
	d, err := c.tw.Get(e.Ctx, e.Sender, id)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	if d.Status == tripwire.Disabled {
		e.Reply("`%s` (%s) is already disabled. `%stw enable %s` re-arms it.", d.ID, core.EscapeMarkdown(d.Label), prefix, d.ID)
		return nil
	}
	if _, err = c.tw.Disable(e.Ctx, e.Sender, id); err != nil {
		return c.refused(e, "Not disabled", id, err)
	}
	e.Reply("Disabled `%s` (%s): I stop watching it.\n`%stw enable %s` re-arms it.", d.ID, core.EscapeMarkdown(d.Label), prefix, d.ID)
	return nil
}

func (c *tripwireCommands) enable(e *Event) error {
	id, ok := c.oneID(e, "enable")
	if !ok {
		return nil
	}
	d, err := c.tw.Get(e.Ctx, e.Sender, id)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	if d.Status.Active() {
		e.Reply("`%s` (%s) is already %s: I am watching it.", d.ID, core.EscapeMarkdown(d.Label), d.Status)
		return nil
	}
	if d, err = c.tw.Enable(e.Ctx, e.Sender, id); err != nil {
		return c.refused(e, "Not enabled", id, err)
	}
	e.Reply("Enabled `%s` (%s): watching %s again.", d.ID, core.EscapeMarkdown(d.Label), twCode(twRule(d.Source, d.Condition)))
	return nil
}

func (c *tripwireCommands) release(e *Event) error {
	prefix := e.Proc.Prefix()
	id, ok := c.oneID(e, "release")
	if !ok {
		return nil
	}
	d, err := c.tw.Get(e.Ctx, e.Sender, id)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	if d.Status != tripwire.Quarantined {
		e.Reply("`%s` (%s) is %s, not quarantined: there is nothing to release. `%stw show %s` shows it.", d.ID, core.EscapeMarkdown(d.Label), d.Status, prefix, d.ID)
		return nil
	}
	if d, err = c.tw.Release(e.Ctx, e.Sender, id); err != nil {
		return c.refused(e, "Not released", id, err)
	}
	e.Reply("Released `%s` (%s): watching %s again.", d.ID, core.EscapeMarkdown(d.Label), twCode(twRule(d.Source, d.Condition)))
	return nil
}

func (c *tripwireCommands) remove(e *Event) error {
	prefix := e.Proc.Prefix()
	id, ok := c.oneID(e, "delete")
	if !ok {
		return nil
	}
	d, err := c.tw.Get(e.Ctx, e.Sender, id)
	if err != nil {
		return c.refused(e, "", id, err)
	}
	if err := c.tw.Delete(e.Ctx, e.Sender, id); err != nil {
		return c.refused(e, "Not deleted", id, err)
	}
	e.Reply("Deleted `%s` (%s). Its past trips stay: `%stw history %s`.", d.ID, core.EscapeMarkdown(d.Label), prefix, d.ID)
	return nil
}

func (c *tripwireCommands) push(e *Event) error {
	prefix := e.Proc.Prefix()
	var on, ok bool
	if len(e.Args) == 2 {
		on, ok = twOnOff(e.Args[1])
	}
	if !ok {
		e.Reply("Say which tripwire and on or off: `%stw push <id> on|off`.", prefix)
		return nil
	}
	id := strings.Trim(e.Args[0], "`")
	d, err := c.tw.SetPush(e.Ctx, e.Sender, id, on)
	if err != nil {
		return c.refused(e, "Not changed", id, err)
	}
	e.Reply("Push is %s for `%s` (%s): when it trips, %s.", map[bool]string{true: "on", false: "off"}[on], d.ID, core.EscapeMarkdown(d.Label), twAction(prefix, d.Action))
	return nil
}

func (c *tripwireCommands) cooldown(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) != 2 {
		e.Reply("Say which tripwire and how long: `%stw cooldown <id> <duration>`, e.g. 30m, 6h or 1d.", prefix)
		return nil
	}
	dur, ok := twParseDuration(e.Args[1])
	if !ok {
		e.Reply("Not changed: the cooldown is a duration like 30m, 6h or 1d, not %s.", twCode(e.Args[1]))
		return nil
	}
	id := strings.Trim(e.Args[0], "`")
	d, err := c.tw.SetCooldown(e.Ctx, e.Sender, id, dur)
	if err != nil {
		return c.refused(e, "Not changed", id, err)
	}
	e.Reply("`%s` (%s) now trips at most once every %s.", d.ID, core.EscapeMarkdown(d.Label), twDuration(d.CooldownSeconds))
	return nil
}

// ---- personal API tokens ----

// twDirectRooms finds the direct room Jarvis shares with a person; the
// outbox keeps it, since the bot delivers notices there.
type twDirectRooms interface {
	DirectRoom(ctx context.Context, userID string) (string, error)
}

// tokenHere says whether a token may be handed out where e was said: in
// the person's direct room only, since a token is a password and never
// lands in a shared room or on a bridge; otherwise it answers where to
// ask with verb (`tw token`, `tw token feed`) and what for.
func tokenHere(e *Event, verb, what string) (bool, error) {
	prefix := e.Proc.Prefix()
	if e.Puppet != "" {
		e.Reply("A token is a password, so I hand it out only in our direct chat on Matrix, never through a bridge. Ask me there with `%s%s`.", prefix, verb)
		return false, nil
	}
	direct, err := directRoomOf(e)
	if err != nil {
		return false, err
	}
	if direct != e.RoomID {
		if direct == "" {
			e.Send(core.Notice{Key: "tw:token-room:" + e.EventID, ToUser: e.Sender, Kind: core.NoticeMessage,
				Body: fmt.Sprintf("This is our direct chat. Say `%s%s` here and I'll make you %s.", prefix, verb, what)})
			e.Reply("A token is a password, so I hand it out only in our direct chat, never in a shared room. I've opened one with you: say `%s%s` there.", prefix, verb)
			return false, nil
		}
		e.Reply("A token is a password, so I hand it out only in our direct chat, never in a shared room. Say `%s%s` there.", prefix, verb)
		return false, nil
	}
	return true, nil
}

// token makes a personal API token, in the person's direct room only.
func (c *tripwireCommands) token(e *Event) error {
	prefix := e.Proc.Prefix()
	if ok, err := tokenHere(e, "tw token", "a personal API token"); !ok || err != nil {
		return err
	}
	plain, tok, err := c.tw.CreateToken(e.Ctx, e.Sender, e.RawArgs)
	var fe *core.FieldError
	if errors.As(err, &fe) {
		e.Reply("No token made: the label %s.", fe.Reason)
		return nil
	}
	if err != nil {
		return err
	}
	e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, TargetEvent: e.EventID, Secret: true,
		Body: fmt.Sprintf("Your personal API token, shown this once (I keep only its hash):\n\n`%s`\n\n"+
			"It acts on your tripwires only. Send it with every request to Jarvis's API:\n"+
			"`Authorization: Bearer %s`\n"+
			"`GET /api/tripwires` lists your tripwires, `POST /api/tripwires` arms one.\n\n"+
			"Its ID is `%s`: `%stw token revoke %s` turns it off.", plain, plain, tok.ID, prefix, tok.ID)})
	return nil
}

// tokenFeed makes a calendar feed token, in the person's direct room
// only: it reads their calendar feed and nothing else, so that the URL a
// calendar app subscribes to (and a proxy may log) cannot arm or delete
// their tripwires.
func (c *tripwireCommands) tokenFeed(e *Event) error {
	prefix := e.Proc.Prefix()
	if ok, err := tokenHere(e, "tw token feed", "a calendar feed token"); !ok || err != nil {
		return err
	}
	plain, tok, err := c.tw.CreateFeedToken(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	e.Send(core.Notice{RoomID: e.RoomID, Kind: core.NoticeMessage, TargetEvent: e.EventID, Secret: true,
		Body: fmt.Sprintf("Your calendar feed token, shown this once (I keep only its hash):\n\n`%s`\n\n"+
			"It reads your reminders and dated tasks and nothing else. Subscribe your calendar app to\n"+
			"`/api/me/calendar.ics?token=%s` on Jarvis's API.\n\n"+
			"Its ID is `%s`: `%stw token revoke %s` turns it off, and your other tokens keep working.", plain, plain, tok.ID, prefix, tok.ID)})
	return nil
}

// directRoomOf finds the direct room Jarvis shares with the sender; "" when
// there is none.
func directRoomOf(e *Event) (string, error) {
	dr, ok := e.Proc.deps.Outbox.(twDirectRooms)
	if !ok {
		return "", nil
	}
	room, err := dr.DirectRoom(e.Ctx, e.Sender)
	if errors.Is(err, core.ErrNotFound) {
		return "", nil
	}
	return room, err
}

func (c *tripwireCommands) tokenList(e *Event) error {
	prefix := e.Proc.Prefix()
	toks, err := c.tw.ListTokens(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	if len(toks) == 0 {
		e.Reply("You have no API tokens. `%stw token` in our direct chat makes one.", prefix)
		return nil
	}
	var b strings.Builder
	b.WriteString("**Your API tokens** (their secret is never shown again)\n\n")
	for _, t := range toks {
		fmt.Fprintf(&b, "- `%s` made %s", t.ID, breakerTime(t.CreatedAt))
		if t.Feed() {
			b.WriteString(", reads the calendar feed only")
		} else if t.Label != "" {
			fmt.Fprintf(&b, ": %s", core.EscapeMarkdown(t.Label))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\n`%stw token revoke <id>` turns one off.", prefix)
	e.Reply("%s", b.String())
	return nil
}

func (c *tripwireCommands) tokenRevoke(e *Event) error {
	prefix := e.Proc.Prefix()
	if len(e.Args) != 1 {
		e.Reply("Which token? `%stw token revoke <id>`; `%stw token list` shows yours.", prefix, prefix)
		return nil
	}
	id := strings.Trim(e.Args[0], "`")
	err := c.tw.RevokeToken(e.Ctx, e.Sender, id)
	if errors.Is(err, core.ErrNotFound) {
		e.Reply("You have no token %s. `%stw token list` shows yours.", twCode(id), prefix)
		return nil
	}
	if err != nil {
		return err
	}
	e.Reply("Revoked %s: requests bearing it are refused from now on.", twCode(id))
	return nil
}

// ---- replies ----

// oneID reads the one tripwire ID a verb takes, or says how to give it.
func (c *tripwireCommands) oneID(e *Event, verb string) (string, bool) {
	if len(e.Args) != 1 {
		prefix := e.Proc.Prefix()
		e.Reply("Which tripwire? `%stw %s <id>`; `%stw list` shows your tripwires with their IDs.", prefix, verb, prefix)
		return "", false
	}
	return strings.Trim(e.Args[0], "`"), true
}

// refused turns an error core gave about the sender's request into a
// refusal, one short reply saying what is wrong and what to type instead.
// Errors that are not the sender's are returned as they are: they fail
// the command.
func (c *tripwireCommands) refused(e *Event, what, id string, err error) error {
	prefix := e.Proc.Prefix()
	if errors.Is(err, core.ErrNotFound) && id != "" {
		return refuse("You have no tripwire %s. `%stw list` shows yours.", twCode(id), prefix)
	}
	why, ok := twRefusal(err)
	if !ok {
		return err
	}
	if what == "" {
		what = "Sorry"
	}
	hint := ""
	switch f := twField(err); {
	case f == "cooldown_seconds":
		hint = " For example `--cooldown 6h`, or `" + prefix + "tw cooldown <id> 6h`."
	case f == "label":
		hint = ` For example --label "GI low".`
	case f == "rationale":
		hint = ` For example --because "I want to know before the Seal".`
	case strings.HasPrefix(f, "source"), strings.HasPrefix(f, "condition"):
		hint = " " + c.armExample(prefix)
	}
	return refuse("%s: %s.%s", what, why, hint)
}

// twRefusal is refusal naming the field at fault the way a person typed
// it ("the cooldown", "the label (--label)").
func twRefusal(err error) (string, bool) {
	var fe *core.FieldError
	if !errors.As(err, &fe) {
		return refusal(err)
	}
	reason := fe.Reason
	if fe.Field == "cooldown_seconds" {
		reason = fmt.Sprintf("must be between 0 and %s", twDuration(tripwire.MaxCooldownSeconds))
	}
	return twFieldWords(fe.Field) + " " + reason, true
}

func twField(err error) string {
	var fe *core.FieldError
	if errors.As(err, &fe) {
		return fe.Field
	}
	return ""
}

// twFieldWords names a field of a draft the way a person typed it.
func twFieldWords(field string) string {
	switch {
	case field == "label":
		return "the label (--label)"
	case field == "rationale":
		return "the reason (--because)"
	case field == "cooldown_seconds":
		return "the cooldown"
	case field == "action":
		return "the action:"
	case strings.HasSuffix(field, "source.param"):
		return "the source's param"
	case strings.Contains(field, "source"):
		return "the source"
	case strings.HasSuffix(field, ".op"):
		return "the op"
	case strings.Contains(field, "threshold"), strings.Contains(field, "conditions"):
		return "the value"
	case field == "param":
		return "the param"
	}
	return twCode(field)
}

// twArmed confirms an armed tripwire.
func twArmed(prefix string, d tripwire.Definition) string {
	return fmt.Sprintf("Armed — `%s` watching %s (%s).\nWhen it trips: %s; at most once every %s.\n`%stw show %s` shows it, `%stw disable %s` pauses it.",
		d.ID, twCode(twRule(d.Source, d.Condition)), core.EscapeMarkdown(d.Label), twAction(prefix, d.Action), twDuration(d.CooldownSeconds),
		prefix, d.ID, prefix, d.ID)
}

// twRule renders the exact rule with its sources: "integrity.gi < 0.7",
// or "all of: integrity.gi < 0.7; agent.status[EVE] = offline".
func twRule(src core.SourceRef, c tripwire.Condition) string {
	if c.Op != tripwire.OpAll && c.Op != tripwire.OpAny {
		return src.String() + " " + c.String()
	}
	parts := make([]string, len(c.Conditions))
	for i, s := range c.Conditions {
		ref := src
		if s.Source != nil {
			ref = *s.Source
		}
		parts[i] = ref.String() + " " + s.String()
	}
	return string(c.Op) + " of: " + strings.Join(parts, "; ")
}

// twAction says what a trip does.
func twAction(prefix string, a tripwire.Action) string {
	switch {
	case a.Urgent && a.Journal:
		return "I message you directly, even in your quiet hours, and note it in your journal"
	case a.Urgent:
		return "I message you directly, even in your quiet hours"
	case a.Push && a.Journal:
		return "I message you directly and note it in your journal"
	case a.Push:
		return "I message you directly"
	}
	return fmt.Sprintf("I note it quietly in your journal (`%stw journal`)", prefix)
}

func twStatus(prefix string, d tripwire.Definition) string {
	switch d.Status {
	case tripwire.Tripped:
		return "tripped; it re-arms when the condition clears"
	case tripwire.Disabled:
		return fmt.Sprintf("disabled; `%stw enable %s` re-arms it", prefix, d.ID)
	case tripwire.Quarantined:
		return fmt.Sprintf("quarantined because %s; `%stw release %s` re-arms it", core.EscapeMarkdown(d.QuarantineReason), prefix, d.ID)
	}
	return "armed, watching"
}

// twDuration renders seconds without zero tails: "1h", "90m" as
// "1h30m", whole days as "2d".
func twDuration(secs int) string {
	if secs == 0 {
		return "no time"
	}
	d := time.Duration(secs) * time.Second
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return core.ShortDuration(d)
}

// twParseDuration reads "30m", "6h", "1d", "1d12h" or "0".
func twParseDuration(s string) (time.Duration, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "0" || s == "none" || s == "off" {
		return 0, true
	}
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.Atoi(s[:i])
		if err != nil || n < 0 || n > 10000 {
			return 0, false
		}
		days, s = time.Duration(n)*24*time.Hour, s[i+1:]
		if s == "" {
			return days, true
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, false
	}
	return days + d, true
}

func twOnOff(s string) (bool, bool) {
	switch strings.ToLower(s) {
	case "on", "yes", "true":
		return true, true
	case "off", "no", "false":
		return false, true
	}
	return false, false
}

func twTimeOrNever(t *time.Time) string {
	if t == nil {
		return "never"
	}
	return breakerTime(*t)
}

// twCode puts text in a code span; backticks inside become quotes.
func twCode(s string) string { return "`" + strings.ReplaceAll(s, "`", "'") + "`" }

// twQuote puts a message on one line in quotes, cut to n characters.
func twQuote(s string, n int) string {
	return "“" + core.Truncate(strings.Join(strings.Fields(s), " "), n) + "”"
}

// twMDLines escapes text line by line, keeping its lines.
func twMDLines(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i, l := range lines {
		lines[i] = core.EscapeMarkdown(l)
	}
	return strings.Join(lines, "\n")
}
