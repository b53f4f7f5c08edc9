package commands

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/commands/intent"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// askListCap is how many items a plain-words answer names before it
// points at the command that lists them all.
const askListCap = 5

// askCommands are `!ask`: its topics, each the answer to a question
// people ask in their own words ("is anything halted?"), read from the
// records only, ending with the command that shows more. AddFeatures gives
// it the topics whose feature is there.
type askCommands struct {
	breakers  *breakerCommands
	cards     *cardCommands
	tripwires *tripwireCommands
	sys       *System
}

// handler is `!ask` with the topics of the features there, and of the
// system when it has a lease section.
func (a *askCommands) handler() *Handler {
	ask := &Handler{Name: "ask", Help: "Answer a question from the records, in plain words; asking me in your own words does the same.",
		Subcommands: []*Handler{{Name: "jarvis", Help: "How Jarvis itself is doing (in full for admins).", Func: a.jarvisAnswer}}}
	if a.breakers != nil {
		ask.Subcommands = append(ask.Subcommands, &Handler{Name: "breakers", Args: "[agent]", Help: "Is any agent halted, or why is this one?", Func: a.breakersAnswer})
	}
	if a.cards != nil {
		ask.Subcommands = append(ask.Subcommands,
			&Handler{Name: "cards", Args: "[blocked]", Help: "How the backlog stands, or which cards are blocked.", Func: a.cardsAnswer},
			&Handler{Name: "decisions", Help: "The cards' questions waiting for your answer.", Func: a.decisionsAnswer})
	}
	if a.tripwires != nil {
		ask.Subcommands = append(ask.Subcommands,
			&Handler{Name: "watching", Help: "What your tripwires watch.", Func: a.watchingAnswer},
			&Handler{Name: "tripped", Args: "[overnight|today|yesterday|hour|week]", Help: "What tripped in your journal in that time (the last day by default); it stays unread.", Func: a.trippedAnswer})
	}
	if leaseSection(a.sys) != nil {
		ask.Subcommands = append(ask.Subcommands, &Handler{Name: "lease", Help: "Which Jarvis holds the workspace lease.", Admin: true, Func: a.leaseAnswer})
	}
	return ask
}

// askIntent turns a question addressed to Jarvis into `!help` or the
// `!ask` topic that answers it, when this processor has it.
func (p *Processor) askIntent(text string) (string, []string, bool) {
	name, args, ok := intent.Ask(text, p.agentNames())
	if !ok {
		return "", nil, false
	}
	if h, _, _ := p.resolve(strings.Fields(name)); h == nil || h.Func == nil {
		return "", nil, false
	}
	return name, args, true
}

// agentNames are the agents sentences may name: the fleet's, or those
// Features.Agents gives.
func (p *Processor) agentNames() []string {
	if f := p.features.fleet; f != nil {
		var names []string
		for _, a := range f.reader.Agents() {
			names = append(names, a.Name)
		}
		return names
	}
	if p.features.agents != nil {
		return p.features.agents()
	}
	return nil
}

// more ends an answer with the command that shows more.
func (e *Event) more(answer, command string) {
	e.Reply("%s\n\nMore: `%s%s`.", strings.TrimSpace(answer), e.Proc.Prefix(), command)
}

func (a *askCommands) breakersAnswer(e *Event) error {
	b := a.breakers.svc
	if len(e.Args) > 0 {
		st, err := b.Status(e.Ctx, e.Args[0])
		if breakerBadInput(e, err) {
			return nil
		}
		if err != nil {
			return err
		}
		e.more(askBreakerWords(st), "breaker status "+st.Agent)
		return nil
	}
	all, err := b.StatusAll(e.Ctx)
	if err != nil {
		return err
	}
	var halted, trial []string
	for _, st := range all {
		switch st.State {
		case breaker.Open:
			halted = append(halted, askBreakerWords(st))
		case breaker.HalfOpen:
			trial = append(trial, askBreakerWords(st))
		}
	}
	if len(halted)+len(trial) == 0 {
		e.more("Nothing is halted: every agent's circuit breaker is closed.", "breaker status")
		return nil
	}
	e.more(strings.Join(slices.Concat(halted, trial), "\n"), "breaker status")
	return nil
}

