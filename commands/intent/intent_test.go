package intent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

var intentAgents = []string{"EVE", "Ani", "ZEUS"}

// displayAgents are agents whose names have hyphens, digits and letters
// beyond ASCII; cases with agents set parse with them.
var displayAgents = []string{"EVE", "Ani", "ZEUS", "Zoë-2", "night-owl", "Ærøskøbing", "Müller-7", "R2-D2"}

// intentKinds are the source kinds Jarvis registers, with the aliases the
// parser relies on.
func intentKinds() []core.SourceKind {
	resolve := func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }
	agent := func(p string) error {
		if !slices.Contains(intentAgents, p) && !slices.Contains(displayAgents, p) {
			return fmt.Errorf("%q is not a configured agent", p)
		}
		return nil
	}
	host := func(allowed string) func(string) error {
		return func(p string) error {
			raw, rest, _ := strings.Cut(p, " ")
			u, err := url.Parse(raw)
			switch {
			case err != nil:
				return err
			case u.Hostname() != allowed:
				return fmt.Errorf("host %q is not allowed", u.Hostname())
			case strings.TrimSpace(rest) == "":
				return errors.New("give the URL, a space, then the rest")
			}
			return nil
		}
	}
	agentKind := func(kind, desc string, value core.ValueType, categories []string, aliases ...string) core.SourceKind {
		return core.SourceKind{Kind: kind, Aliases: aliases, Description: desc, Value: value, Categories: categories,
			Param: "agent name", ParamType: core.ParamAgent, CheckParam: agent, Resolve: resolve}
	}
	cardStates := make([]string, len(card.States))
	for i, s := range card.States {
		cardStates[i] = string(s)
	}
	return []core.SourceKind{
		{Kind: "vault.balance", Aliases: []string{"vault", "vault balance"}, Description: "the vault balance", Value: core.ValueNumber, Resolve: resolve},
		{Kind: "integrity.gi", Aliases: []string{"GI", "global integrity", "integrity"}, Description: "the global integrity index (0–1)",
			Value: core.ValueRatio, Resolve: resolve},
		{Kind: "micro-agent.value", Aliases: []string{"micro-agent", "micro agent"}, Description: "a micro-agent's self-reported value",
			Value: core.ValueNumber, Param: "which one (the {param} of micro_agents.{param}.value)", ParamType: core.ParamName, Resolve: resolve},
		agentKind(fleet.SourceAgentStatus, "whether an agent is online, late or offline, from its heartbeats",
			core.ValueCategory, []string{"online", "late", "offline"}, "agent status", "status"),
		agentKind(fleet.SourceAgentMII, "the MII an agent reported in its last heartbeat (0 to 1)", core.ValueRatio, nil, "agent MII", "MII"),
		agentKind(fleet.SourceAgentMode, "the mode an agent reported in its last heartbeat: green, yellow or red",
			core.ValueCategory, []string{"green", "yellow", "red"}, "agent mode", "mode"),
		agentKind(fleet.SourceAgentHeartbeatAge, "seconds since an agent's last heartbeat", core.ValueSeconds, nil, "heartbeat age", "last heartbeat"),
		agentKind(fleet.SourceAgentSilence, "seconds since an agent last reported (since it was first expected, if it never has)",
			core.ValueSeconds, nil, "silence", "time since last report"),
		agentKind(fleet.SourceAgentCrashLoop, "how many times an agent restarted within the crash-loop window", core.ValueCount, nil,
			"crash loop", "restarts"),
		agentKind(fleet.SourceAgentJournalCount, "how many journal entries an agent wrote in its current cycle", core.ValueCount, nil,
			"journal count", "journal entries"),
		agentKind("breaker.state", "the state of an agent's circuit breaker: closed, open or half-open",
			core.ValueCategory, []string{"closed", "open", "half-open"}, "breaker", "circuit breaker", "breaker state"),
		{Kind: card.SourceCardsNeedsDecision, Aliases: []string{"cards needing a decision", "decisions waiting", "needs my decision",
			"needs a decision", "waiting for my decision", "waiting for a decision"},
			Description: "how many cards wait for a decision (only those asking the person given, if any)", Value: core.ValueCount,
			Param: "whose decision (a Matrix user ID)", ParamType: core.ParamUser, ParamOptional: true, Resolve: resolve},
		{Kind: card.SourceCardsBlocked, Aliases: []string{"blocked cards"}, Description: "how many cards are blocked", Value: core.ValueCount, Resolve: resolve},
		{Kind: card.SourceCardState, Aliases: []string{"card state"}, Description: "the state of one card: published, claimed, in_progress, needs_decision, blocked, done, …",
			Value: core.ValueCategory, Categories: cardStates,
			Param: "card id", ParamType: core.ParamCard, Resolve: resolve, CheckParam: func(id string) error {
				if !strings.HasPrefix(id, "card_") {
					return fmt.Errorf("%q is not a card id (card_…)", id)
				}
				return nil
			}},
		{Kind: "url-fetch", Aliases: []string{"url", "fetch", "url fetch"}, Description: "a JSON value at a URL of an allowed host",
			Value: core.ValueNumber, Param: "URL, a space, then a JSON path", ParamType: core.ParamURL, CheckParam: host("status.example.org"), Resolve: resolve},
		{Kind: "rss", Aliases: []string{"feed", "rss feed", "news"}, Description: "the newest item of an RSS or Atom feed matching a keyword; use with changed",
			Value: core.ValueText, Param: "feed URL, a space, then a keyword", ParamType: core.ParamURL, CheckParam: host("blog.example.org"), Resolve: resolve},
	}
}

func intentRegistry() *core.SourceRegistry { return core.NewSourceRegistry(intentKinds()...) }

// laneRegistry adds a kind an operator mapped to a path of the snapshot.
func laneRegistry() *core.SourceRegistry {
	reg := intentRegistry()
	reg.Register(core.SourceKind{Kind: "lane.sentiment", Aliases: []string{"sentiment lane", "sentiment"},
		Description: "the state of the sentiment lane", Value: core.ValueText, Resolve: func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }})
	reg.Register(core.SourceKind{Kind: "lane.café", Aliases: []string{"Café lane"},
		Description: "the state of the café lane", Value: core.ValueText, Resolve: func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }})
	return reg
}

