// Package intent reads plain sentences such as "tell me when GI drops below
// 0.70" or "let me know if EVE goes offline" and turns them into the
// tripwire draft `!tw arm` would build, so that a proposal is armed, and
// validated, by the same code as the command. It is deterministic: tables
// of phrases, no model and no network.
//
// The registry is the source of truth for what can be watched: a sentence
// names a kind by its name ("integrity.gi") or one of its Aliases ("GI"),
// matched without regard to case on word boundaries (a plural s aside). What
// the parser knows besides the registry is how people say things: intent
// phrases, comparators, numbers, durations, the value vocabularies of the
// kinds Jarvis itself registers (agent.status, agent.mode, breaker.state,
// card.state), and the agents the fleet is configured with.
//
// A sentence is read in passes: a lead-in ("Jarvis, could you"), the intent
// phrase, push and cooldown phrases, params (URLs, card ids, Matrix IDs),
// agent and kind names, then clauses split at "and", "or", "while", "when",
// "unless", commas. Each clause gives a subject, a condition or both; a
// clause with only a subject lends it to the next ("watch the vault balance
// and ping me when it reaches 45"), one with only a condition borrows the
// subject before it ("GI drops below 0.7 or rises above 0.95").
//
// Decisions worth knowing:
//   - Push: "ping me", "notify me", "alert me" and the like turn push on; so
//     do "tell me", "let me know" and "I'm worried …", because the person
//     asked to be told. "Watch …", "keep an eye on …" and "set a tripwire"
//     alone keep the seed's quiet default (journal only). "Quietly", "just
//     note it", "in the journal", "don't ping me" turn push off, whatever
//     else was said.
//   - Each kind says the type of its values (core.SourceKind.Value) and of
//     its param (ParamType); the parser reads by them and never guesses
//     from a description.
//   - Percentages: on a ratio (GI, MII run from 0 to 1) "70%" is 0.70, and
//     a bare number above 1 and at most 100 is read as a percentage too ("GI
//     below 70"), with a note. On any other kind "45%" is 45, with a note.
//     A seconds kind takes durations ("over 10 minutes" is 600); a number
//     kind takes no word as a value ("is low").
//   - A number or direction left out falls back to `changed`, with a note; a
//     count (e.g. cards.needs_decision) without a number is "more than 0"
//     instead ("when a card needs my decision").
//   - "and", "while", a second "when"/"if" combine conditions with all, "or"
//     with any, "unless" with all and the condition negated; mixing and and
//     or is asked about. "Any agent" is one condition per configured agent
//     (at most four). Values of one state joined by "or" are one `in`.
//   - Silence: "hasn't reported for 2 hours", "has been quiet for more
//     than an hour", "no heartbeat from EVE in the last 30 minutes" watch
//     agent.silence (at or above the duration; above after "more than"),
//     not agent.status (silence.go).
//   - Names (agents, kinds and aliases) match without regard to case or
//     accents: "ZOE-2" and "zoë-2" are the agent Zoë-2, "aeroskobing" is
//     Ærøskøbing. Ranges: "between", "within", "in the range" a "and"/"to"/
//     a dash b; "not between", "outside", "leaves the range" are outside it; a
//     bare low end shares the high end's unit ("between 5 and 10
//     minutes"); "2.5k" is 2500.
//   - A span a condition should hold over or count within ("for 10
//     minutes", "in an hour", "over the last day") is left out, with a
//     note: a tripwire tests each value as it is read.
//   - The cooldown is always set on the draft (default one hour), so the
//     proposal shows what will be armed; more than 30 days is capped, with a
//     note.
//   - What cannot be built becomes a question: no known kind ("tell me when
//     it gets bad" lists what Jarvis can watch), no agent, card id, URL path
//     or feed keyword, and a draft the registry rejects.
//
// The files follow the passes: tokens.go splits the sentence, phrases.go
// matches phrases, vocabulary.go holds the words and phrases, request.go
// reads the lead-in, the intent, push and cooldown phrases, names.go the
// params and names, clauses.go splits clauses and pairs subjects with
// conditions, subjects.go resolves kinds and params, conditions.go reads
// conditions, silence.go durations of silence and spans of time,
// descriptions.go says them in words, and proposal.go builds
// the answer.
package intent