// askBreakerWords says where one agent's breaker stands, in a sentence.
func askBreakerWords(st breaker.Status) string {
	agent := core.EscapeMarkdown(st.Agent)
	switch {
	case st.State == breaker.Open && st.Event != nil:
		return fmt.Sprintf("%s is halted since %s, because: %s (%s, event `%s`).", agent, breakerTime(st.Since),
			core.EscapeMarkdown(core.Truncate(st.Event.Reason, 200)), st.Event.Severity, st.Event.ID)
	case st.State == breaker.HalfOpen:
		return fmt.Sprintf("%s is on a half-open trial since %s, waiting for the supervisor to verify it.", agent, breakerTime(st.Since))
	default:
		return fmt.Sprintf("%s is not halted: its circuit breaker is closed.", agent)
	}
}

func (a *askCommands) cardsAnswer(e *Event) error {
	c := a.cards.svc
	if len(e.Args) > 0 && e.Args[0] == "blocked" {
		cards, err := c.List(e.Ctx, card.Filter{State: card.Blocked})
		if err != nil {
			return err
		}
		if len(cards) == 0 {
			e.more("No card is blocked.", "card list")
			return nil
		}
		e.more(fmt.Sprintf("%s blocked: %s.", core.UpperFirst(core.Plural(len(cards), "card is", "cards are")), askCardNames(cards)),
			"card list blocked")
		return nil
	}
	cards, err := c.List(e.Ctx, card.Filter{})
	if err != nil {
		return err
	}
	if len(cards) == 0 {
		e.more("There are no cards.", "card list")
		return nil
	}
	count := map[card.State]int{}
	for _, cd := range cards {
		count[cd.State]++
	}
	var parts []string
	for _, s := range card.States {
		if count[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", count[s], strings.ReplaceAll(string(s), "_", " ")))
		}
	}
	e.more(fmt.Sprintf("%s: %s. The most urgent: %s.", core.UpperFirst(core.Plural(len(cards), "card", "cards")), strings.Join(parts, ", "),
		askCardNames(cards[:1])), "card list")
	return nil
}

// askCardNames names up to askListCap cards, "and N more" after them.
func askCardNames(cards []card.Card) string {
	var names []string
	for _, cd := range cards[:min(len(cards), askListCap)] {
		names = append(names, fmt.Sprintf("%s (%s)", core.EscapeMarkdown(core.Truncate(cd.Spec.Goal, 80)), cd.ID))
	}
	if more := len(cards) - askListCap; more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	return joinAnd(names)
}