// Expected conditions.
func condLT(v float64) tripwire.Condition { return tripwire.Condition{Op: tripwire.OpLT, Threshold: v} }
func condLTE(v float64) tripwire.Condition {
	return tripwire.Condition{Op: tripwire.OpLTE, Threshold: v}
}
func condGT(v float64) tripwire.Condition { return tripwire.Condition{Op: tripwire.OpGT, Threshold: v} }
func condGTE(v float64) tripwire.Condition {
	return tripwire.Condition{Op: tripwire.OpGTE, Threshold: v}
}
func condEQ(v any) tripwire.Condition  { return tripwire.Condition{Op: tripwire.OpEQ, Threshold: v} }
func condNEQ(v any) tripwire.Condition { return tripwire.Condition{Op: tripwire.OpNEQ, Threshold: v} }
func condChanged() tripwire.Condition  { return tripwire.Condition{Op: tripwire.OpChanged} }
func condIn(vs ...any) tripwire.Condition {
	return tripwire.Condition{Op: tripwire.OpIn, Threshold: vs}
}
func condAll(cs ...tripwire.Condition) tripwire.Condition {
	return tripwire.Condition{Op: tripwire.OpAll, Conditions: cs}
}
func condAny(cs ...tripwire.Condition) tripwire.Condition {
	return tripwire.Condition{Op: tripwire.OpAny, Conditions: cs}
}

// condOn gives a sub-condition its own source.
func condOn(kind, param string, c tripwire.Condition) tripwire.Condition {
	c.Source = &core.SourceRef{Kind: kind, Param: param}
	return c
}

// srcRef is a source reference, with a param when given.
func srcRef(kind string, param ...string) core.SourceRef {
	r := core.SourceRef{Kind: kind}
	if len(param) > 0 {
		r.Param = param[0]
	}
	return r
}

// armable is the definition Arm would build from a proposal once the
// caller put the conversation excerpt in the rationale.
func armable(d tripwire.Draft, excerpt string) tripwire.Definition {
	def := tripwire.Definition{
		Label: strings.TrimSpace(d.Label), Rationale: excerpt, Source: d.Source, Condition: d.Condition,
		Action: tripwire.DefaultAction, CooldownSeconds: tripwire.DefaultCooldownSeconds,
	}
	if d.Action != nil {
		def.Action = *d.Action
	}
	if d.CooldownSeconds != nil {
		def.CooldownSeconds = *d.CooldownSeconds
	}
	return def
}

type intentCase struct {
	name string
	text string
	// lanes parses with a registry where an operator mapped the
	// sentiment lane to a snapshot kind
	lanes bool
	// display parses with displayAgents instead of intentAgents
	display bool
	// noSilence parses with a registry without agent.silence
	noSilence bool

	want Kind
	src  core.SourceRef
	cond tripwire.Condition
	push bool
	// cooldown in seconds; 0 means the default hour
	cooldown int
	// desc, label and note are checked when set; note "-" means none
	desc, label, note string
	mine              bool
	// question is a part of the clarifying question
	question string
}