import (
	"fmt"
	"slices"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// Kind says what a sentence asked of Jarvis.
type Kind int

// The kinds of watch intent.
const (
	// None: the sentence is not a request to watch something (small
	// talk, a question, a command).
	None Kind = iota
	// Proposal: a tripwire to propose, in Draft.
	Proposal
	// Question: a request to watch something Jarvis needs to ask
	// about first, in Question.
	Question
)

// Watch is what Parse read in a sentence.
type Watch struct {
	Kind Kind
	// Draft is the tripwire to propose. Its Rationale is empty: the caller
	// fills it with the conversation excerpt before arming.
	Draft tripwire.Draft
	// Description says in one line what the tripwire watches, e.g.
	// "GI below 0.70".
	Description string
	// Note explains a guess the parser made: that it fell back to changed
	// because no number or direction was given, that 70 was read as 70%, …
	Note string
	// Mine is true when the sentence spoke of "my decision": the caller may
	// set Draft.Source.Param to the sender's Matrix ID so that
	// cards.needs_decision counts only the questions put to them.
	Mine bool
	// Question is the clarifying question to ask (kind Question).
	Question string
}

// maxBytes bounds what is read as a watch request: asking Jarvis to
// watch something is one sentence, and a longer message is talk.
const maxBytes = 1000

// Parse reads a chat message as a request to watch something.
// reg is the source registry; agents are the configured agent names, the
// params of agent.* and breaker.state. A proposal always passes
// core.Definition.Validate once a rationale is filled in: a draft the
// registry rejects (a URL whose host is not allowed) becomes a question.
func Parse(text string, reg *core.SourceRegistry, agents []string) Watch {
	w := parseWatch(text, reg, agents)
	if w.Kind != Proposal {
		return w
	}
	if err := checkDraft(w.Draft, reg); err != nil {
		return ask(fmt.Sprintf("I can't watch that (%v). What should I watch instead?", err))
	}
	return w
}

// checkDraft validates a draft the way tripwire.Service.Arm does, with a
// stand-in rationale.
func checkDraft(d tripwire.Draft, reg *core.SourceRegistry) error {
	def := tripwire.Definition{
		Label: d.Label, Rationale: "proposed in chat", Source: d.Source, Condition: d.Condition,
		Action: tripwire.DefaultAction, CooldownSeconds: tripwire.DefaultCooldownSeconds,
	}
	if d.Action != nil {
		def.Action = *d.Action
	}
	if d.CooldownSeconds != nil {
		def.CooldownSeconds = *d.CooldownSeconds
	}
	return def.Validate(reg)
}

// ask is a clarifying question.
func ask(q string) Watch { return Watch{Kind: Question, Question: q} }

// parser holds one sentence while it is read, pass by pass.
type parser struct {
	text   string
	toks   []*token
	reg    *core.SourceRegistry
	kinds  []core.SourceKind
	agents []string

	request  bool
	question bool // the sentence ends with "?"
	classes  []requestClass
	pushOn   bool
	pushOff  bool
	cooldown *int
	notes    []string
}

// parseWatch is Parse without the last validation, so that the
// fuzz test can tell the parser's mistakes from the registry's vetting.
func parseWatch(text string, reg *core.SourceRegistry, agents []string) Watch {
	text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
	if reg == nil || text == "" || len(text) > maxBytes || strings.HasPrefix(text, "!") {
		return Watch{}
	}
	p := &parser{text: text, toks: tokenize(text), reg: reg, kinds: reg.Kinds()}
	for _, a := range agents {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(p.agents, a) {
			p.agents = append(p.agents, a)
		}
	}
	return p.run()
}

// unusedTokens returns the tokens no phrase has taken.
func unusedTokens(ts []*token) []*token {
	var out []*token
	for _, t := range ts {
		if !t.used {
			out = append(out, t)
		}
	}
	return out
}

// markUsed marks tokens taken by a phrase.
func markUsed(ts []*token) {
	for _, t := range ts {
		t.used = true
	}
}

// run reads the sentence in passes: lead-in, intent phrases, push and
// cooldown phrases, params, names, clauses; then builds the answer.
func (p *parser) run() Watch {
	start := p.leadIn()
	if start < 0 {
		return Watch{}
	}
	first := p.toks[start]
	if !p.request && first.kind == tWord && questionWords[first.low] {
		return Watch{}
	}
	atStart, ok := p.intents(start)
	if !ok {
		return Watch{}
	}
	p.question = strings.HasSuffix(p.text, "?")
	if p.question && !p.request && !atStart {
		return Watch{}
	}
	p.pushPhrases()
	p.cooldowns()
	p.params()
	p.names()
	p.separators()
	return p.build(p.parts())
}

// leadIn marks "Jarvis, could you please …" used and returns the index of
// the first token after it, or -1 when nothing is left.