func (a *askCommands) decisionsAnswer(e *Event) error {
	waiting, err := a.cards.svc.WaitingOn(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	if len(waiting) == 0 {
		e.more("Nothing is waiting for your decision.", "card list needs_decision")
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s waiting for your decision:\n\n", core.UpperFirst(core.Plural(len(waiting), "question is", "questions are")))
	for _, d := range waiting[:min(len(waiting), askListCap)] {
		fmt.Fprintf(&b, "- on %s since %s: %s\n", d.CardID, breakerTime(d.AskedAt), core.EscapeMarkdown(core.Truncate(d.Question, 200)))
	}
	if more := len(waiting) - askListCap; more > 0 {
		fmt.Fprintf(&b, "- and %d more\n", more)
	}
	e.more(b.String(), "card show <card-id>")
	return nil
}

func (a *askCommands) watchingAnswer(e *Event) error {
	defs, err := a.tripwires.tw.List(e.Ctx, e.Sender)
	if err != nil {
		return err
	}
	if len(defs) == 0 {
		e.more("You are not watching anything yet. Say what to watch, e.g. “tell me when GI drops below 0.70”.", "tw templates")
		return nil
	}
	var names []string
	for _, d := range defs[:min(len(defs), askListCap)] {
		state := ""
		if !d.Status.Active() {
			state = " (" + string(d.Status) + ")"
		}
		names = append(names, core.EscapeMarkdown(d.Label)+state)
	}
	if more := len(defs) - askListCap; more > 0 {
		names = append(names, fmt.Sprintf("%d more", more))
	}
	e.more(fmt.Sprintf("You have %s: %s.", core.Plural(len(defs), "tripwire", "tripwires"), joinAnd(names)), "tw list")
	return nil
}

// askSpans are how far back "did anything trip …" looks, by the word the
// question used; the default is the last day.
var askSpans = map[string]struct {
	words string
	since func(now time.Time) time.Time
}{
	"":          {"in the last day", func(now time.Time) time.Time { return now.Add(-24 * time.Hour) }},
	"hour":      {"in the last hour", func(now time.Time) time.Time { return now.Add(-time.Hour) }},
	"overnight": {"overnight", func(now time.Time) time.Time { return startOfDay(now).Add(-6 * time.Hour) }},
	"today":     {"today", startOfDay},
	"yesterday": {"since yesterday", func(now time.Time) time.Time { return startOfDay(now).AddDate(0, 0, -1) }},
	"week":      {"in the last week", func(now time.Time) time.Time { return now.AddDate(0, 0, -7) }},
}

func startOfDay(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, t.Location())
}

func (a *askCommands) trippedAnswer(e *Event) error {
	span, ok := askSpans[strings.Join(e.Args, " ")]
	if !ok {
		e.Reply("Since when? `%sask tripped [overnight|today|yesterday|hour|week]`.", e.Proc.Prefix())
		return nil
	}
	now := e.Proc.deps.Clock.Now().In(e.Proc.zone(e))
	page, err := a.tripwires.tw.Journal(e.Ctx, e.Sender, tripwire.JournalQuery{Limit: tripwire.TripJournalCap})
	if err != nil {
		return err
	}
	since := span.since(now)
	var trips []tripwire.JournalEntry
	for _, en := range page.Entries {
		if !en.Timestamp.Before(since) {
			trips = append(trips, en)
		}
	}
	if len(trips) == 0 {
		e.more(fmt.Sprintf("Nothing tripped %s.", span.words), "tw journal")
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s:\n\n", core.UpperFirst(core.Plural(len(trips), "trip", "trips")), span.words)
	shown := trips[max(0, len(trips)-askListCap):]
	for _, en := range shown {
		fmt.Fprintf(&b, "- %s **%s**: %s\n", en.Timestamp.In(now.Location()).Format("Mon 15:04"), core.EscapeMarkdown(en.Label),
			core.EscapeMarkdown(en.Summary))
	}
	if more := len(trips) - len(shown); more > 0 {
		fmt.Fprintf(&b, "- and %d earlier\n", more)
	}
	e.more(b.String(), "tw journal")
	return nil
}

// leaseSection is the `!sys lease` section, if there is a system and it
// has one.
func leaseSection(sys *System) *StatusSection {
	if sys == nil {
		return nil
	}
	for i, s := range sys.Sections {
		if s.Verb == "lease" {
			return &sys.Sections[i]
		}
	}
	return nil
}

func (a *askCommands) leaseAnswer(e *Event) error {
	lines, err := leaseSection(a.sys).Lines(e.Ctx)
	if err != nil {
		return err
	}
	e.more(strings.Join(lines, "\n"), "sys lease")
	return nil
}

func (a *askCommands) jarvisAnswer(e *Event) error {
	p := e.Proc
	if !e.Admin() || a.sys == nil {
		e.Reply("I'm here and listening. `%shelp` lists what I can do.", p.Prefix())
		return nil
	}
	up := p.deps.Clock.Now().Sub(a.sys.Started)
	e.more(fmt.Sprintf("I'm fine: version %s, up %s.", core.EscapeMarkdown(a.sys.Version), core.HumanDuration(up)), "sys status")
	return nil
}