var intentCases = []intentCase{
	// the examples
	{name: "gi below", text: "tell me when GI drops below 0.70",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.70), push: true, desc: "GI below 0.70", label: "GI drops below 0.70", note: "-"},
	{name: "agent offline", text: "let me know if EVE goes offline",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true, desc: "EVE is offline", label: "EVE goes offline"},
	{name: "vault reaches", text: "watch the vault balance and ping me when it reaches 45",
		want: Proposal, src: srcRef("vault.balance"), cond: condGTE(45), push: true, desc: "vault balance at or above 45", label: "Vault balance reaches 45"},
	{name: "worried breaker", text: "I'm worried the breaker will open for Ani",
		want: Proposal, src: srcRef("breaker.state", "Ani"), cond: condEQ("open"), push: true, desc: "Ani's breaker is open"},
	{name: "card needs my decision", text: "alert me when any card needs my decision",
		want: Proposal, src: srcRef("cards.needs_decision"), cond: condGT(0), push: true, desc: "a card needs your decision", mine: true},
	{name: "unknown lane", text: "tell me if the sentiment lane changes",
		want: Question, question: "What should I watch?"},
	{name: "configured lane", text: "tell me if the sentiment lane changes", lanes: true,
		want: Proposal, src: srcRef("lane.sentiment"), cond: condChanged(), push: true, note: "-"},
	{name: "watch gi", text: "watch GI",
		want: Proposal, src: srcRef("integrity.gi"), cond: condChanged(), push: false, desc: "GI changes", note: "No number or direction"},
	{name: "seed compound", text: "tell me when GI drops below 0.70 while the sentiment lane is degraded", lanes: true,
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condLT(0.70), condOn("lane.sentiment", "", condEQ("degraded"))), push: true,
		desc: "GI below 0.70 while sentiment lane is degraded", label: "GI drops below 0.70 while the sentiment lane is degraded"},

	// not a watch intent
	{name: "fleet question", text: "what's the fleet doing?", want: None},
	{name: "agent question", text: "is EVE ok?", want: None},
	{name: "command", text: "!tw list", want: None},
	{name: "thanks", text: "thanks!", want: None},
	{name: "watched a movie", text: "I watched a movie", want: None},
	{name: "what you think", text: "let me know what you think", want: None},
	{name: "greeting", text: "hello Jarvis", want: None},
	{name: "how is gi", text: "how is GI doing?", want: None},
	{name: "what is the vault", text: "what is the vault balance", want: None},
	{name: "statement", text: "GI is at 0.72 today", want: None},
	{name: "opinion", text: "I think GI will drop below 0.7 soon", want: None},
	{name: "do you watch", text: "do you watch GI?", want: None},
	{name: "joke", text: "tell me a joke", want: None},
	{name: "tell me about", text: "tell me about EVE", want: None},
	{name: "watch out", text: "watch out!", want: None},
	{name: "personal", text: "let me know if you need anything", want: None},
	{name: "done", text: "let me know when you're done", want: None},
	{name: "worried about an exam", text: "I'm worried about my exam", want: None},
	{name: "empty", text: "   ", want: None},
	{name: "asks how it is", text: "can you tell me if GI is ok?", want: None},
	{name: "if it works", text: "let me know if it works", want: None},

	// clarifying questions
	{name: "gets bad", text: "tell me when it gets bad", want: Question, question: "integrity.gi"},
	{name: "anything changes", text: "keep me posted if anything changes", want: Question, question: "What should I watch?"},
	{name: "worried fleet", text: "I'm worried about the fleet", want: Question, question: "What should I watch?"},
	{name: "unknown agent", text: "tell me when Bob goes offline", want: Question, question: "Which agent do you mean: EVE, Ani or ZEUS?"},
	{name: "mii of whom", text: "tell me when the MII drops below 0.5", want: Question, question: "Which agent"},
	{name: "which card", text: "tell me when the card state changes", want: Question, question: "Which card?"},
	{name: "which json path", text: "tell me when https://status.example.org/api.json drops below 5", want: Question, question: "Which JSON path"},
	{name: "host not allowed", text: "watch https://evil.example.com/api.json data.gi and tell me when it drops below 0.7",
		want: Question, question: "not allowed"},
	{name: "and with or", text: "tell me when GI drops below 0.7 and EVE goes offline or Ani goes offline",
		want: Question, question: "all of those"},
	{name: "too many", text: "tell me when GI drops below 0.7 and EVE goes offline and Ani goes offline and ZEUS goes offline and the vault reaches 45",
		want: Question, question: "at most 4"},
	{name: "unless changes", text: "tell me when GI drops below 0.7 unless EVE changes", want: Question, question: "not happening"},

	// comparators, numbers and percentages
	{name: "falls under percent", text: "tell me when GI falls under 70%",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.70), push: true, desc: "GI below 70%", note: "-"},
	{name: "bare percent on a ratio", text: "tell me when GI drops below 70",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.70), push: true, note: "read 70 as 70%"},
	{name: "percent elsewhere", text: "tell me when the vault balance hits 45%",
		want: Proposal, src: srcRef("vault.balance"), cond: condGTE(45), push: true, note: "I read 45% as 45."},
	{name: "symbol", text: "Jarvis, could you please tell me when GI < 0.7?",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true},
	{name: "symbol gte", text: "Notify me when GI >= 0.9",
		want: Proposal, src: srcRef("integrity.gi"), cond: condGTE(0.9), push: true},
	{name: "less than", text: "ping me when GI is less than .65",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.65), push: true},
	{name: "at most", text: "ping me when the vault is at most 10",
		want: Proposal, src: srcRef("vault.balance"), cond: condLTE(10), push: true},
	{name: "or less", text: "tell me when the vault is 0.5 or less",
		want: Proposal, src: srcRef("vault.balance"), cond: condLTE(0.5), push: true},
	{name: "exceeds", text: "alert me if the vault exceeds 1,000",
		want: Proposal, src: srcRef("vault.balance"), cond: condGT(1000), push: true},
	{name: "more than count", text: "tell me when more than 3 cards are blocked",
		want: Proposal, src: srcRef("cards.blocked"), cond: condGT(3), push: true},
	{name: "equals", text: "tell me when the vault equals 45",
		want: Proposal, src: srcRef("vault.balance"), cond: condEQ(45.0), push: true},
	{name: "is not below", text: "tell me if GI is not below 0.7",
		want: Proposal, src: srcRef("integrity.gi"), cond: condGTE(0.7), push: true},
	{name: "between", text: "tell me when GI is between 0.5 and 0.7",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condGTE(0.5), condLTE(0.7)), push: true, desc: "GI between 0.5 and 0.7"},
	{name: "outside", text: "tell me when GI is outside 0.5 and 0.7",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.5), condGT(0.7)), push: true},
	{name: "postfix wins", text: "tell me when GI hits 0.7 or lower",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLTE(0.7), push: true},
	{name: "direction in a question", text: "could you tell me when GI drops?",
		want: Proposal, src: srcRef("integrity.gi"), cond: condChanged(), push: true, note: "No number or direction"},
	{name: "direction only", text: "tell me when GI drops",
		want: Proposal, src: srcRef("integrity.gi"), cond: condChanged(), push: true, note: "No number or direction"},
	{name: "kind name", text: "ping me when integrity.gi < 0.7",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, desc: "integrity.gi below 0.7"},
	{name: "alias two words", text: "please let me know as soon as global integrity dips under 0.65",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.65), push: true},
	{name: "seconds kind", text: "let me know if EVE's heartbeat age is over 10 minutes",
		want: Proposal, src: srcRef("agent.heartbeat_age", "EVE"), cond: condGT(600), push: true},

	// states, agents and params
	{name: "lower-case agent", text: "tell me if eve goes offline",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true},
	{name: "stops reporting", text: "tell me when EVE stops reporting",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true},
	{name: "comes back online", text: "tell me when EVE comes back online",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("online"), push: true},
	{name: "misses a heartbeat", text: "ping me every time EVE misses a heartbeat",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("late"), push: true},
	{name: "is down", text: "tell me when EVE is down",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true},
	{name: "polite question", text: "hey, can you let me know if EVE goes offline?",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true},
	{name: "isn't online", text: "let me know when EVE isn't online",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condNEQ("online"), push: true},
	{name: "kind name with agent", text: "alert me when agent.status for EVE is late",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("late"), push: true},
	{name: "turns red or yellow", text: "ping me if EVE turns red or yellow",
		want: Proposal, src: srcRef("agent.mode", "EVE"), cond: condIn("red", "yellow"), push: true, desc: "EVE's mode is red or yellow"},
	{name: "neither", text: "tell me if EVE's mode isn't green or yellow",
		want: Proposal, src: srcRef("agent.mode", "EVE"), cond: condAll(condNEQ("green"), condNEQ("yellow")), push: true,
		desc: "EVE's mode is not green or yellow"},
	{name: "offline or late", text: "tell me if EVE is offline or late",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condIn("offline", "late"), push: true, label: "EVE is offline or late"},
	{name: "value of another kind", text: "tell me when GI drops below 0.7 or offline",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, note: `I left out "offline"`},
	{name: "mode isn't green", text: "tell me if EVE's mode isn't green",
		want: Proposal, src: srcRef("agent.mode", "EVE"), cond: condNEQ("green"), push: true},
	{name: "mode changes", text: "tell me when EVE's mode changes",
		want: Proposal, src: srcRef("agent.mode", "EVE"), cond: condChanged(), push: true, note: "-"},
	{name: "curly possessive", text: "tell me if EVE’s MII falls below 0.9",
		want: Proposal, src: srcRef("agent.mii", "EVE"), cond: condLT(0.9), push: true},
	{name: "breaker opens", text: "tell me when the breaker opens for EVE",
		want: Proposal, src: srcRef("breaker.state", "EVE"), cond: condEQ("open"), push: true},
	{name: "breaker half-open", text: "tell me when EVE's breaker is half-open",
		want: Proposal, src: srcRef("breaker.state", "EVE"), cond: condEQ("half-open"), push: true},
	{name: "watch breaker", text: "watch the breaker for ZEUS",
		want: Proposal, src: srcRef("breaker.state", "ZEUS"), cond: condChanged(), push: false, note: "No number or direction"},
	{name: "keep an eye on agent", text: "keep an eye on EVE",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condChanged(), push: false},
	{name: "agent then pronoun", text: "keep an eye on EVE and tell me when her mode turns red",
		want: Proposal, src: srcRef("agent.mode", "EVE"), cond: condEQ("red"), push: true, label: "EVE's mode turns red"},
	{name: "journal count", text: "monitor EVE's journal count and tell me if it goes above 20",
		want: Proposal, src: srcRef("agent.journal_count", "EVE"), cond: condGT(20), push: true},
	{name: "micro-agent", text: "watch micro-agent DAEDALUS-µ5 and tell me when it drops below 0.8, at most every 6 hours",
		want: Proposal, src: srcRef("micro-agent.value", "DAEDALUS-µ5"), cond: condLT(0.8), push: true, cooldown: 6 * 3600},
	{name: "card state", text: "tell me when card_abc123 is done",
		want: Proposal, src: srcRef("card.state", "card_abc123"), cond: condEQ("done"), push: true},
	{name: "card needs a decision", text: "tell me when card_x9 needs a decision",
		want: Proposal, src: srcRef("card.state", "card_x9"), cond: condEQ("needs_decision"), push: true, desc: "card_x9 needs a decision"},
	// found by FuzzParse
	{name: "fuzz: card id in capitals", text: "tel me when CArd_00", want: None},
	{name: "card state or", text: "tell me if card_abc is blocked or done",
		want: Proposal, src: srcRef("card.state", "card_abc"), cond: condIn("blocked", "done"), push: true},
	{name: "decisions waiting", text: "tell me if there are more than 5 decisions waiting",
		want: Proposal, src: srcRef("cards.needs_decision"), cond: condGT(5), push: true},
	{name: "card gets blocked", text: "tell me when a card gets blocked",
		want: Proposal, src: srcRef("cards.blocked"), cond: condGT(0), push: true, desc: "a card is blocked"},
	{name: "alert about", text: "alert me about blocked cards",
		want: Proposal, src: srcRef("cards.blocked"), cond: condGT(0), push: true},
	{name: "someone's decision", text: "alert me when @alice:example.org has a card waiting for a decision",
		want: Proposal, src: srcRef("cards.needs_decision", "@alice:example.org"), cond: condGT(0), push: true},
	{name: "url fetch", text: "watch https://status.example.org/api.json data.gi and tell me when it drops below 0.7",
		want: Proposal, src: srcRef("url-fetch", "https://status.example.org/api.json data.gi"), cond: condLT(0.7), push: true},
	{name: "rss", text: "tell me when https://blog.example.org/feed.xml mentions outage",
		want: Proposal, src: srcRef("rss", "https://blog.example.org/feed.xml outage"), cond: condChanged(), push: true, note: "-"},
	{name: "rss quoted", text: `watch the news at https://blog.example.org/rss about "disk full"`,
		want: Proposal, src: srcRef("rss", "https://blog.example.org/rss disk full"), cond: condChanged(), push: false},

	// compounds
	{name: "or between agents", text: "let me know if EVE or Ani goes offline",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condAny(condEQ("offline"), condOn("agent.status", "Ani", condEQ("offline"))), push: true,
		label: "EVE or Ani goes offline"},
	{name: "both agents", text: "tell me whenever EVE and Ani are both offline",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condAll(condEQ("offline"), condOn("agent.status", "Ani", condEQ("offline"))), push: true},
	{name: "any agent", text: "tell me when any agent goes offline",
		want: Proposal, src: srcRef("agent.status", "EVE"),
		cond: condAny(condEQ("offline"), condOn("agent.status", "Ani", condEQ("offline")), condOn("agent.status", "ZEUS", condEQ("offline"))), push: true},
	{name: "all agents", text: "tell me when all agents go offline",
		want: Proposal, src: srcRef("agent.status", "EVE"),
		cond: condAll(condEQ("offline"), condOn("agent.status", "Ani", condEQ("offline")), condOn("agent.status", "ZEUS", condEQ("offline"))), push: true},
	{name: "an agent's breaker", text: "tell me when an agent's breaker opens",
		want: Proposal, src: srcRef("breaker.state", "EVE"),
		cond: condAny(condEQ("open"), condOn("breaker.state", "Ani", condEQ("open")), condOn("breaker.state", "ZEUS", condEQ("open"))), push: true},
	{name: "agent named last", text: "notify me when EVE's MII drops below 0.5 or Ani's",
		want: Proposal, src: srcRef("agent.mii", "EVE"), cond: condAny(condLT(0.5), condOn("agent.mii", "Ani", condLT(0.5))), push: true},
	{name: "same source or", text: "tell me when GI drops below 0.7 or rises above 0.95",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.7), condGT(0.95)), push: true},
	{name: "agent carried over", text: "let me know if EVE goes offline or her MII drops below 0.5",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condAny(condEQ("offline"), condOn("agent.mii", "EVE", condLT(0.5))), push: true},
	{name: "or with lane", text: "tell me when GI drops below 0.70 or the sentiment lane is degraded", lanes: true,
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.70), condOn("lane.sentiment", "", condEQ("degraded"))), push: true},
	{name: "unless", text: "tell me when GI drops below 0.7 unless EVE is offline",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condLT(0.7), condOn("agent.status", "EVE", condNEQ("offline"))), push: true,
		desc: "GI below 0.7 and EVE is not offline"},
	{name: "symbols", text: "ping me when GI < 0.7 && vault > 45",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condLT(0.7), condOn("vault.balance", "", condGT(45))), push: true},
	{name: "left out", text: "tell me when GI drops below 0.7 or something weird happens",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, note: `I left out "something weird happens"`},
	{name: "watch two things", text: "watch GI and EVE",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condChanged(), condOn("agent.status", "EVE", condChanged())), push: false},
	{name: "lane not degraded", text: "tell me when the sentiment lane is not degraded", lanes: true,
		want: Proposal, src: srcRef("lane.sentiment"), cond: condNEQ("degraded"), push: true},

	// push and cooldown
	{name: "quietly once a day", text: "tell me when GI falls under 70% quietly, no more than once a day",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.70), push: false, cooldown: 24 * 3600, label: "GI falls under 70%"},
	{name: "journal", text: "just note it in the journal when the vault goes over 100",
		want: Proposal, src: srcRef("vault.balance"), cond: condGT(100), push: false},
	{name: "don't ping", text: "don't ping me, just log it when GI drops below 0.6",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.6), push: false},
	{name: "watch is quiet", text: "can you watch GI?",
		want: Proposal, src: srcRef("integrity.gi"), cond: condChanged(), push: false},
	{name: "watch and ping", text: "watch blocked cards and ping me",
		want: Proposal, src: srcRef("cards.blocked"), cond: condGT(0), push: true},
	{name: "once an hour at most", text: "warn me if ZEUS goes red, once an hour at most",
		want: Proposal, src: srcRef("agent.mode", "ZEUS"), cond: condEQ("red"), push: true, cooldown: 3600, label: "ZEUS goes red"},
	{name: "twice a day", text: "watch the vault and tell me if it's at least 45, no more than twice a day",
		want: Proposal, src: srcRef("vault.balance"), cond: condGTE(45), push: true, cooldown: 12 * 3600},
	{name: "cooldown with a", text: "tell me when GI drops below 0.7 with a 2h cooldown",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, cooldown: 2 * 3600, label: "GI drops below 0.7"},
	{name: "cooldown of", text: "tell me when GI drops below 0.7, cooldown of 30 minutes",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, cooldown: 30 * 60},
	{name: "cooldown capped", text: "tell me when GI drops below 0.7 no more than once a year",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, cooldown: tripwire.MaxCooldownSeconds, note: "at most 30 days"},
	{name: "set a tripwire", text: "set a tripwire for GI below 0.7",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: false},
	{name: "set an alert", text: "set an alert for when EVE goes offline",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true},
	{name: "be notified", text: "I'd like to be notified when GI drops below 0.7",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true},
	{name: "for me", text: "keep an eye on GI for me and tell me if it drops under 0.6",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.6), push: true, label: "GI drops under 0.6"},
	{name: "conjunction first", text: "if GI drops below 0.7, ping me",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true},
	{name: "worried that", text: "I'm a bit worried that EVE will go offline",
		want: Proposal, src: srcRef("agent.status", "EVE"), cond: condEQ("offline"), push: true},

	// how long since an agent last reported: agent.silence
	{name: "silence: hasn't reported for", text: "tell me if ZEUS hasn't reported for 2 hours",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(7200), push: true, desc: "ZEUS's silence at or above 2 hours", note: "-"},
	{name: "silence: hasn't reported in", text: "let me know if EVE hasn't reported in 30 minutes",
		want: Proposal, src: srcRef("agent.silence", "EVE"), cond: condGTE(1800), push: true},
	{name: "silence: has not reported", text: "alert me when Ani has not reported for 90 minutes",
		want: Proposal, src: srcRef("agent.silence", "Ani"), cond: condGTE(5400), push: true},
	{name: "silence: been silent", text: "let me know when EVE has been silent for 30 minutes",
		want: Proposal, src: srcRef("agent.silence", "EVE"), cond: condGTE(1800), push: true},
	{name: "silence: quiet for more than", text: "alert me if Ani goes quiet for more than an hour",
		want: Proposal, src: srcRef("agent.silence", "Ani"), cond: condGT(3600), push: true, desc: "Ani's silence above an hour"},
	{name: "silence: no heartbeat from", text: "ping me if there's no heartbeat from ZEUS for 15 minutes",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(900), push: true},
	{name: "silence: not sent a heartbeat", text: "tell me when EVE has not sent a heartbeat in 45 minutes",
		want: Proposal, src: srcRef("agent.silence", "EVE"), cond: condGTE(2700), push: true},
	{name: "silence: offline for", text: "let me know if ZEUS has been offline for 10 minutes",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(600), push: true},
	{name: "silence: stops reporting for", text: "tell me if Ani stops reporting for 3 hours",
		want: Proposal, src: srcRef("agent.silence", "Ani"), cond: condGTE(3 * 3600), push: true},
	{name: "silence: it's been since", text: "notify me when it's been 2 hours since ZEUS last reported",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(7200), push: true},
	{name: "silence: checked in", text: "tell me if EVE hasn't checked in for a day",
		want: Proposal, src: srcRef("agent.silence", "EVE"), cond: condGTE(86400), push: true},
	{name: "silence: half an hour", text: "warn me if ZEUS has gone dark for half an hour",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(1800), push: true},
	{name: "silence: in the last", text: "tell me if we haven't heard from EVE in the last 20 minutes",
		want: Proposal, src: srcRef("agent.silence", "EVE"), cond: condGTE(1200), push: true},
	{name: "silence: short unit", text: "ping me when ZEUS has been unreachable for 45min",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(2700), push: true},
	{name: "silence: at least", text: "tell me if Ani has been silent for at least 2 hours",
		want: Proposal, src: srcRef("agent.silence", "Ani"), cond: condGTE(7200), push: true},
	{name: "silence: quietly", text: "quietly note it if EVE hasn't reported for 6 hours",
		want: Proposal, src: srcRef("agent.silence", "EVE"), cond: condGTE(6 * 3600), push: false},
	{name: "silence: with a cooldown", text: "tell me if ZEUS hasn't reported for an hour, at most once a day",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGTE(3600), push: true, cooldown: 86400},
	{name: "silence: any agent", text: "tell me when any agent hasn't reported for an hour",
		want: Proposal, src: srcRef("agent.silence", "EVE"),
		cond: condAny(condGTE(3600), condOn("agent.silence", "Ani", condGTE(3600)), condOn("agent.silence", "ZEUS", condGTE(3600))), push: true},
	{name: "silence: or with mode", text: "tell me if EVE turns red or hasn't reported for 2 hours",
		want: Proposal, src: srcRef("agent.mode", "EVE"), cond: condAny(condEQ("red"), condOn("agent.silence", "EVE", condGTE(7200))), push: true},
	{name: "silence: last heartbeat older than", text: "tell me if EVE's last heartbeat is more than 5 minutes old",
		want: Proposal, src: srcRef("agent.heartbeat_age", "EVE"), cond: condGT(300), push: true},
	{name: "silence: the kind by name", text: "alert me when ZEUS's silence exceeds 3 hours",
		want: Proposal, src: srcRef("agent.silence", "ZEUS"), cond: condGT(3 * 3600), push: true, desc: "ZEUS's silence above 3 hours"},
	{name: "silence: heartbeat age without agent.silence", text: "tell me if ZEUS hasn't reported for 2 hours", noSilence: true,
		want: Proposal, src: srcRef("agent.heartbeat_age", "ZEUS"), cond: condGTE(7200), push: true, desc: "ZEUS's heartbeat age at or above 2 hours"},
	{name: "silence: goes offline is still the status", text: "tell me when ZEUS goes offline",
		want: Proposal, src: srcRef("agent.status", "ZEUS"), cond: condEQ("offline"), push: true},
	{name: "silence: a question", text: "has ZEUS reported in the last 2 hours?", want: None},
	{name: "silence: how long", text: "how long has ZEUS been silent?", want: None},
	{name: "silence: a statement", text: "ZEUS hasn't reported for 2 hours", want: None},
	{name: "silence: did it", text: "did EVE go offline for 10 minutes?", want: None},
	{name: "silence: small talk", text: "I was away for 2 hours", want: None},

	// display names: hyphens, digits, letters beyond ASCII, any case, no accents
	{name: "display: as written", text: "tell me when Zoë-2 goes offline", display: true,
		want: Proposal, src: srcRef("agent.status", "Zoë-2"), cond: condEQ("offline"), push: true, desc: "Zoë-2 is offline"},
	{name: "display: lower case", text: "tell me when zoë-2 goes offline", display: true,
		want: Proposal, src: srcRef("agent.status", "Zoë-2"), cond: condEQ("offline"), push: true},
	{name: "display: no accent, capitals", text: "tell me when ZOE-2 goes offline", display: true,
		want: Proposal, src: srcRef("agent.status", "Zoë-2"), cond: condEQ("offline"), push: true},
	{name: "display: possessive without accent", text: "tell me when Zoe-2's MII drops below 0.5", display: true,
		want: Proposal, src: srcRef("agent.mii", "Zoë-2"), cond: condLT(0.5), push: true, desc: "Zoë-2's MII below 0.5"},
	{name: "display: hyphenated", text: "let me know if night-owl is late", display: true,
		want: Proposal, src: srcRef("agent.status", "night-owl"), cond: condEQ("late"), push: true},
	{name: "display: hyphenated in capitals", text: "tell me if NIGHT-OWL's mode turns red", display: true,
		want: Proposal, src: srcRef("agent.mode", "night-owl"), cond: condEQ("red"), push: true},
	{name: "display: silent in capitals", text: "tell me if NIGHT-OWL hasn't reported for an hour", display: true,
		want: Proposal, src: srcRef("agent.silence", "night-owl"), cond: condGTE(3600), push: true},
	{name: "display: ae and o with stroke", text: "tell me if Ærøskøbing goes offline", display: true,
		want: Proposal, src: srcRef("agent.status", "Ærøskøbing"), cond: condEQ("offline"), push: true},
	{name: "display: folded to ASCII", text: "tell me if aeroskobing goes offline", display: true,
		want: Proposal, src: srcRef("agent.status", "Ærøskøbing"), cond: condEQ("offline"), push: true},
	{name: "display: umlaut left out", text: "tell me if muller-7 goes red", display: true,
		want: Proposal, src: srcRef("agent.mode", "Müller-7"), cond: condEQ("red"), push: true},
	{name: "display: umlaut kept", text: "ping me when MÜLLER-7's breaker opens", display: true,
		want: Proposal, src: srcRef("breaker.state", "Müller-7"), cond: condEQ("open"), push: true},
	{name: "display: digits and hyphen", text: "tell me if r2-d2's breaker opens", display: true,
		want: Proposal, src: srcRef("breaker.state", "R2-D2"), cond: condEQ("open"), push: true, desc: "R2-D2's breaker is open"},
	{name: "display: two of them", text: "let me know if zoe-2 or night-owl goes offline", display: true,
		want: Proposal, src: srcRef("agent.status", "Zoë-2"), cond: condAny(condEQ("offline"), condOn("agent.status", "night-owl", condEQ("offline"))), push: true},
	{name: "display: unknown", text: "tell me when zoe-3 goes offline", display: true, want: Question, question: "Which agent do you mean"},
	{name: "display: alias without accent", text: "tell me when the cafe lane is degraded", lanes: true,
		want: Proposal, src: srcRef("lane.café"), cond: condEQ("degraded"), push: true},
	{name: "display: alias in capitals", text: "tell me when the CAFÉ LANE changes", lanes: true,
		want: Proposal, src: srcRef("lane.café"), cond: condChanged(), push: true},

	// ranges of amount
	{name: "range: between", text: "tell me when GI is between 0.6 and 0.8",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condGTE(0.6), condLTE(0.8)), push: true, desc: "GI between 0.6 and 0.8"},
	{name: "range: between percents", text: "tell me when GI is between 60% and 80%",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condGTE(0.6), condLTE(0.8)), push: true},
	{name: "range: in the range", text: "tell me when GI is in the range 0.6 to 0.8",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condGTE(0.6), condLTE(0.8)), push: true},
	{name: "range: within", text: "tell me when the vault is within 10 and 20",
		want: Proposal, src: srcRef("vault.balance"), cond: condAll(condGTE(10), condLTE(20)), push: true},
	{name: "range: reversed ends", text: "tell me when GI is between 0.8 and 0.6",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAll(condGTE(0.6), condLTE(0.8)), push: true},
	{name: "range: not between", text: "tell me when GI is not between 0.6 and 0.8",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.6), condGT(0.8)), push: true, desc: "GI outside 0.6 and 0.8"},
	{name: "range: leaves the range", text: "tell me when GI leaves the range 0.6 to 0.8",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.6), condGT(0.8)), push: true},
	{name: "range: with a dash", text: "tell me when GI leaves the range 0.6-0.8",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.6), condGT(0.8)), push: true, desc: "GI outside 0.6 and 0.8"},
	{name: "range: with an en dash", text: "ping me when the vault is between 10–20",
		want: Proposal, src: srcRef("vault.balance"), cond: condAll(condGTE(10), condLTE(20)), push: true},
	{name: "range: under or over", text: "tell me when GI is under 0.6 or over 0.9",
		want: Proposal, src: srcRef("integrity.gi"), cond: condAny(condLT(0.6), condGT(0.9)), push: true},
	{name: "range: or more is one comparator", text: "tell me when the vault is 10 or more",
		want: Proposal, src: srcRef("vault.balance"), cond: condGTE(10), push: true},
	{name: "range: at least", text: "tell me if there are at least 2 blocked cards",
		want: Proposal, src: srcRef("cards.blocked"), cond: condGTE(2), push: true},
	{name: "range: fewer than", text: "tell me if fewer than 2 cards are blocked",
		want: Proposal, src: srcRef("cards.blocked"), cond: condLT(2), push: true},
	{name: "range: no more than", text: "tell me when the vault is no more than 10",
		want: Proposal, src: srcRef("vault.balance"), cond: condLTE(10), push: true},
	{name: "range: thousands", text: "tell me when the vault is above 2.5k",
		want: Proposal, src: srcRef("vault.balance"), cond: condGT(2500), push: true, desc: "vault above 2.5k"},
	{name: "range: small talk", text: "thanks, that was between 0.6 and 0.8", want: None},

	// ranges of time
	{name: "time: heartbeat age between", text: "tell me when EVE's heartbeat age is between 5 and 10 minutes",
		want: Proposal, src: srcRef("agent.heartbeat_age", "EVE"), cond: condAll(condGTE(300), condLTE(600)), push: true},
	{name: "time: between mixed units", text: "tell me when EVE's heartbeat age is between 90s and 10 minutes",
		want: Proposal, src: srcRef("agent.heartbeat_age", "EVE"), cond: condAll(condGTE(90), condLTE(600)), push: true},
	{name: "time: hours with a fraction", text: "tell me if EVE's heartbeat age exceeds 1.5 hours",
		want: Proposal, src: srcRef("agent.heartbeat_age", "EVE"), cond: condGT(5400), push: true},
	{name: "time: seconds", text: "tell me if EVE's heartbeat age is over 90 seconds",
		want: Proposal, src: srcRef("agent.heartbeat_age", "EVE"), cond: condGT(90), push: true},
	{name: "time: for 10 minutes", text: "tell me if GI stays below 0.7 for 10 minutes",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, note: `I left out "for 10 minutes"`},
	{name: "time: over the last day", text: "tell me if GI drops below 0.7 over the last day",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, note: `I left out "over the last day"`},
	{name: "time: for more than", text: "tell me when the vault goes above 100 for more than 5 minutes",
		want: Proposal, src: srcRef("vault.balance"), cond: condGT(100), push: true, note: `I left out "for more than 5 minutes"`},
	{name: "time: for half an hour", text: "tell me if GI is under 0.7 for half an hour",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, note: `I left out "for half an hour"`},
	{name: "time: count in an hour", text: "tell me when more than 3 cards are blocked in an hour",
		want: Proposal, src: srcRef("cards.blocked"), cond: condGT(3), push: true, note: `I left out "in an hour"`},
	{name: "time: restarts in an hour", text: "tell me if ZEUS restarts more than 3 times in an hour",
		want: Proposal, src: srcRef("agent.crash_loop", "ZEUS"), cond: condGT(3), push: true, desc: "ZEUS's restarts above 3", note: `I left out "in an hour"`},
	{name: "time: journal entries in an hour", text: "tell me if EVE writes more than 20 journal entries in an hour",
		want: Proposal, src: srcRef("agent.journal_count", "EVE"), cond: condGT(20), push: true, note: `I left out "in an hour"`},
	{name: "time: cooldown is not a window", text: "tell me when GI drops below 0.7, at most once an hour",
		want: Proposal, src: srcRef("integrity.gi"), cond: condLT(0.7), push: true, cooldown: 3600, note: "-"},
	{name: "time: a question", text: "what was GI over the last day?", want: None},
}

func TestIntentParse(t *testing.T) {
	for _, tt := range intentCases {
		t.Run(tt.name, func(t *testing.T) {
			reg := intentRegistry()
			if tt.lanes {
				reg = laneRegistry()
			}
			if tt.noSilence {
				reg = core.NewSourceRegistry(slices.DeleteFunc(intentKinds(), func(k core.SourceKind) bool { return k.Kind == fleet.SourceAgentSilence })...)
			}
			agents := intentAgents
			if tt.display {
				agents = displayAgents
			}
			got := Parse(tt.text, reg, agents)
			if got.Kind != tt.want {
				t.Fatalf("Parse(%q) is kind %d (%+v, question %q); want %d", tt.text, got.Kind, got.Draft, got.Question, tt.want)
			}
			switch tt.want {
			case None:
				if got.Question != "" || got.Draft.Source.Kind != "" {
					t.Errorf("not an intent, but got %+v", got)
				}
				return
			case Question:
				if !strings.Contains(got.Question, tt.question) {
					t.Errorf("question %q does not say %q", got.Question, tt.question)
				}
				return
			}
			d := got.Draft
			if d.Source != tt.src {
				t.Errorf("source = %v; want %v", d.Source, tt.src)
			}
			if !reflect.DeepEqual(d.Condition, tt.cond) {
				t.Errorf("condition = %s; want %s", intentJSON(d.Condition), intentJSON(tt.cond))
			}
			if d.Action == nil || !d.Action.Journal || d.Action.Push != tt.push {
				t.Errorf("action = %+v; want journal and push %v", d.Action, tt.push)
			}
			wantCooldown := tt.cooldown
			if wantCooldown == 0 {
				wantCooldown = tripwire.DefaultCooldownSeconds
			}
			if d.CooldownSeconds == nil || *d.CooldownSeconds != wantCooldown {
				t.Errorf("cooldown = %v; want %d", d.CooldownSeconds, wantCooldown)
			}
			if d.Rationale != "" {
				t.Errorf("rationale = %q; the caller fills it", d.Rationale)
			}
			if tt.desc != "" && got.Description != tt.desc {
				t.Errorf("description = %q; want %q", got.Description, tt.desc)
			}
			if tt.label != "" && d.Label != tt.label {
				t.Errorf("label = %q; want %q", d.Label, tt.label)
			}
			switch {
			case tt.note == "-" && got.Note != "":
				t.Errorf("note = %q; want none", got.Note)
			case tt.note != "" && tt.note != "-" && !strings.Contains(got.Note, tt.note):
				t.Errorf("note = %q; want it to say %q", got.Note, tt.note)
			}
			if got.Mine != tt.mine {
				t.Errorf("mine = %v; want %v", got.Mine, tt.mine)
			}
			if err := armable(d, "> "+tt.text).Validate(reg); err != nil {
				t.Errorf("the proposal does not validate: %v", err)
			}
		})
	}
}

func TestIntentQuestionListsKinds(t *testing.T) {
	reg := intentRegistry()
	q := Parse("tell me when it gets bad", reg, intentAgents).Question
	for _, k := range reg.Kinds() {
		t.Run(k.Kind, func(t *testing.T) {
			if !strings.Contains(q, k.Kind) || !strings.Contains(q, k.Description) {
				t.Errorf("the question does not offer %s (%s):\n%s", k.Kind, k.Description, q)
			}
		})
	}
}

// The registry's aliases are the only names of a kind the parser knows,
// besides the kind itself.
func TestIntentAliasesFromRegistry(t *testing.T) {
	resolve := func(context.Context, string) (core.Observation, error) { return core.Observation{}, nil }
	bare := core.NewSourceRegistry(core.SourceKind{Kind: "integrity.gi", Description: "the global integrity index (0–1)",
		Value: core.ValueRatio, Resolve: resolve})
	named := core.NewSourceRegistry(core.SourceKind{Kind: "integrity.gi", Aliases: []string{"Integrity Index"},
		Description: "the global integrity index (0–1)", Value: core.ValueRatio, Resolve: resolve})
	for _, tt := range []struct {
		name string
		reg  *core.SourceRegistry
		text string
		want Kind
	}{
		{name: "no alias", reg: bare, text: "tell me when GI drops below 0.7", want: Question},
		{name: "kind name", reg: bare, text: "tell me when integrity.gi drops below 0.7", want: Proposal},
		{name: "configured alias", reg: named, text: "tell me when the integrity index drops below 0.7", want: Proposal},
		{name: "alias not configured", reg: named, text: "tell me when GI drops below 0.7", want: Question},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Parse(tt.text, tt.reg, nil)
			if got.Kind != tt.want {
				t.Fatalf("Parse(%q) is kind %d (%+v); want %d", tt.text, got.Kind, got, tt.want)
			}
			if got.Kind == Proposal && (got.Draft.Source.Kind != "integrity.gi" || !reflect.DeepEqual(got.Draft.Condition, condLT(0.7))) {
				t.Errorf("draft = %s; want integrity.gi < 0.7", intentJSON(got.Draft))
			}
		})
	}
}

func intentJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// The values the parser knows words for are values the kinds declare: the
// fleet's and the backlog's registrations, and the test registry (for
// breaker.state, which app registers).
func TestIntentVocabulariesAreCategories(t *testing.T) {
	registered := core.NewSourceRegistry()
	new(fleet.Service).RegisterSources(registered)
	new(card.Service).RegisterSources(registered)
	for name, reg := range map[string]*core.SourceRegistry{"registered": registered, "test": intentRegistry()} {
		for kind, vocab := range vocabularies {
			k, ok := reg.Lookup(kind)
			if !ok {
				continue
			}
			t.Run(name+" "+kind, func(t *testing.T) {
				if k.Value != core.ValueCategory {
					t.Fatalf("the parser has words for the values of %s, a %q kind", kind, k.Value)
				}
				for _, sw := range vocab {
					if !slices.Contains(k.Categories, sw.value) {
						t.Errorf("%q is none of the categories of %s: %v", sw.value, kind, k.Categories)
					}
				}
			})
		}
	}
}
