package commands

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// This file reads plain sentences such as "tell me when GI drops below
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
//   - Percentages: a kind whose description says it runs from 0 to 1
//     ("(0–1)", "(0 to 1)": GI, MII) is a ratio; there "70%" is 0.70, and a
//     bare number above 1 and at most 100 is read as a percentage too ("GI
//     below 70"), with a note. On any other kind "45%" is 45, with a note.
//     A kind whose description speaks of seconds takes durations ("over 10
//     minutes" is 600).
//   - A number or direction left out falls back to `changed`, with a note; a
//     count ("how many …" kinds, e.g. cards.needs_decision) without a number
//     is "more than 0" instead ("when a card needs my decision").
//   - "and", "while", a second "when"/"if" combine conditions with all, "or"
//     with any, "unless" with all and the condition negated; mixing and and
//     or is asked about. "Any agent" is one condition per configured agent
//     (at most four). Values of one state joined by "or" are one `in`.
//   - The cooldown is always set on the draft (default one hour), so the
//     proposal shows what will be armed; more than 30 days is capped, with a
//     note.
//   - What cannot be built becomes a question: no known kind ("tell me when
//     it gets bad" lists what Jarvis can watch), no agent, card id, URL path
//     or feed keyword, and a draft the registry rejects.

// IntentKind says what a sentence asked of Jarvis.
type IntentKind int

// The kinds of watch intent.
const (
	// IntentNone: the sentence is not a request to watch something (small
	// talk, a question, a command).
	IntentNone IntentKind = iota
	// IntentProposal: a tripwire to propose, in Draft.
	IntentProposal
	// IntentQuestion: a request to watch something Jarvis needs to ask
	// about first, in Question.
	IntentQuestion
)

// WatchIntent is what ParseWatchIntent read in a sentence.
type WatchIntent struct {
	Kind IntentKind
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
	// Question is the clarifying question to ask (IntentQuestion).
	Question string
}

// intentMaxBytes bounds what is read as a watch request: asking Jarvis to
// watch something is one sentence, and a longer message is talk.
const intentMaxBytes = 1000

// ParseWatchIntent reads a chat message as a request to watch something.
// reg is the source registry; agents are the configured agent names, the
// params of agent.* and breaker.state. A proposal always passes
// core.Definition.Validate once a rationale is filled in: a draft the
// registry rejects (a URL whose host is not allowed) becomes a question.
func ParseWatchIntent(text string, reg *core.SourceRegistry, agents []string) WatchIntent {
	w := parseWatch(text, reg, agents)
	if w.Kind != IntentProposal {
		return w
	}
	if err := checkDraft(w.Draft, reg); err != nil {
		return askWatch(fmt.Sprintf("I can't watch that (%v). What should I watch instead?", err))
	}
	return w
}

// checkDraft validates a draft the way TripwireService.Arm does, with a
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

// askWatch is a clarifying question.
func askWatch(q string) WatchIntent { return WatchIntent{Kind: IntentQuestion, Question: q} }

// ---- tokens ----

type tokKind uint8

const (
	tWord tokKind = iota
	tNum
	tSym
	tPunct
	tURL
	tMXID
)

type connKind uint8

// Connectors between clauses; a larger value wins when several stand
// between two clauses ("… or when …" is or).
const (
	connNone connKind = iota
	connNeutral
	connAll
	connAny
)

type tokRole uint8

const (
	roleNone tokRole = iota
	roleAlias
	roleAgent
	roleParam
)

type sentToken struct {
	kind       tokKind
	text       string // as written, a possessive 's dropped
	low        string // lower case, ’ read as '
	start, end int    // byte offsets of text in the sentence
	num        float64
	isNum      bool   // num holds a value (tNum, or a word like "6h")
	unit       string // the letters after the number in "6h"
	pct        bool
	used       bool // taken by the lead-in, an intent, push or cooldown phrase
	sep        connKind
	sepWord    string
	role       tokRole
	alias      *aliasHit
	agent      string
	ref        *urlRef // a URL's JSON path or keyword
}

// isWordRune: letters, digits, marks and _ make words.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_'
}

func isASCIIDigit(b byte) bool { return b >= '0' && b <= '9' }

const trailingPunct = ".,;:!?)]}\"'»”’"

// tokenizeSentence splits a sentence into words, numbers, symbols, punctuation,
// URLs and Matrix user IDs.
func tokenizeSentence(s string) []*sentToken {
	var toks []*sentToken
	add := func(t *sentToken) { toks = append(toks, t) }
	i := 0
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		switch {
		case unicode.IsSpace(r):
			i += w
		case hasPrefixFold(s[i:], "http://") || hasPrefixFold(s[i:], "https://"):
			end := chunkEnd(s, i)
			if e := strings.TrimRight(s[i:end], trailingPunct); len(e) > len("http://") {
				end = i + len(e)
			}
			add(&sentToken{kind: tURL, text: s[i:end], low: s[i:end], start: i, end: end})
			i = end
		case r == '@' && isMXID(strings.TrimRight(s[i:chunkEnd(s, i)], trailingPunct)):
			end := i + len(strings.TrimRight(s[i:chunkEnd(s, i)], trailingPunct))
			add(&sentToken{kind: tMXID, text: s[i:end], low: s[i:end], start: i, end: end})
			i = end
		case isASCIIDigit(s[i]) || (s[i] == '.' || s[i] == '-') && i+1 < len(s) && isASCIIDigit(s[i+1]) && (s[i] == '.' || signAllowed(toks)):
			t := scanNumber(s, i)
			add(t)
			i = t.end
		case isWordRune(r):
			add(scanWord(s, i))
			i = toks[len(toks)-1].end
			if rest := s[i:]; strings.HasPrefix(rest, "'s") || strings.HasPrefix(rest, "'S") {
				i += 2
			} else if strings.HasPrefix(rest, "’s") || strings.HasPrefix(rest, "’S") {
				i += len("’s")
			}
		case strings.ContainsRune("<>=!≤≥≠", r):
			j := i
			for j < len(s) {
				r2, w2 := utf8.DecodeRuneInString(s[j:])
				if !strings.ContainsRune("<>=!≤≥≠", r2) {
					break
				}
				j += w2
			}
			kind := tSym
			if strings.Trim(s[i:j], "!") == "" {
				kind = tPunct
			}
			add(&sentToken{kind: kind, text: s[i:j], low: s[i:j], start: i, end: j})
			i = j
		default:
			add(&sentToken{kind: tPunct, text: s[i : i+w], low: s[i : i+w], start: i, end: i + w})
			i += w
		}
	}
	// "70 %", "70 percent"
	out := toks[:0]
	for _, t := range toks {
		if n := len(out); n > 0 && out[n-1].kind == tNum && !out[n-1].pct && t.start-out[n-1].end <= 1 &&
			(t.low == "%" || t.low == "percent" || t.low == "pct") {
			out[n-1].pct, out[n-1].end = true, t.end
			continue
		}
		out = append(out, t)
	}
	return out
}

// hasPrefixFold is strings.HasPrefix without regard to ASCII case.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// chunkEnd is where the run of non-space characters starting at i ends.
func chunkEnd(s string, i int) int {
	if j := strings.IndexFunc(s[i:], unicode.IsSpace); j >= 0 {
		return i + j
	}
	return len(s)
}

// isMXID reports whether s is a Matrix user ID, @local:server.
func isMXID(s string) bool {
	local, server, ok := strings.Cut(strings.TrimPrefix(s, "@"), ":")
	return strings.HasPrefix(s, "@") && ok && local != "" && server != ""
}

// signAllowed reports whether a '-' before a digit is a minus sign: not
// inside a word or after a number.
func signAllowed(toks []*sentToken) bool {
	if len(toks) == 0 {
		return true
	}
	last := toks[len(toks)-1]
	return last.kind == tSym || last.kind == tPunct || last.kind == tWord && !last.isNum
}

// scanNumber reads "0.70", ".7", "-5", "1,000", "70%" at s[i:]; a number
// followed by letters ("6h") is a word that keeps its value and unit.
func scanNumber(s string, i int) *sentToken {
	j := i
	if s[j] == '-' {
		j++
	}
	for j < len(s) && isASCIIDigit(s[j]) {
		j++
		// thousands: 1,000
		if j+4 <= len(s) && s[j] == ',' && isASCIIDigit(s[j+1]) && isASCIIDigit(s[j+2]) && isASCIIDigit(s[j+3]) &&
			(j+4 == len(s) || !isASCIIDigit(s[j+4])) {
			j += 4
		}
	}
	if j+1 < len(s) && s[j] == '.' && isASCIIDigit(s[j+1]) {
		j++
		for j < len(s) && isASCIIDigit(s[j]) {
			j++
		}
	}
	t := &sentToken{kind: tNum, start: i, end: j, text: s[i:j], low: s[i:j]}
	v, err := strconv.ParseFloat(strings.ReplaceAll(s[i:j], ",", ""), 64)
	t.isNum = err == nil && !math.IsInf(v, 0) && !math.IsNaN(v)
	t.num = v
	switch {
	case j < len(s) && s[j] == '%':
		t.pct, t.end = true, j+1
	case j < len(s):
		r, _ := utf8.DecodeRuneInString(s[j:])
		if isWordRune(r) {
			// "6h", "30min", "2fa": a word that starts with a number.
			w := scanWord(s, j)
			t.kind, t.end, t.unit = tWord, w.end, w.low
			t.text, t.low = s[i:w.end], strings.ToLower(s[i:w.end])
		}
	}
	if !t.isNum {
		t.kind = tWord
	}
	return t
}

// notPossessive are stems whose 's is no possessive: "it's" is "it is".
var notPossessive = wordSet("it", "that", "what", "there", "here", "he", "she", "who", "let", "where", "how", "when", "why", "this")

// scanWord reads a word at s[i:], dropping a possessive 's ("EVE's").
func scanWord(s string, i int) *sentToken {
	j := i
	for j < len(s) {
		r, w := utf8.DecodeRuneInString(s[j:])
		if isWordRune(r) {
			j += w
			continue
		}
		if r == '-' || r == '.' || r == '\'' || r == '’' {
			if j+w < len(s) {
				if r2, _ := utf8.DecodeRuneInString(s[j+w:]); isWordRune(r2) {
					j += w
					continue
				}
			}
		}
		break
	}
	t := &sentToken{kind: tWord, start: i, end: j, text: s[i:j]}
	t.low = strings.ToLower(strings.ReplaceAll(t.text, "’", "'"))
	if stem, ok := strings.CutSuffix(t.low, "'s"); ok && stem != "" && !notPossessive[stem] {
		cut := strings.LastIndexAny(t.text, "'’")
		t.text, t.low, t.end = t.text[:cut], stem, i+cut
	}
	return t
}

// ---- phrases ----

// pattern is a phrase to find among tokens: at each position, the words
// accepted there.
type pattern [][]string

// phraseOf compiles "drops|falls below": positions split by spaces,
// alternatives by |.
func phraseOf(s string) pattern {
	var p pattern
	for _, pos := range strings.Fields(s) {
		p = append(p, strings.Split(pos, "|"))
	}
	return p
}

// phrasesOf compiles several patterns.
func phrasesOf(ss ...string) []pattern {
	out := make([]pattern, len(ss))
	for i, s := range ss {
		out[i] = phraseOf(s)
	}
	return out
}

// at returns how many tokens p covers at ts[i:], or 0.
func (p pattern) at(ts []*sentToken, i int) int {
	if i+len(p) > len(ts) {
		return 0
	}
	for k, alts := range p {
		if !slices.Contains(alts, ts[i+k].low) {
			return 0
		}
	}
	return len(p)
}

// longestMatch returns the longest of ps matching at ts[i:] and its length.
func longestMatch(ps []pattern, ts []*sentToken, i int) (int, int) {
	best, n := -1, 0
	for k, p := range ps {
		if m := p.at(ts, i); m > n {
			best, n = k, m
		}
	}
	return best, n
}

// wordSet makes a lookup table of words.
func wordSet(words ...string) map[string]bool {
	m := make(map[string]bool, len(words))
	for _, w := range words {
		m[w] = true
	}
	return m
}

// ---- phrase tables ----

type intentClass uint8

const (
	classNone intentClass = iota
	classWatch
	classTell
	classNotify
	classJournal
	classWorried
)

type intentPhrase struct {
	p     pattern
	class intentClass
}

// intentPhrases make a sentence a request to watch something, by class.
var intentPhrases = func() []intentPhrase {
	var out []intentPhrase
	add := func(class intentClass, ss ...string) {
		for _, s := range ss {
			out = append(out, intentPhrase{phraseOf(s), class})
		}
	}
	add(classTell, "tell|tel me|us", "let me|us know", "lemme know", "i want|wanna|need to know",
		"i'd|id like to know", "i would like to know", "keep me|us posted|updated|informed",
		"give me|us a heads up|heads-up|shout", "give me|us a shout", "inform|update me|us")
	add(classNotify, "alert|ping|notify|warn|message|msg|dm|text|buzz|page|wake|email|push|poke|nudge me|us",
		"send me|us a push|notification|ping|message|dm", "wake me|us up",
		"i'd|id|i'll|ill|we'd like to be notified|told|alerted|pinged|warned|informed",
		"i|we would like to be notified|told|alerted|pinged|warned|informed",
		"i|we want|wanna|need to be notified|told|alerted|pinged|warned|informed",
		"set|create|add|make|put|arm|give|get me|us an|a alert|alarm|notification|ping",
		"set|create|add|make|put|arm|give|get an|a alert|alarm|notification|ping")
	add(classJournal, "note|log|journal|record it|that|this", "make|take a note", "write it down")
	add(classWatch, "watch", "watch out for", "watch for", "watch over", "keep an|a eye on|out",
		"keep an|a eye out for", "keep watch on|over", "keep watch", "keep tabs on", "keep track of",
		"monitor", "track", "look out for", "be on the lookout for", "observe",
		"set|create|add|make|put|arm|place|install a|an tripwire|trip-wire|watch|watcher|sentinel|tw on|for",
		"set|create|add|make|put|arm|place|install a|an tripwire|trip-wire|watch|watcher|sentinel|tw")
	worried := "worried|concerned|afraid|nervous|anxious|scared|uneasy"
	for _, who := range []string{"i'm|im|we're", "i|we am|are"} {
		for _, how := range []string{"", "a bit|little ", "really|so|very|quite|kinda|getting|rather|slightly|somewhat|bit|little "} {
			add(classWorried, who+" "+how+worried+" that|about", who+" "+how+worried)
		}
	}
	add(classWorried, "i|we worry|fear that|about", "i|we worry|fear", worried+" that|about")
	return out
}()

// leadWords may open a request without meaning anything.
var leadWords = wordSet("jarvis", "hey", "hi", "hello", "ok", "okay", "so", "also", "and", "now", "oh", "btw", "yo",
	"please", "pls", "plz", "kindly", "then", "just", "but", "-", ",", ":", ";")

// requestForms open a polite request: "could you …".
var requestForms = phrasesOf("can|could|would|will|can't|cant you|u please", "can|could|would|will|can't|cant you|u",
	"would|do you mind", "i'd|id like you to", "i would like you to", "i want|need you to", "make sure to|you",
	"be sure to", "remember to")

// questionWords open a question about the fleet, not a request.
var questionWords = wordSet("what", "what's", "whats", "how", "how's", "hows", "why", "who", "who's", "whose",
	"where", "where's", "which", "is", "are", "was", "were", "am", "does", "do", "did", "has", "have", "had",
	"can", "could", "will", "would", "should", "shall", "may", "might", "isn't", "aren't", "wasn't",
	"doesn't", "didn't", "won't", "wouldn't", "can't", "couldn't", "hasn't", "haven't", "whats's")

// tellConj are the conjunctions after "tell me" that make it a request to be told of
// something ("tell me when …", not "tell me a joke").
var tellConj = phrasesOf("when|whenever|if|once|should|anytime", "as soon as", "the moment|minute|second|instant",
	"in case", "every|each|any time", "as long as")

// aboutWords after "alert me" name what to alert about.
var aboutWords = wordSet("about", "on", "of", "for", "to")

// notWatched: "watch out!", "watch it", "watch yourself" ask nothing of
// Jarvis.
var notWatched = wordSet("out", "it", "this", "me", "you", "us", "them", "yourself")

// allWords before "agents": "all agents", "both agents".
var allWords = wordSet("all", "both", "every")

// toMe before "me": a card "waiting for me" waits for my decision.
var toMe = wordSet("for", "from", "on", "to", "ask", "asks", "asking")

// watchAfter are the words after which "watch" is an imperative.
var watchAfter = wordSet(",", ";", ":", "and", "then", "also", "just", "please", "but", "-", ".", "so", "now")

// tellFillers may stand between "tell me" and its conjunction.
var tellFillers = wordSet("right", "away", "immediately", "asap", "straight", "please", "only", "just", "too", "also",
	",", "directly", "instantly", "quickly", "promptly", "personally")

// negationWords negate what follows: "isn't online", "not below".
var negationWords = wordSet("not", "don't", "dont", "never", "isn't", "isnt", "aren't", "arent", "wasn't", "doesn't",
	"doesnt", "didn't", "won't", "wont", "no", "without", "stops", "stop", "leaves", "leave", "left")

// pushOff turn push off: record the trip quietly.
var pushOff = phrasesOf("quietly", "silently", "just note|log|journal it|that", "note|log|journal it|that",
	"in|to|into the|my journal", "journal only", "journal-only", "only in|to the|my journal", "only journal|note|log it",
	"no push|pushes|ping|pings|notification|notifications|alert|alerts|interruptions",
	"no need to ping|notify|alert|tell|bother|wake me|us",
	"don't|dont ping|push|notify|alert|bother|interrupt|disturb|wake|tell me|us",
	"do not ping|push|notify|alert|bother|interrupt|disturb|wake|tell me|us",
	"never ping|push|notify|alert|bother|interrupt|tell me|us",
	"without pinging|pushing|notifying|alerting|bothering|interrupting|disturbing|waking|telling me|us",
	"without a push|ping|notification|sound", "without pushing|pinging")

// intentFillers are dropped from what is read: "keep an eye on GI for me".
var intentFillers = phrasesOf("for me|us", "please", "pls", "plz", "thanks", "thank you", "if you can|could", "if possible",
	"for now", "from now on", "going forward")

// pushOn turn push on.
var pushOn = phrasesOf("with a push|ping|notification", "push notification|notifications", "push it", "loudly",
	"right away", "immediately", "asap", "straight away", "urgently")

// sepAll and sepNeutral separate clauses; sepAll joins their conditions
// with all.
var sepAll = phrasesOf("and", "while", "whilst", "but", "when", "whenever", "if", "once", "as soon as",
	"the moment|minute|second|instant", "in case", "every|each|any time", "anytime", "as long as",
	"provided|providing that", "provided|providing", "only if|when", "and also", "and only if|when", "so long as",
	"unless", "except if|when")

// sepNeutral separate clauses without saying how they combine.
var sepNeutral = phrasesOf("then", "and then")

// after "or", these words make it part of a comparator ("0.5 or less").
var orComparators = wordSet("less", "lower", "below", "fewer", "under", "smaller", "more", "higher", "above",
	"greater", "over", "bigger", "equal", "so", "larger")

// pronounWords stand for a subject named earlier.
var pronounWords = wordSet("it", "its", "it's", "they", "them", "their", "that", "this", "those", "these", "she", "he",
	"her", "his", "theirs")

// possessivePronouns become the subject's possessive in labels.
var possessivePronouns = wordSet("its", "their", "her", "his")

// personalWords are subjects: "let me know if you need anything" is not a watch.
var personalWords = wordSet("you", "you're", "youre", "u", "ur", "i", "i'm", "im", "i've", "ive", "i'd", "id", "we",
	"we're", "me", "yourself", "your")

// words that make a sentence a watch request Jarvis should ask about even
// though it names nothing it knows.
var cueWords = wordSet("happens", "happen", "wrong", "breaks", "break", "broken", "fails", "fail", "failing",
	"bad", "worse", "weird", "off", "problem", "problems", "trouble", "issue", "issues", "down", "up")

// fleetWords make a worried sentence about Jarvis's domain.
var fleetWords = wordSet("fleet", "agent", "agents", "system", "systems", "substrate", "integrity", "vault", "card",
	"cards", "breaker", "breakers", "lane", "lanes", "heartbeat", "heartbeats", "everything", "things", "backlog")

type comparator struct {
	p       pattern
	op      tripwire.Op
	postfix bool // the number comes before: "0.5 or less"
	weak    bool // "is": an equality when nothing stronger is said
}

// comparatorTable are the ways of comparing a value with a number.
var comparatorTable = func() []comparator {
	var out []comparator
	add := func(op tripwire.Op, ss ...string) {
		for _, s := range ss {
			out = append(out, comparator{p: phraseOf(s), op: op})
		}
	}
	add(tripwire.OpLTE, "less|lower|smaller|fewer than or equal to", "at or below|under", "no|not more|higher|greater|bigger|larger than",
		"at most", "<=|=<|≤", "drops|drop|dropped|dropping|falls|fall|fell|falling|dips|dip|sinks|sink|slips|slip|declines|decreases to",
		"goes|go|went|comes|come|gets|get down to", "equal to or less|lower than", "up to", "max|maximum")
	add(tripwire.OpGTE, "more|greater|higher|bigger|larger than or equal to", "at or above|over", "no|not less|lower|fewer|smaller than",
		"at least", ">=|=>|≥", "reaches|reach|reached|reaching|hits|hit|hitting",
		"rises|rise|rose|climbs|climb|climbed|grows|grow|grew|jumps|jump|increases|increase to", "goes|go|went|gets|get up to",
		"min|minimum")
	add(tripwire.OpLT, "less|lower|smaller|fewer than", "below|under|beneath|underneath", "<")
	add(tripwire.OpGT, "more|greater|higher|bigger|larger|older|longer than", "above|over|beyond|past",
		"exceeds|exceed|exceeded|exceeding|tops|surpasses|surpass", ">")
	add(tripwire.OpEQ, "equals|equal|equalling|equaling", "equal to", "is|are exactly", "=|==")
	add(tripwire.OpNEQ, "!=|≠|<>", "does|do not equal", "doesn't|dont|don't equal")
	for _, s := range []string{"or less|lower|below|fewer|under|smaller", "or more|higher|above|greater|over|bigger"} {
		op := tripwire.OpLTE
		if strings.HasPrefix(s, "or more") {
			op = tripwire.OpGTE
		}
		out = append(out, comparator{p: phraseOf(s), op: op, postfix: true})
	}
	for _, s := range []string{"is|are|was|becomes|become|stays|stay|turns|turn|goes|go|gets|get|reads|read|shows|show",
		"is|are|sits|stands at"} {
		out = append(out, comparator{p: phraseOf(s), op: tripwire.OpEQ, weak: true})
	}
	return out
}()

// comparatorPatterns are comparatorTable's phrases, in the same order.
var comparatorPatterns = func() []pattern {
	out := make([]pattern, len(comparatorTable))
	for i, c := range comparatorTable {
		out[i] = c.p
	}
	return out
}()

// directionPhrases without a number: "GI drops" watches a change.
var directionPhrases = phrasesOf(
	"drops|drop|dropped|dropping|falls|fall|fell|falling|decreases|decrease|decreased|declines|decline|declined",
	"dips|dip|dipped|sinks|sink|sank|slips|slip|slides|slide|tanks|tank|plummets|plummet|worsens|worsen",
	"degrades|degrade|degraded|degrading|shrinks|shrink|crashes|crash",
	"goes|go|went down", "gets|get|goes|go|turns|turn bad|worse",
	"rises|rise|rose|increases|increase|increased|climbs|climb|climbed|grows|grow|grew|jumps|jump|jumped",
	"spikes|spike|spiked|improves|improve|improved|surges|surge", "goes|go|went up", "gets|get better")

// changedWords ask for any change.
var changedWords = phrasesOf("changes|change|changed|changing|moves|move|moved|shifts|shift|shifted|flips|flip|flipped",
	"is|gets different", "does anything")

// numberFillers may stand between a comparator and its number.
var numberFillers = wordSet("the", "a", "an", "about", "around", "roughly", "approximately", "approx", "~", "$", "€",
	"£", "to", "of", "be", "value", "level", "mark", "like", "only", "just", "=", ":", "exactly")

// ---- value vocabularies of the kinds Jarvis registers ----

type stateWord struct {
	p      pattern
	value  string
	strong bool // names the kind by itself ("goes offline")
}

const sourceBreakerState = "breaker.state"

// vocabularies are the values of the state kinds Jarvis registers, and
// how people say them.
var vocabularies = map[string][]stateWord{
	fleet.SourceAgentStatus: {
		{phraseOf("goes|go|went|going|gone|is|are|was|gets|get|got|becomes|become|falls|fall|drops|drop offline"), "offline", true},
		{phraseOf("stops|stop|stopped|quits|quit reporting|responding|heartbeating|answering|checking"), "offline", true},
		{phraseOf("stops|stop|stopped sending heartbeats"), "offline", true},
		{phraseOf("goes|go|went dark|silent|missing|quiet"), "offline", true},
		{phraseOf("offline|unreachable|unresponsive|down"), "offline", false},
		{phraseOf("dies|died|disappears|disappeared"), "offline", false},
		{phraseOf("comes|come|came|is|are|gets|get|goes|go back online|up"), "online", true},
		{phraseOf("comes|come|came|is|are|gets|get back"), "online", true},
		{phraseOf("back online"), "online", true},
		{phraseOf("comes|come|came|goes|go|is|gets online"), "online", true},
		{phraseOf("starts|start|resumes|resume reporting"), "online", true},
		{phraseOf("online|recovers|recovered"), "online", false},
		{phraseOf("is|are|gets|get|runs|run|running late"), "late", true},
		{phraseOf("misses|missed|miss a heartbeat"), "late", true},
		{phraseOf("misses|missed|miss heartbeats"), "late", true},
		{phraseOf("falls|fall|fell behind"), "late", true},
		{phraseOf("late"), "late", false},
	},
	fleet.SourceAgentMode: {
		{phraseOf("turns|turn|turned|goes|go|went|becomes|become|switches|flips red"), "red", true},
		{phraseOf("turns|turn|turned|goes|go|went|becomes|become|switches|flips yellow|amber"), "yellow", true},
		{phraseOf("turns|turn|turned|goes|go|went|becomes|become|switches|flips green"), "green", true},
		{phraseOf("switches|flips|changes to red"), "red", true},
		{phraseOf("switches|flips|changes to yellow|amber"), "yellow", true},
		{phraseOf("switches|flips|changes to green"), "green", true},
		{phraseOf("red"), "red", false},
		{phraseOf("yellow|amber"), "yellow", false},
		{phraseOf("green"), "green", false},
	},
	sourceBreakerState: {
		{phraseOf("half-open|half-opens|halfopen"), "half-open", false},
		{phraseOf("half open|opens|opened"), "half-open", false},
		{phraseOf("open|opens|opened|opening|trips|tripped|trip|halts|halted|pops|popped"), "open", false},
		{phraseOf("closed|closes|close|closing|resets"), "closed", false},
	},
	card.SourceCardState: {
		{phraseOf("done|finished|finishes|finish|completed|completes|complete"), string(card.Done), false},
		{phraseOf("blocked|stuck"), string(card.Blocked), false},
		{phraseOf("needs|need a|my|your decision|answer"), string(card.NeedsDecision), false},
		{phraseOf("waiting|waits for a|my|your decision"), string(card.NeedsDecision), false},
		{phraseOf("needs_decision"), string(card.NeedsDecision), false},
		{phraseOf("claimed"), string(card.Claimed), false},
		{phraseOf("picked up"), string(card.Claimed), false},
		{phraseOf("in progress"), string(card.InProgress), false},
		{phraseOf("in_progress|started|starts|begins"), string(card.InProgress), false},
		{phraseOf("published"), string(card.Published), false},
		{phraseOf("cancelled|canceled"), string(card.Cancelled), false},
		{phraseOf("awaiting ratification"), string(card.AwaitingRatification), false},
		{phraseOf("awaiting_ratification"), string(card.AwaitingRatification), false},
	},
}

// subjectNouns name the kinds Jarvis registers in descriptions.
var subjectNouns = map[string]string{
	fleet.SourceAgentStatus:       "",
	fleet.SourceAgentMII:          "MII",
	fleet.SourceAgentMode:         "mode",
	fleet.SourceAgentHeartbeatAge: "heartbeat age",
	fleet.SourceAgentJournalCount: "journal count",
	sourceBreakerState:            "breaker",
	card.SourceCardState:          "",
	card.SourceCardsNeedsDecision: "cards waiting for a decision",
	card.SourceCardsBlocked:       "blocked cards",
}

// numericKinds are numbers besides ratios, seconds and counts.
var numericKinds = wordSet("vault.balance", "micro-agent.value", "url-fetch")

// ratioDescription finds "(0–1)" or "(0 to 1)" in a kind's description.
var ratioDescription = regexp.MustCompile(`\(\s*0\s*(?:–|-|—|to)\s*1\s*\)`)

// isRatio: the kind's description says it runs from 0 to 1.
func isRatio(k core.SourceKind) bool { return ratioDescription.MatchString(k.Description) }

// isSeconds: the kind counts seconds (agent.heartbeat_age).
func isSeconds(k core.SourceKind) bool {
	return strings.Contains(strings.ToLower(k.Description), "seconds")
}

// isCount: the kind counts things ("how many …").
func isCount(k core.SourceKind) bool {
	return strings.HasPrefix(strings.ToLower(strings.TrimSpace(k.Description)), "how many")
}

// isNumeric: the kind's value is a number, so "is low" is no value.
func isNumeric(k core.SourceKind) bool {
	return numericKinds[k.Kind] || isRatio(k) || isSeconds(k) || isCount(k)
}

// takesAgent: the kind's param is an agent name (agent.*, breaker.state).
func takesAgent(k core.SourceKind) bool {
	return strings.HasPrefix(strings.ToLower(k.Param), "agent name")
}

// ---- durations ----

// durationUnits are seconds per unit.
var durationUnits = map[string]float64{
	"s": 1, "sec": 1, "secs": 1, "second": 1, "seconds": 1,
	"m": 60, "min": 60, "mins": 60, "minute": 60, "minutes": 60,
	"h": 3600, "hr": 3600, "hrs": 3600, "hour": 3600, "hours": 3600,
	"d": 86400, "day": 86400, "days": 86400,
	"w": 604800, "wk": 604800, "wks": 604800, "week": 604800, "weeks": 604800,
	"month": 2592000, "months": 2592000, "year": 31536000, "years": 31536000, "yr": 31536000,
}

// periodWords are periods said in one word: "at most daily".
var periodWords = map[string]float64{"hourly": 3600, "daily": 86400, "nightly": 86400, "weekly": 604800,
	"monthly": 2592000, "yearly": 31536000, "annually": 31536000}

// numberWords are small numbers said in words.
var numberWords = map[string]float64{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fifteen": 15,
	"twenty": 20, "thirty": 30, "few": 3, "couple": 2}

// durationAt reads "6 hours", "6h", "a day", "half an hour", "day" at
// ts[i:]; it returns seconds and the tokens read.
func durationAt(ts []*sentToken, i int) (float64, int) {
	if i >= len(ts) {
		return 0, 0
	}
	t := ts[i]
	if t.isNum && t.unit != "" {
		if u, ok := durationUnits[t.unit]; ok && t.num >= 0 {
			return t.num * u, 1
		}
		return 0, 0
	}
	if u, ok := durationUnits[t.low]; ok && len(t.low) > 1 {
		return u, 1
	}
	n, k := 0.0, 0
	switch {
	case t.isNum && t.kind == tNum && !t.pct && t.num >= 0:
		n, k = t.num, 1
	case t.low == "half" && i+1 < len(ts) && (ts[i+1].low == "an" || ts[i+1].low == "a"):
		n, k = 0.5, 2
	case t.low == "half":
		n, k = 0.5, 1
	case numberWords[t.low] > 0:
		n, k = numberWords[t.low], 1
		if i+1 < len(ts) && ts[i+1].low == "of" {
			k++ // "a couple of hours"
		}
	default:
		return 0, 0
	}
	if i+k < len(ts) {
		if u, ok := durationUnits[ts[i+k].low]; ok {
			return n * u, k + 1
		}
	}
	return 0, 0
}

// ---- the parser ----

type aliasHit struct {
	kind  core.SourceKind
	text  string // as written
	first int    // index of its first token in the sentence
}

type namePattern struct {
	words []string
	kind  core.SourceKind
	agent string
}

type parser struct {
	text   string
	toks   []*sentToken
	reg    *core.SourceRegistry
	kinds  []core.SourceKind
	agents []string

	request  bool
	question bool // the sentence ends with "?"
	classes  []intentClass
	pushOn   bool
	pushOff  bool
	cooldown *int
	notes    []string
}

// parseWatch is ParseWatchIntent without the last validation, so that the
// fuzz test can tell the parser's mistakes from the registry's vetting.
func parseWatch(text string, reg *core.SourceRegistry, agents []string) WatchIntent {
	text = strings.TrimSpace(strings.ToValidUTF8(text, "\uFFFD"))
	if reg == nil || text == "" || len(text) > intentMaxBytes || strings.HasPrefix(text, "!") {
		return WatchIntent{}
	}
	p := &parser{text: text, toks: tokenizeSentence(text), reg: reg, kinds: reg.Kinds()}
	for _, a := range agents {
		if a = strings.TrimSpace(a); a != "" && !slices.Contains(p.agents, a) {
			p.agents = append(p.agents, a)
		}
	}
	return p.run()
}

// unusedTokens returns the tokens no phrase has taken.
func unusedTokens(ts []*sentToken) []*sentToken {
	var out []*sentToken
	for _, t := range ts {
		if !t.used {
			out = append(out, t)
		}
	}
	return out
}

// markUsed marks tokens taken by a phrase.
func markUsed(ts []*sentToken) {
	for _, t := range ts {
		t.used = true
	}
}

// run reads the sentence in passes: lead-in, intent phrases, push and
// cooldown phrases, params, names, clauses; then builds the answer.
func (p *parser) run() WatchIntent {
	start := p.leadIn()
	if start < 0 {
		return WatchIntent{}
	}
	first := p.toks[start]
	if !p.request && first.kind == tWord && questionWords[first.low] {
		return WatchIntent{}
	}
	atStart, ok := p.intents(start)
	if !ok {
		return WatchIntent{}
	}
	p.question = strings.HasSuffix(p.text, "?")
	if p.question && !p.request && !atStart {
		return WatchIntent{}
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
func (p *parser) leadIn() int {
	i := 0
	for i < len(p.toks) {
		t := p.toks[i]
		if t.kind == tMXID || t.kind == tWord && leadWords[t.low] || t.kind == tPunct && leadWords[t.low] {
			t.used = true
			i++
			continue
		}
		if _, n := longestMatch(requestForms, p.toks, i); n > 0 {
			markUsed(p.toks[i : i+n])
			p.request = true
			i += n
			continue
		}
		break
	}
	if i >= len(p.toks) {
		return -1
	}
	return i
}

// intents finds the phrases that make the sentence a watch request. It
// reports whether one stands at the start, and whether there is any.
func (p *parser) intents(start int) (atStart, ok bool) {
	ts := unusedTokens(p.toks)
	type intentHit struct {
		toks  []*sentToken
		class intentClass
	}
	var loose []intentHit
	startsWithConj := false
	if len(ts) > 0 {
		_, n := longestMatch(tellConj, ts, 0)
		startsWithConj = n > 0
	}
	for i := 0; i < len(ts); i++ {
		best := -1
		n := 0
		for k, ph := range intentPhrases {
			if m := ph.p.at(ts, i); m > n {
				best, n = k, m
			}
		}
		if best < 0 {
			continue
		}
		class := intentPhrases[best].class
		phrase := ts[i : i+n]
		prev := func(k int) string {
			if i-k >= 0 {
				return ts[i-k].low
			}
			return ""
		}
		negated := prev(1) == "don't" || prev(1) == "dont" || prev(1) == "never" || prev(1) == "not" && prev(2) == "do" ||
			prev(1) == "to" && prev(2) == "need" && prev(3) == "no"
		switch class {
		case classTell, classNotify, classJournal:
			if negated {
				neg := 1 // don't, never
				if prev(1) == "not" {
					neg = 2 // do not
				} else if prev(1) == "to" {
					neg = 3 // no need to
				}
				markUsed(ts[i-neg : i])
				markUsed(phrase)
				p.pushOff = true
				i += n - 1
				continue
			}
			j := i + n
			for j < len(ts) {
				_, off := longestMatch(pushOff, ts, j)
				_, on := longestMatch(pushOn, ts, j)
				_, cd := cooldownAt(ts, j)
				if skip := max(off, on, cd); skip > 0 {
					j += skip
					continue
				}
				if !tellFillers[ts[j].low] {
					break
				}
				j++
			}
			_, c := longestMatch(tellConj, ts, j)
			about := class != classTell && j < len(ts) && aboutWords[ts[j].low]
			if c == 0 && !about && !startsWithConj {
				// "watch blocked cards and ping me": says how, not whether
				loose = append(loose, intentHit{phrase, class})
				i += n - 1
				continue
			}
			if about {
				ts[j].used = true
			}
		case classWatch:
			if i > 0 && !watchAfter[ts[i-1].low] {
				continue // "I watch GI daily" is not a request
			}
			if n == 1 && i+1 < len(ts) && notWatched[ts[i+1].low] {
				continue // "watch out!", "watch it"
			}
		}
		if class == classJournal {
			p.pushOff = true
		}
		markUsed(phrase)
		p.classes = append(p.classes, class)
		if ts[i].start == p.toks[start].start {
			atStart = true
		}
		i += n - 1
	}
	if startsWithConj {
		atStart = true
	}
	if len(p.classes) > 0 {
		for _, h := range loose {
			markUsed(h.toks)
			if h.class == classJournal {
				p.pushOff = true
			} else {
				p.pushOn = true
			}
		}
	}
	return atStart, len(p.classes) > 0
}

// has reports whether an intent phrase of the class was found.
func (p *parser) has(class intentClass) bool { return slices.Contains(p.classes, class) }

// pushPhrases reads "quietly", "with a push" and the like, and drops
// fillers.
func (p *parser) pushPhrases() {
	ts := unusedTokens(p.toks)
	for i := 0; i < len(ts); i++ {
		if _, n := longestMatch(intentFillers, ts, i); n > 0 {
			markUsed(ts[i : i+n])
			i += n - 1
			continue
		}
		if _, n := longestMatch(pushOff, ts, i); n > 0 {
			markUsed(ts[i : i+n])
			p.pushOff = true
			i += n - 1
			continue
		}
		if _, n := longestMatch(pushOn, ts, i); n > 0 {
			markUsed(ts[i : i+n])
			p.pushOn = true
			i += n - 1
		}
	}
}

// cooldowns reads "no more than once a day", "at most every 6 hours",
// "twice a day", "with a 2h cooldown".
func (p *parser) cooldowns() {
	ts := unusedTokens(p.toks)
	for i := 0; i < len(ts); i++ {
		secs, n := cooldownAt(ts, i)
		if n == 0 {
			continue
		}
		markUsed(ts[i : i+n])
		switch {
		case secs > tripwire.MaxCooldownSeconds:
			p.notes = append(p.notes, "A cooldown is at most 30 days, so I used that.")
			secs = tripwire.MaxCooldownSeconds
		case secs < 0:
			secs = 0
		}
		c := int(math.Round(secs))
		p.cooldown = &c
		i += n - 1
	}
}

// cooldownAt reads a cooldown phrase at ts[i:]: its seconds and the
// tokens it takes (0 when there is none).
func cooldownAt(ts []*sentToken, i int) (float64, int) {
	// "with a 2h cooldown"
	if i+2 < len(ts) && (ts[i].low == "with" || ts[i].low == "and") && (ts[i+1].low == "a" || ts[i+1].low == "an") {
		if d, n := durationCooldown(ts, i+2); n > 0 {
			return d, n + 2
		}
	}
	d, n := cooldownPhrase(ts, i)
	if n > 0 {
		// "once an hour at most"
		if _, tail := longestMatch(cooldownTails, ts, i+n); tail > 0 {
			n += tail
		}
	}
	return d, n
}

// Cooldown phrases: "[no more than] once a day [at most]", "every 6 hours",
// "cooldown of 2 hours".
var (
	cooldownLeads = phrasesOf("no|not more often than", "no|not more than", "at most|max|maximum", "not|no oftener than")
	cooldownTails = phrasesOf("at most", "max", "maximum", "tops", "or so", "at the most")
	cooldownWords = wordSet("cooldown", "cool-down")
	cooldownOf    = wordSet("of", "is", "=", ":")
	perWords      = wordSet("a", "an", "per", "each", "every")
)

// durationCooldown reads "2h cooldown" at ts[i:].
func durationCooldown(ts []*sentToken, i int) (float64, int) {
	if d, n := durationAt(ts, i); n > 0 && i+n < len(ts) && cooldownWords[ts[i+n].low] {
		return d, n + 1
	}
	return 0, 0
}

// cooldownPhrase reads "[no more than|at most] once|twice|N times a <unit>",
// "every <duration>", "cooldown of <duration>", "no cooldown".
func cooldownPhrase(ts []*sentToken, i int) (float64, int) {
	lead := 0
	for _, l := range cooldownLeads {
		if n := l.at(ts, i); n > lead {
			lead = n
		}
	}
	j := i + lead
	if j >= len(ts) {
		return 0, 0
	}
	// once|twice|N times a|per|every <duration>
	count, k := 0.0, 0
	switch {
	case ts[j].low == "once":
		count, k = 1, 1
	case ts[j].low == "twice":
		count, k = 2, 1
	case ts[j].low == "thrice":
		count, k = 3, 1
	case j+1 < len(ts) && ts[j+1].low == "times" && (ts[j].isNum && ts[j].kind == tNum && ts[j].num > 0 || numberWords[ts[j].low] > 1):
		count, k = ts[j].num, 2
		if !ts[j].isNum {
			count = numberWords[ts[j].low]
		}
	}
	if k > 0 {
		if j+k < len(ts) {
			if per, ok := periodWords[ts[j+k].low]; ok {
				return per / count, lead + k + 1
			}
		}
		if j+k < len(ts) && perWords[ts[j+k].low] {
			if d, m := durationAt(ts, j+k+1); m > 0 {
				return d / count, lead + k + 1 + m
			}
		}
		return 0, 0
	}
	if ts[j].low == "every" || ts[j].low == "each" {
		if d, m := durationAt(ts, j+1); m > 0 {
			return d, lead + 1 + m
		}
		return 0, 0
	}
	if lead > 0 {
		if per, ok := periodWords[ts[j].low]; ok {
			return per, lead + 1
		}
		return 0, 0
	}
	// cooldown of 2 hours, 2h cooldown, with a 2 hour cooldown, no cooldown
	if cooldownWords[ts[j].low] {
		m := 1
		if j+1 < len(ts) && cooldownOf[ts[j+1].low] {
			m++
		}
		if d, n := durationAt(ts, j+m); n > 0 {
			return d, m + n
		}
		return 0, 0
	}
	if ts[j].low == "no" && j+1 < len(ts) && cooldownWords[ts[j+1].low] {
		return 0, 2
	}
	return durationCooldown(ts, j)
}

// urlRef is the URL a sentence names and what follows it.
type urlRef struct {
	url   string
	path  string // the JSON path (url-fetch) or keyword (rss)
	isRSS bool
}

// params finds URLs with their JSON path or keyword, card ids and Matrix
// user IDs, and marks them so that no phrase matches inside them.
func (p *parser) params() {
	_, hasFetch := p.reg.Lookup("url-fetch")
	_, hasRSS := p.reg.Lookup("rss")
	for i, t := range p.toks {
		switch {
		case t.kind == tURL, t.kind == tMXID:
			t.role = roleParam
		case isCardID(t):
			t.role = roleParam
		}
		if t.kind != tURL || !hasFetch && !hasRSS {
			continue
		}
		ref := &urlRef{url: t.text}
		lowURL := strings.ToLower(t.text)
		ref.isRSS = hasRSS && (!hasFetch || strings.Contains(lowURL, "feed") || strings.Contains(lowURL, "rss") ||
			strings.Contains(lowURL, "atom") || slices.ContainsFunc(p.toks, func(u *sentToken) bool { return feedWords[u.low] }))
		t.ref = ref
		from := t.end // url-fetch: the JSON path follows the URL
		if ref.isRSS {
			// rss: the keyword follows "about", "mentions", … after the URL,
			// or before it
			from = -1
			for k := range p.toks {
				j := (i + 1 + k) % len(p.toks)
				if u := p.toks[j]; keywordIntro[u.low] && u.role == roleNone {
					from = u.end
					u.used = true
					break
				}
			}
			if from < 0 {
				continue
			}
		}
		word, s, e := nextChunk(p.text, from)
		if word == "" || s == t.start || !ref.isRSS && (functionWords[strings.ToLower(word)] || comparatorWord(word)) {
			continue
		}
		ref.path = word
		for _, u := range p.toks {
			if u.start >= s && u.end <= e {
				u.role = roleParam
			}
		}
	}
}

// isCardID: card ids are written "card_…", in lower case.
func isCardID(t *sentToken) bool {
	return t.kind == tWord && strings.HasPrefix(t.text, "card_") && len(t.text) > len("card_")
}

// feedWords make a URL a feed to watch for items rather than JSON to read.
var feedWords = wordSet("feed", "rss", "news", "post", "posts", "item", "items", "article", "articles", "mentions",
	"mention", "mentioning", "headline", "headlines", "blog")

// keywordIntro come before the keyword of a feed.
var keywordIntro = wordSet("about", "mentions", "mention", "mentioning", "containing", "contains", "matching",
	"regarding", "on", "with")

// nextChunk returns the quoted text or the run of non-space characters
// after byte offset from, trimmed of trailing punctuation, and its span.
func nextChunk(s string, from int) (string, int, int) {
	i := from
	for i < len(s) {
		r, w := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsSpace(r) {
			break
		}
		i += w
	}
	if i >= len(s) {
		return "", 0, 0
	}
	for _, q := range [][2]string{{`"`, `"`}, {"“", "”"}, {"'", "'"}, {"‘", "’"}} {
		if strings.HasPrefix(s[i:], q[0]) {
			if j := strings.Index(s[i+len(q[0]):], q[1]); j > 0 {
				inner := strings.TrimSpace(s[i+len(q[0]) : i+len(q[0])+j])
				return inner, i, i + len(q[0]) + j + len(q[1])
			}
		}
	}
	end := chunkEnd(s, i)
	chunk := strings.TrimRight(s[i:end], trailingPunct)
	return chunk, i, i + len(chunk)
}

// functionWords cannot be a JSON path or a param.
var functionWords = wordSet("and", "or", "is", "are", "the", "a", "an", "when", "if", "it", "to", "of", "in", "on",
	"drops", "falls", "goes", "rises", "changes", "reaches", "hits", "exceeds", "while", "but", "then", "please",
	"for", "at", "with", "by")

// comparatorWord reports whether w reads as a comparator or a number, and
// so cannot be the JSON path after a URL.
func comparatorWord(w string) bool {
	ts := tokenizeSentence(w)
	if len(ts) == 0 {
		return true
	}
	_, n := longestMatch(comparatorPatterns, ts, 0)
	return n > 0 || ts[0].kind == tNum
}

// names finds agent names, then kind names and aliases. The longest
// names win, wherever they are: "vault balance" over "the vault".
func (p *parser) names() {
	var agentNames, kindNames []namePattern
	for _, a := range p.agents {
		if w := lowWords(a); len(w) > 0 {
			agentNames = append(agentNames, namePattern{words: w, agent: a})
		}
	}
	for _, k := range p.kinds {
		for _, n := range append([]string{k.Kind}, k.Aliases...) {
			if w := lowWords(n); len(w) > 0 {
				kindNames = append(kindNames, namePattern{words: w, kind: k})
			}
		}
	}
	type candidate struct {
		at, n, chars int
		name         namePattern
	}
	for _, group := range [][]namePattern{agentNames, kindNames} {
		ts := freeTokens(p.toks)
		var cands []candidate
		for i := range ts {
			for _, n := range group {
				if wordsAt(n.words, ts, i, n.agent == "") {
					cands = append(cands, candidate{at: i, n: len(n.words), chars: len(strings.Join(n.words, " ")), name: n})
				}
			}
		}
		slices.SortStableFunc(cands, func(a, b candidate) int {
			if a.n != b.n {
				return b.n - a.n
			}
			if a.chars != b.chars {
				return b.chars - a.chars
			}
			return a.at - b.at
		})
		for _, c := range cands {
			hit := ts[c.at : c.at+c.n]
			if slices.ContainsFunc(hit, func(t *sentToken) bool { return t.role != roleNone }) {
				continue
			}
			if c.name.agent != "" {
				for _, t := range hit {
					t.role, t.agent = roleAgent, c.name.agent
				}
				continue
			}
			a := &aliasHit{kind: c.name.kind, text: p.text[hit[0].start:hit[len(hit)-1].end], first: hit[0].start}
			for _, t := range hit {
				t.role, t.alias = roleAlias, a
			}
		}
	}
}

// freeTokens are the tokens not used and not taken by a name or param.
func freeTokens(toks []*sentToken) []*sentToken {
	var out []*sentToken
	for _, t := range toks {
		if !t.used && t.role == roleNone {
			out = append(out, t)
		}
	}
	return out
}

// lowWords tokenizes a name into lower-case words.
func lowWords(s string) []string {
	var out []string
	for _, t := range tokenizeSentence(s) {
		out = append(out, t.low)
	}
	return out
}

// wordsAt matches a name at ts[i:]; plural reports whether a word may
// differ from the name by a trailing s ("needs"/"need", "cards"/"card").
// The tokens must be adjacent in the sentence, not merely in the view.
func wordsAt(words []string, ts []*sentToken, i int, plural bool) bool {
	if i+len(words) > len(ts) {
		return false
	}
	for k, w := range words {
		t := ts[i+k]
		if k > 0 && t.start-ts[i+k-1].end > 3 {
			return false
		}
		if t.low == w {
			continue
		}
		if plural && (len(w) > 2 && t.low == w+"s" || len(w) > 4 && w == t.low+"s") {
			continue
		}
		return false
	}
	return true
}

// separators marks the words and punctuation that split clauses.
func (p *parser) separators() {
	ts := freeTokens(p.toks)
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		if t.kind == tPunct {
			t.sep, t.sepWord = connNeutral, ""
			if t.low == "/" {
				t.sep, t.sepWord = connAny, "or"
			}
			continue
		}
		if t.low == "or" {
			next, prev := "", ""
			if i+1 < len(ts) {
				next = ts[i+1].low
			}
			if i > 0 {
				prev = ts[i-1].low
			}
			if orComparators[next] || prev == "at" {
				continue
			}
			t.sep, t.sepWord = connAny, "or"
			continue
		}
		if t.low == "and" && isBetween(ts, i) {
			continue
		}
		if _, n := longestMatch(sepAll, ts, i); n > 0 {
			for _, u := range ts[i : i+n] {
				u.sep, u.sepWord = connAll, ts[i].low
			}
			i += n - 1
			continue
		}
		if _, n := longestMatch(sepNeutral, ts, i); n > 0 {
			for _, u := range ts[i : i+n] {
				u.sep = connNeutral
			}
			i += n - 1
		}
	}
}

// isBetween reports whether the "and" at ts[i] joins "between 0.5 and 0.7".
func isBetween(ts []*sentToken, i int) bool {
	if i == 0 || i+1 >= len(ts) || !ts[i-1].isNum || !ts[i+1].isNum {
		return false
	}
	for k := i - 2; k >= 0 && k >= i-3; k-- {
		if ts[k].low == "between" || ts[k].low == "outside" {
			return true
		}
	}
	return false
}

// ---- clauses ----

// clause is one clause of the sentence and what it names.
type clause struct {
	toks     []*sentToken // every token of the clause
	view     []*sentToken // those no intent, push or cooldown phrase took
	conn     connKind
	connWord string
	aliases  []*aliasHit
	agents   []string
	cardID   string
	mxid     string
	url      *urlRef
	urlText  string
	// anyAgent: "any agent", "an agent"; allAgents: "all agents"
	anyAgent, allAgents bool
	cards, blocked      bool
	// negate: the clause follows "unless"
	negate bool
}

// parts splits the sentence into clauses at separators; each clause
// remembers the strongest connector before it.
func (p *parser) parts() []*clause {
	var out []*clause
	cur := &clause{}
	conn, connWord, negate := connNone, "", false
	flush := func() {
		if len(cur.toks) > 0 {
			cur.view = unusedTokens(cur.toks)
		}
		if len(cur.view) > 0 {
			cur.conn, cur.connWord, cur.negate = conn, connWord, negate
			conn, connWord, negate = connNone, "", false
			out = append(out, cur)
		}
		cur = &clause{}
	}
	for _, t := range p.toks {
		if t.sep != connNone && !t.used {
			flush()
			negate = negate || t.sepWord == "unless" || t.sepWord == "except"
			switch {
			case t.sep > conn:
				conn, connWord = t.sep, t.sepWord
			case t.sep == conn && connWord == "":
				connWord = t.sepWord
			}
			continue
		}
		cur.toks = append(cur.toks, t)
	}
	flush()
	for _, pt := range out {
		p.analyse(pt)
	}
	return out
}

// analyse finds what a clause names.
func (p *parser) analyse(pt *clause) {
	var lastAlias *aliasHit
	for i, t := range pt.view {
		switch {
		case t.role == roleAlias && t.alias != lastAlias:
			lastAlias = t.alias
			pt.aliases = append(pt.aliases, t.alias)
		case t.role == roleAgent && !slices.Contains(pt.agents, t.agent):
			pt.agents = append(pt.agents, t.agent)
		case t.kind == tURL:
			pt.urlText = t.text
			pt.url = t.ref
			if pt.url == nil {
				pt.url = &urlRef{url: t.text}
			}
		case t.kind == tMXID:
			pt.mxid = t.text
		case t.role == roleParam && isCardID(t):
			pt.cardID = t.text
		case t.role == roleNone && (t.low == "agent" || t.low == "agents"):
			pt.anyAgent = true
			if i > 0 && allWords[pt.view[i-1].low] || i > 1 && pt.view[i-1].low == "the" && pt.view[i-2].low == "all" {
				pt.allAgents = true
			}
		case t.role == roleNone && (t.low == "card" || t.low == "cards"):
			pt.cards = true
		case t.role == roleNone && t.low == "blocked":
			pt.blocked = true
		}
	}
}

// free are the clause's tokens that name nothing: where conditions are.
func (pt *clause) free() []*sentToken {
	var out []*sentToken
	for _, t := range pt.view {
		if t.role == roleNone {
			out = append(out, t)
		}
	}
	return out
}

// hasSubject reports whether the clause names something to watch.
func (pt *clause) hasSubject() bool {
	return len(pt.aliases) > 0 || len(pt.agents) > 0 || pt.cardID != "" || pt.urlText != "" || pt.anyAgent ||
		pt.cards && pt.blocked
}

// agentOnly: the clause names agents and nothing else ("EVE or …").
func (pt *clause) agentOnly() bool {
	return len(pt.agents) > 0 && len(pt.aliases) == 0 && pt.cardID == "" && pt.urlText == ""
}

// hasCond reports whether the clause says something about a value,
// whatever the kind.
func (p *parser) hasCond(pt *clause) bool {
	ts := pt.free()
	if hasPattern(directionPhrases, ts) || hasPattern(changedWords, ts) {
		return true
	}
	for i, t := range ts {
		if t.kind == tNum {
			return true
		}
		if c, n := longestMatch(comparatorPatterns, ts, i); n > 0 && !comparatorTable[c].weak {
			return true
		}
	}
	for kind := range vocabularies {
		if _, ok := p.reg.Lookup(kind); !ok {
			continue
		}
		// open, closed, done: only where the breaker or a card is named
		named := kind == fleet.SourceAgentStatus || kind == fleet.SourceAgentMode ||
			kind == card.SourceCardState && pt.cardID != "" ||
			slices.ContainsFunc(pt.aliases, func(a *aliasHit) bool { return a.kind.Kind == kind })
		if _, _, found := p.stateIn(kind, condTokens(pt, kind)); named && found {
			return true
		}
	}
	// "the sentiment lane is degraded": a weak "is" and a word, on a kind
	// that is not a number
	for _, a := range pt.aliases {
		if !isNumeric(a.kind) && vocabularies[a.kind.Kind] == nil {
			if _, _, ok := wordValue(ts); ok {
				return true
			}
		}
	}
	return false
}

// valuesOnly reports whether the clause is nothing but values of a
// vocabulary ("or yellow", "or done").
func (p *parser) valuesOnly(pt *clause) bool {
	ts := pt.free()
	for kind := range vocabularies {
		if _, ok := p.reg.Lookup(kind); !ok {
			continue
		}
		covered := 0
		for i := 0; i < len(ts); i++ {
			n := 0
			for _, sw := range vocabularies[kind] {
				n = max(n, sw.p.at(ts, i))
			}
			if n > 0 {
				covered += n
				i += n - 1
			} else if ts[i].low == "a" || ts[i].low == "the" || ts[i].low == "even" {
				covered++
			}
		}
		if covered == len(ts) && len(ts) > 0 {
			return true
		}
	}
	return false
}

// anyState reports whether the clause holds a value of any vocabulary.
func (p *parser) anyState(pt *clause) bool {
	for kind := range vocabularies {
		if _, ok := p.reg.Lookup(kind); ok {
			if _, _, found := p.stateIn(kind, pt.free()); found {
				return true
			}
		}
	}
	return false
}

// condTokens are the clause's tokens a condition on kind may use: all but
// agent names, params and the names of kind itself. (Another kind's alias
// may be a value: "card_x needs a decision".)
func condTokens(pt *clause, kind string) []*sentToken {
	var out []*sentToken
	for _, t := range pt.view {
		if t.role == roleNone || t.role == roleAlias && t.alias.kind.Kind != kind {
			out = append(out, t)
		}
	}
	return out
}

// hasCue reports whether a clause sounds like something to watch even
// though it names nothing Jarvis knows ("when it gets bad").
func (p *parser) hasCue(pt *clause) bool {
	if p.hasCond(pt) {
		return true
	}
	for _, t := range pt.view {
		if cueWords[t.low] {
			return true
		}
	}
	return false
}

// ---- leaves ----

// watchLeaf is one condition to build: a subject (a kind and its param) and
// what is said about it, each from a clause of the sentence.
type watchLeaf struct {
	subj, cond *clause    // where the subject and the condition were said
	lender     *clause    // a condition borrowed from another clause ("EVE or Ani goes offline")
	absorbed   bool       // the lender is no leaf of its own
	inherit    *watchLeaf // the subject of an earlier condition ("… or rises above 0.95")
	extra      []*clause  // further values of the condition ("turns red or yellow")
	prev       *watchLeaf // the leaf before, whose agent a later one may take
	conn       connKind
	connWord   string

	kind   core.SourceKind
	param  string
	agents []string // "any agent": one condition per configured agent
	all    bool     // "all agents"
	mine   bool
}

// leaves pairs subjects with conditions across clauses.
func (p *parser) leaves(parts []*clause) []*watchLeaf {
	var out, pending []*watchLeaf
	var last *watchLeaf
	carry, carryWord := connNone, ""
	add := func(ls ...*watchLeaf) {
		out = append(out, ls...)
		if len(ls) > 0 {
			last = ls[len(ls)-1]
		}
	}
	for _, pt := range parts {
		conn, word := pt.conn, pt.connWord
		if carry > conn {
			conn, word = carry, carryWord
		}
		carry, carryWord = connNone, ""
		subj, cond := pt.hasSubject(), p.hasCond(pt)
		if !subj && !cond && last != nil && p.anyState(pt) {
			cond = true // "card_x is blocked or done"
		}
		switch {
		case !subj && !cond:
			carry, carryWord = conn, word
			if p.hasCue(pt) {
				p.notes = append(p.notes, fmt.Sprintf("I left out %q: I don't know how to watch that.", p.partText(pt)))
			}
		case subj && !cond:
			pending = append(pending, &watchLeaf{subj: pt, conn: conn, connWord: word})
		case !subj && cond:
			switch {
			case len(pending) > 0:
				// "watch the vault balance and ping me when it reaches 45"
				l := pending[len(pending)-1]
				add(pending[:len(pending)-1]...)
				pending = nil
				l.cond = pt
				add(l)
			case last != nil && last.cond != nil && p.valuesOnly(pt):
				// "EVE isn't red or yellow": more values of the same
				// condition
				pt.conn, pt.connWord = conn, word
				last.extra = append(last.extra, pt)
			case last != nil:
				add(&watchLeaf{inherit: last, cond: pt, conn: conn, connWord: word})
			default:
				add(&watchLeaf{cond: pt, conn: conn, connWord: word})
			}
		default:
			var borrowers []*watchLeaf
			for _, q := range pending {
				if q.subj.agentOnly() {
					borrowers = append(borrowers, q)
				}
			}
			pending = slices.DeleteFunc(pending, func(q *watchLeaf) bool { return slices.Contains(borrowers, q) })
			add(pending...)
			pending = nil
			for _, b := range borrowers {
				b.lender, b.cond = pt, pt
			}
			add(borrowers...)
			if len(borrowers) > 0 && len(pt.agents) == 0 && !pt.anyAgent {
				// "watch EVE and tell me when her mode turns red": the
				// clause lends its condition and is no leaf itself.
				borrowers[len(borrowers)-1].absorbed = true
				continue
			}
			add(&watchLeaf{subj: pt, cond: pt, conn: conn, connWord: word})
		}
	}
	// agents named last borrow the condition before them ("EVE's MII
	// below 0.5, or Ani's")
	for _, q := range pending {
		if q.subj.agentOnly() && last != nil && last.cond != nil {
			q.lender, q.cond = last.cond, last.cond
		}
	}
	add(pending...)
	for i := 1; i < len(out); i++ {
		out[i].prev = out[i-1]
	}
	return out
}

// ---- building the proposal ----

// builtCond is a leaf made into conditions on one source.
type builtCond struct {
	src      core.SourceRef
	subject  string
	conds    []tripwire.Condition
	descs    []string
	group    tripwire.Op // how conds combine ("between": all), or how expansion members do
	member   bool        // a further agent of "any agent"
	label    string
	fallback bool
	// vague: a fallback for a clause that said nothing of a change
	// ("tell me if GI is ok?")
	vague    bool
	conn     connKind
	connWord string
}

// build pairs subjects and conditions, resolves kinds and params, and
// assembles the proposal, or the question to ask instead.
func (p *parser) build(parts []*clause) WatchIntent {
	leaves := p.leaves(parts)
	if len(leaves) == 0 {
		return p.unknown(parts)
	}
	var bs []builtCond
	mine := false
	for _, l := range leaves {
		if !p.resolveKind(l) {
			return p.unknown(parts)
		}
		if q := p.resolveParam(l); q != "" {
			return askWatch(q)
		}
		b, q := p.condition(l)
		if q != "" {
			return askWatch(q)
		}
		bs = append(bs, b...)
		mine = mine || l.mine
	}
	return p.assemble(bs, mine)
}

// unknown answers a watch request that names nothing Jarvis can watch:
// a question when it sounds like one, nothing otherwise.
func (p *parser) unknown(parts []*clause) WatchIntent {
	for _, pt := range parts {
		if len(pt.view) > 0 && personalWords[pt.view[0].low] {
			return WatchIntent{}
		}
	}
	cue, fleet := false, false
	for _, pt := range parts {
		cue = cue || p.hasCue(pt)
		for _, t := range pt.view {
			fleet = fleet || fleetWords[t.low]
		}
	}
	switch {
	case p.has(classWatch) && (cue || fleet || len(parts) > 0):
		// "watch X" addressed to Jarvis
	case p.has(classWorried) && (cue || fleet):
	case (p.has(classTell) || p.has(classNotify) || p.has(classJournal)) && (cue || fleet):
	default:
		return WatchIntent{}
	}
	return askWatch(p.whatCanIWatch())
}

// whatCanIWatch is the question listing the registry's kinds, with an
// alias and the description of each.
func (p *parser) whatCanIWatch() string {
	var b strings.Builder
	b.WriteString("What should I watch? I can watch:")
	for _, k := range p.kinds {
		b.WriteString("\n- ")
		b.WriteString(k.Kind)
		if len(k.Aliases) > 0 {
			b.WriteString(" (" + k.Aliases[0] + ")")
		}
		if k.Description != "" {
			b.WriteString(": " + k.Description)
		}
	}
	return b.String()
}

// resolveKind decides which kind a leaf watches; it reports whether one was
// found.
func (p *parser) resolveKind(l *watchLeaf) bool {
	switch {
	case l.kind.Kind != "":
		return true
	case l.inherit != nil:
		l.kind = l.inherit.kind
		return l.kind.Kind != ""
	case l.lender != nil:
		lend := &watchLeaf{subj: l.lender, cond: l.lender}
		ok := p.resolveKind(lend)
		l.kind = lend.kind
		return ok
	}
	pt := l.subj
	if pt == nil {
		pt = l.cond
	}
	cp := l.cond
	if cp == nil {
		cp = pt
	}
	lookup := func(kind string) bool {
		k, ok := p.reg.Lookup(kind)
		if ok {
			l.kind = k
		}
		return ok
	}
	switch {
	case pt.cardID != "" && lookup(card.SourceCardState):
		return true
	case len(pt.aliases) > 0:
		l.kind = p.pickAlias(pt).kind
		return true
	case pt.urlText != "" && pt.url != nil && pt.url.isRSS && lookup("rss"):
		return true
	case pt.urlText != "" && lookup("url-fetch"):
		return true
	case pt.cards && pt.blocked && lookup(card.SourceCardsBlocked):
		return true
	}
	agentish := len(pt.agents) > 0 || pt.anyAgent
	for _, kind := range []string{fleet.SourceAgentStatus, fleet.SourceAgentMode} {
		if _, ok := p.reg.Lookup(kind); !ok {
			continue
		}
		if _, strong, found := p.stateIn(kind, condTokens(cp, kind)); found && (agentish || strong) {
			return lookup(kind)
		}
	}
	if agentish && (!p.hasCond(cp) || onlyChange(cp)) {
		return lookup(fleet.SourceAgentStatus) // "keep an eye on EVE", "when EVE changes"
	}
	return false
}

// pickAlias picks, among the kinds a clause names, the one just before
// the condition, or the first.
func (p *parser) pickAlias(pt *clause) *aliasHit {
	pick := pt.aliases[0]
	ts := pt.free()
	condAt := -1
	for i := range ts {
		if _, n := longestMatch(comparatorPatterns, ts, i); n > 0 {
			condAt = ts[i].start
			break
		}
		if _, n := longestMatch(directionPhrases, ts, i); n > 0 {
			condAt = ts[i].start
			break
		}
	}
	if condAt >= 0 {
		for _, a := range pt.aliases {
			if a.first < condAt {
				pick = a
			}
		}
	}
	return pick
}

// onlyChange reports whether all the clause says is that something changes.
func onlyChange(pt *clause) bool {
	ts := pt.free()
	if !hasPattern(changedWords, ts) {
		return false
	}
	for i, t := range ts {
		if c, n := longestMatch(comparatorPatterns, ts, i); t.kind == tNum || n > 0 && !comparatorTable[c].weak {
			return false
		}
	}
	return !hasPattern(directionPhrases, ts)
}

// resolveParam fills the leaf's param; it returns a question when one is
// missing.
func (p *parser) resolveParam(l *watchLeaf) string {
	if l.inherit != nil {
		l.param, l.agents, l.all, l.mine = l.inherit.param, l.inherit.agents, l.inherit.all, l.inherit.mine
		return ""
	}
	k := l.kind
	pt := l.subj
	if pt == nil {
		pt = l.cond
	}
	// the clauses that may give the param, the subject's first; a borrowed
	// condition keeps the borrower's
	from := []*clause{pt}
	if l.cond != nil && l.cond != pt && l.lender == nil {
		from = append(from, l.cond)
	}
	switch {
	case takesAgent(k):
		var agents []string
		anyAgent, all := false, false
		for _, q := range from {
			if len(agents) == 0 {
				agents = q.agents
			}
			anyAgent, all = anyAgent || q.anyAgent, all || q.allAgents
		}
		if len(agents) == 0 && !anyAgent && l.prev != nil && l.prev.param != "" && takesAgent(l.prev.kind) {
			agents = []string{l.prev.param} // "EVE goes offline or her MII drops below 0.5"
		}
		switch {
		case len(agents) > 0:
			l.param = agents[0]
		case anyAgent && len(p.agents) > 0 && len(p.agents) <= tripwire.MaxSubConditions:
			l.agents, l.all = p.agents, all
		case anyAgent && len(p.agents) > tripwire.MaxSubConditions:
			return fmt.Sprintf("I can watch at most %d agents in one tripwire. Which ones: %s?", tripwire.MaxSubConditions, joinOr(p.agents))
		case len(p.agents) == 0:
			return fmt.Sprintf("Which agent should I watch for %s? No agents are configured.", k.Kind)
		default:
			return fmt.Sprintf("Which agent do you mean: %s?", joinOr(p.agents))
		}
	case k.Kind == card.SourceCardState:
		for _, q := range from {
			if l.param == "" {
				l.param = q.cardID
			}
		}
		if l.param == "" {
			return "Which card? Give its id (card_…)."
		}
	case k.Kind == "url-fetch" || k.Kind == "rss":
		var ref *urlRef
		for _, q := range from {
			if ref == nil && q.urlText != "" {
				ref = q.url
			}
		}
		if ref == nil {
			return fmt.Sprintf("Which URL should I watch? %s needs the %s.", k.Kind, k.Param)
		}
		if ref.path == "" {
			what := "JSON path"
			if k.Kind == "rss" {
				what = "keyword"
			}
			return fmt.Sprintf("Which %s at %s should I watch? (%s)", what, ref.url, k.Param)
		}
		l.param = ref.url + " " + ref.path
	case k.Kind == card.SourceCardsNeedsDecision:
		for _, q := range from {
			if l.param == "" {
				l.param = q.mxid
			}
			for i, t := range q.toks {
				if t.low == "my" || t.low == "me" && i > 0 && toMe[q.toks[i-1].low] ||
					t.alias != nil && slices.Contains(lowWords(t.alias.text), "my") {
					l.mine = true
				}
			}
		}
	case k.Param != "":
		for _, q := range from {
			if l.param == "" {
				l.param = nameNear(q, k)
			}
		}
		if l.param == "" && !k.ParamOptional {
			return fmt.Sprintf("Which one should I watch? %s needs a param: %s.", k.Kind, k.Param)
		}
	}
	return ""
}

// nameNear finds the name given with a kind that takes a param: the word
// right after its alias ("micro-agent DAEDALUS-µ5"), or right before it.
func nameNear(pt *clause, k core.SourceKind) string {
	for i, t := range pt.view {
		if t.alias == nil || t.alias.kind.Kind != k.Kind {
			continue
		}
		j := i
		for j < len(pt.view) && pt.view[j].alias == t.alias {
			j++
		}
		if j < len(pt.view) && looksLikeName(pt.view[j]) {
			return pt.view[j].text
		}
		if i > 0 && looksLikeName(pt.view[i-1]) {
			return pt.view[i-1].text
		}
		return ""
	}
	return ""
}

// looksLikeName: a word with a capital, a digit, a dash or a letter
// beyond ASCII, and no function word.
func looksLikeName(t *sentToken) bool {
	if t.kind != tWord || t.role != roleNone || functionWords[t.low] || stopValues[t.low] {
		return false
	}
	if _, n := longestMatch(comparatorPatterns, []*sentToken{t}, 0); n > 0 {
		return false
	}
	return strings.IndexFunc(t.text, func(r rune) bool {
		return unicode.IsUpper(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r > unicode.MaxASCII
	}) >= 0
}

// ---- conditions ----

// condition reads the leaf's condition for its kind and describes it; it
// returns a question when the sentence cannot be built.
func (p *parser) condition(l *watchLeaf) ([]builtCond, string) {
	k := l.kind
	subject := p.subjectName(l)
	b := builtCond{src: core.SourceRef{Kind: k.Kind, Param: l.param}, subject: subject, conn: l.conn, connWord: l.connWord}
	var ts []*sentToken
	if l.cond != nil {
		ts = condTokens(l.cond, k.Kind)
	}
	for _, x := range l.extra {
		if vocabularies[k.Kind] == nil {
			p.notes = append(p.notes, fmt.Sprintf("I left out %q: %s has no such value.", p.partText(x), subject))
			continue
		}
		ts = append(ts, condTokens(x, k.Kind)...)
	}
	one := func(c tripwire.Condition, desc string) { b.conds, b.descs = []tripwire.Condition{c}, []string{desc} }
	changed := func() bool {
		if hasPattern(changedWords, ts) {
			one(tripwire.Condition{Op: tripwire.OpChanged}, subject+" changes")
			return true
		}
		return false
	}
	fallback := func() {
		if isCount(k) {
			one(tripwire.Condition{Op: tripwire.OpGT, Threshold: 0.0}, countDesc(l, subject))
			return
		}
		one(tripwire.Condition{Op: tripwire.OpChanged}, subject+" changes")
		b.fallback = true
		b.vague = !hasPattern(directionPhrases, ts)
	}
	switch {
	case k.Kind == "rss":
		// its value is the newest matching item: a new one is a change
		one(tripwire.Condition{Op: tripwire.OpChanged}, fmt.Sprintf("a new item about %s in %s", pathOf(l.param), urlOf(l.param)))
	case l.cond == nil:
		fallback()
	case vocabularies[k.Kind] != nil:
		values, _, found := p.stateIn(k.Kind, ts)
		switch {
		case found && negatedBefore(ts, vocabularies[k.Kind]):
			// "isn't red or yellow": neither
			b.descs = []string{stateDesc(subject, k, "is not", values)}
			for _, v := range values {
				b.conds = append(b.conds, tripwire.Condition{Op: tripwire.OpNEQ, Threshold: v})
			}
			b.descs = append(b.descs, make([]string, len(values)-1)...)
			b.group = tripwire.OpAll
		case found && len(values) == 1:
			one(tripwire.Condition{Op: tripwire.OpEQ, Threshold: values[0]}, stateDesc(subject, k, "is", values))
		case found:
			in := make([]any, len(values))
			for i, v := range values {
				in[i] = v
			}
			one(tripwire.Condition{Op: tripwire.OpIn, Threshold: in}, stateDesc(subject, k, "is", values))
		case !changed():
			fallback()
		}
	default:
		if conds, descs, note, ok := p.numeric(k, ts, subject); ok {
			b.conds, b.descs = conds, descs
			b.group = rangeGroup(conds)
			if note != "" {
				p.notes = append(p.notes, note)
			}
			break
		}
		if v, neg, found := wordValue(ts); found && !isNumeric(k) {
			op, verb := tripwire.OpEQ, " is "
			if neg {
				op, verb = tripwire.OpNEQ, " is not "
			}
			one(tripwire.Condition{Op: op, Threshold: v}, subject+verb+v)
			break
		}
		if !changed() {
			fallback()
		}
	}
	if b.fallback && l.inherit != nil {
		return nil, "" // "…, at most": nothing said about the value
	}
	if l.cond != nil && l.cond.negate {
		// "unless EVE is offline": EVE is not offline
		if slices.ContainsFunc(b.conds, func(c tripwire.Condition) bool { return c.Op == tripwire.OpChanged || c.Op == tripwire.OpIn }) {
			return nil, "I can't watch for something not happening. What should hold instead?"
		}
		for i := range b.conds {
			b.conds[i].Op = negateOp(b.conds[i].Op)
		}
		if len(b.conds) == 1 {
			b.descs[0] = describeCond(subject, k, b.conds[0])
		} else {
			b.group = rangeGroup(b.conds)
			b.descs[0] = "not " + b.descs[0]
		}
	}
	b.label = p.leafLabel(l, b)
	if len(l.agents) == 0 {
		return []builtCond{b}, ""
	}
	// "any agent": the condition for each configured agent
	if len(b.conds) > 1 {
		return nil, "Which agent do you mean: " + joinOr(l.agents) + "?"
	}
	group := tripwire.OpAny
	if l.all {
		group = tripwire.OpAll
	}
	out := make([]builtCond, len(l.agents))
	for i, a := range l.agents {
		c := b
		c.src.Param = a
		name := p.subjectName(&watchLeaf{kind: k, param: a})
		c.subject, c.descs = name, []string{strings.Replace(b.descs[0], subject, name, 1)}
		c.group, c.member = group, i > 0
		if i > 0 {
			c.label = ""
		}
		out[i] = c
	}
	return out, ""
}

// stateIn finds the values of a kind's vocabulary in ts; strong reports
// whether one of them names the kind by itself.
func (p *parser) stateIn(kind string, ts []*sentToken) (values []string, strong, found bool) {
	vocab := vocabularies[kind]
	for i := 0; i < len(ts); i++ {
		best, n := -1, 0
		for k, sw := range vocab {
			if m := sw.p.at(ts, i); m > n {
				best, n = k, m
			}
		}
		if best < 0 {
			continue
		}
		sw := vocab[best]
		if !slices.Contains(values, sw.value) {
			values = append(values, sw.value)
		}
		strong = strong || sw.strong
		i += n - 1
	}
	return values, strong, len(values) > 0
}

// negatedBefore reports whether a negation comes before the first value
// of the vocabulary in ts.
func negatedBefore(ts []*sentToken, vocab []stateWord) bool {
	for i, t := range ts {
		for _, sw := range vocab {
			if sw.p.at(ts, i) > 0 {
				return false
			}
		}
		if negationWords[t.low] || strings.HasSuffix(t.low, "n't") || t.low == "longer" {
			return true
		}
	}
	return false
}

// stopValues are words that are not a value after "is".
var stopValues = wordSet("the", "a", "an", "not", "no", "it", "that", "this", "very", "really", "too", "so", "still",
	"again", "now", "being", "getting", "at", "in", "on", "of", "to", "for", "by", "and", "or", "will", "be",
	"going", "gonna", "any", "some", "more", "less", "than", "my", "your", "its", "their", "ever", "even",
	"become", "becomes", "turn", "turns", "get", "gets", "go", "goes", "is", "are", "was", "stay", "stays")

// wordValue finds "is <word>" in ts: the word and whether a negation came
// before it.
func wordValue(ts []*sentToken) (string, bool, bool) {
	for i := range ts {
		k, n := longestMatch(comparatorPatterns, ts, i)
		if n == 0 || !comparatorTable[k].weak {
			continue
		}
		j := i + n
		neg := false
		for j < len(ts) && (ts[j].low == "not" || ts[j].low == "no" || ts[j].low == "longer") {
			neg, j = true, j+1
		}
		if j < len(ts) && ts[j].kind == tWord && !ts[j].isNum && !stopValues[ts[j].low] {
			if _, d := longestMatch(directionPhrases, ts, i); d > 0 {
				continue // "gets worse", "goes down"
			}
			if _, c := longestMatch(changedWords, ts, j); c > 0 {
				continue
			}
			neg = neg || i > 0 && negationWords[ts[i-1].low] || strings.HasSuffix(ts[i].low, "n't")
			return ts[j].low, neg, true
		}
	}
	return "", false, false
}

// numeric reads a comparator and a number: "below 0.70", "at least 45",
// "between 0.5 and 0.7", "0.5 or less".
func (p *parser) numeric(k core.SourceKind, ts []*sentToken, subject string) ([]tripwire.Condition, []string, string, bool) {
	// between a and b; outside a and b
	for i := 0; i+3 < len(ts); i++ {
		if (ts[i].low == "between" || ts[i].low == "outside") && p.isValue(k, ts[i+1]) &&
			(ts[i+2].low == "and" || ts[i+2].low == "to") && p.isValue(k, ts[i+3]) {
			lo, loText, n1 := p.value(k, ts, i+1)
			hi, hiText, n2 := p.value(k, ts, i+3)
			if lo > hi {
				lo, hi, loText, hiText = hi, lo, hiText, loText
			}
			conds := []tripwire.Condition{{Op: tripwire.OpGTE, Threshold: lo}, {Op: tripwire.OpLTE, Threshold: hi}}
			if ts[i].low == "outside" {
				conds = []tripwire.Condition{{Op: tripwire.OpLT, Threshold: lo}, {Op: tripwire.OpGT, Threshold: hi}}
			}
			return conds, []string{subject + " " + ts[i].low + " " + loText + " and " + hiText, ""}, joinNotes(n1, n2), true
		}
	}
	var strong, weak *comparator
	si, wi, sn, wn := -1, -1, 0, 0
	for i := range ts {
		c, n := longestMatch(comparatorPatterns, ts, i)
		if n == 0 {
			continue
		}
		if comparatorTable[c].weak {
			if weak == nil {
				weak, wi, wn = &comparatorTable[c], i, n
			}
			continue
		}
		if strong == nil || comparatorTable[c].postfix && !strong.postfix {
			// "hits 0.7 or lower": the postfix says which way
			strong, si, sn = &comparatorTable[c], i, n
		}
	}
	pick := func(c *comparator, i, n int) ([]tripwire.Condition, []string, string, bool) {
		j := -1
		if c.postfix {
			if i > 0 && p.isValue(k, ts[i-1]) {
				j = i - 1
			}
		} else {
			for m := i + n; m < len(ts) && m <= i+n+3; m++ {
				if p.isValue(k, ts[m]) {
					j = m
					break
				}
				if !numberFillers[ts[m].low] {
					break
				}
			}
		}
		if j < 0 {
			return nil, nil, "", false
		}
		v, text, note := p.value(k, ts, j)
		op := c.op
		if negatedAt(ts, i) {
			op = negateOp(op)
		}
		return []tripwire.Condition{{Op: op, Threshold: v}}, []string{subject + " " + opWords(op) + " " + text}, note, true
	}
	if strong != nil {
		if c, d, n, ok := pick(strong, si, sn); ok {
			return c, d, n, true
		}
	}
	if weak != nil {
		if c, d, n, ok := pick(weak, wi, wn); ok {
			return c, d, n, true
		}
	}
	// "drops to 0.5" without "to": a direction and a number
	return nil, nil, "", false
}

// rangeGroup combines the two ends of a range: between is all, outside
// (below the low end or above the high end) is any.
func rangeGroup(conds []tripwire.Condition) tripwire.Op {
	if conds[0].Op == tripwire.OpLT {
		return tripwire.OpAny
	}
	return tripwire.OpAll
}

// negatedAt reports whether a negation stands just before the comparator
// at ts[i] ("is not below", "doesn't exceed").
func negatedAt(ts []*sentToken, i int) bool {
	for k := i - 1; k >= 0 && k >= i-2; k-- {
		if negationWords[ts[k].low] && ts[k].low != "stops" && ts[k].low != "leaves" || strings.HasSuffix(ts[k].low, "n't") {
			return true
		}
	}
	return false
}

// negateOp negates an op: not below is at or above.
func negateOp(op tripwire.Op) tripwire.Op {
	switch op {
	case tripwire.OpLT:
		return tripwire.OpGTE
	case tripwire.OpLTE:
		return tripwire.OpGT
	case tripwire.OpGT:
		return tripwire.OpLTE
	case tripwire.OpGTE:
		return tripwire.OpLT
	case tripwire.OpEQ:
		return tripwire.OpNEQ
	case tripwire.OpNEQ:
		return tripwire.OpEQ
	}
	return op
}

// isValue reports whether t is a number the kind can take.
func (p *parser) isValue(k core.SourceKind, t *sentToken) bool {
	if !t.isNum {
		return false
	}
	if t.kind == tNum {
		return true
	}
	_, unit := durationUnits[t.unit]
	return unit && isSeconds(k)
}

// value reads the number at ts[j] for kind k: percentages of ratios become
// fractions, durations of seconds kinds become seconds. It returns the
// value, how to show it, and a note on any reading.
func (p *parser) value(k core.SourceKind, ts []*sentToken, j int) (float64, string, string) {
	t := ts[j]
	v, text := t.num, t.text
	if t.pct {
		text += "%"
	}
	switch {
	case isSeconds(k) && t.unit != "":
		v = t.num * durationUnits[t.unit]
	case isSeconds(k) && j+1 < len(ts) && durationUnits[ts[j+1].low] > 0 && len(ts[j+1].low) > 1:
		v = t.num * durationUnits[ts[j+1].low]
		text += " " + ts[j+1].text
	case isRatio(k) && t.pct:
		v = t.num / 100
	case isRatio(k) && t.num > 1 && t.num <= 100:
		v = t.num / 100
		return v, text + "%", fmt.Sprintf("%s runs from 0 to 1, so I read %s as %s%% (%s).", k.Kind, t.text, t.text, formatNumber(v))
	case t.pct:
		return v, text, fmt.Sprintf("I read %s%% as %s.", t.text, t.text)
	}
	return v, text, ""
}

// hasPattern reports whether any of ps matches somewhere in ts.
func hasPattern(ps []pattern, ts []*sentToken) bool {
	for i := range ts {
		if _, n := longestMatch(ps, ts, i); n > 0 {
			return true
		}
	}
	return false
}

// joinNotes joins notes, each once.
func joinNotes(notes ...string) string {
	var out []string
	for _, n := range notes {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return strings.Join(out, " ")
}

// formatNumber renders a number without trailing zeros.
func formatNumber(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// ---- descriptions ----

// subjectName names what a leaf watches for people: "GI", "EVE",
// "EVE's MII", "micro-agent DAEDALUS-µ5".
func (p *parser) subjectName(l *watchLeaf) string {
	if l.inherit != nil {
		return p.subjectName(l.inherit)
	}
	k := l.kind
	param := l.param
	if param == "" && len(l.agents) > 0 {
		param = l.agents[0]
	}
	if noun, ok := subjectNouns[k.Kind]; ok {
		switch {
		case k.Kind == card.SourceCardsNeedsDecision && param != "":
			return noun + " from " + param
		case noun == "":
			return param
		case takesAgent(k):
			return param + "'s " + noun
		}
		return noun
	}
	switch k.Kind {
	case "url-fetch":
		return pathOf(param) + " at " + urlOf(param)
	case "rss":
		return urlOf(param)
	}
	name := ""
	for _, pt := range []*clause{l.subj, l.cond, l.lender} {
		if pt == nil {
			continue
		}
		for _, a := range pt.aliases {
			if a.kind.Kind == k.Kind && name == "" {
				name = a.text
			}
		}
	}
	if name == "" {
		name = firstAlias(k)
	}
	if name == "" {
		name = k.Kind
	}
	if param != "" {
		name += " " + param
	}
	return name
}

// countDesc describes a count above 0: "a card needs your decision".
func countDesc(l *watchLeaf, subject string) string {
	switch l.kind.Kind {
	case card.SourceCardsNeedsDecision:
		switch {
		case l.param != "":
			return "a card needs a decision from " + l.param
		case l.mine:
			return "a card needs your decision"
		}
		return "a card needs a decision"
	case card.SourceCardsBlocked:
		return "a card is blocked"
	}
	return subject + " above 0"
}

// stateDesc describes a state condition: "EVE is offline".
func stateDesc(subject string, k core.SourceKind, verb string, values []string) string {
	if k.Kind == card.SourceCardState && len(values) == 1 && values[0] == string(card.NeedsDecision) && verb == "is" {
		return subject + " needs a decision"
	}
	v := joinOr(values)
	if k.Kind == card.SourceCardState {
		v = strings.ReplaceAll(v, "_", " ")
	}
	return subject + " " + verb + " " + v
}

// describeCond renders one condition for people.
func describeCond(subject string, k core.SourceKind, c tripwire.Condition) string {
	v := fmt.Sprint(c.Threshold)
	switch c.Op {
	case tripwire.OpEQ:
		return stateDesc(subject, k, "is", []string{v})
	case tripwire.OpNEQ:
		return stateDesc(subject, k, "is not", []string{v})
	case tripwire.OpChanged:
		return subject + " changes"
	}
	return subject + " " + opWords(c.Op) + " " + v
}

// opWords says an op in words.
func opWords(op tripwire.Op) string {
	switch op {
	case tripwire.OpLT:
		return "below"
	case tripwire.OpLTE:
		return "at or below"
	case tripwire.OpGT:
		return "above"
	case tripwire.OpGTE:
		return "at or above"
	case tripwire.OpNEQ:
		return "is not"
	}
	return "is"
}

// firstAlias is the kind's first alias, or "".
func firstAlias(k core.SourceKind) string {
	if len(k.Aliases) > 0 {
		return k.Aliases[0]
	}
	return ""
}

// urlOf and pathOf split a url-fetch or rss param.
func urlOf(param string) string { u, _, _ := strings.Cut(param, " "); return u }

func pathOf(param string) string { _, p, _ := strings.Cut(param, " "); return p }

// joinOr joins names as "a, b or c".
func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// singleLine collapses whitespace and control characters.
func singleLine(s string) string {
	return strings.Join(strings.Fields(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)), " ")
}

// ---- labels ----

// leafLabel is the words of the sentence that say what the leaf watches.
func (p *parser) leafLabel(l *watchLeaf, b builtCond) string {
	if b.fallback || l.cond == nil || l.kind.Kind == "rss" {
		return strings.Join(b.descs, " and ")
	}
	condText := p.partText(l.cond)
	for _, x := range l.extra {
		word := x.connWord
		if x.conn == connAny || word == "" {
			word = "or"
		}
		condText += " " + word + " " + p.partText(x)
	}
	switch {
	case l.lender != nil && !l.absorbed:
		return p.partText(l.subj)
	case l.lender != nil || l.subj != nil && l.subj != l.cond:
		return withSubject(p.partText(l.subj), condText)
	}
	return condText
}

// withSubject puts the subject named in one clause before what another
// says of it: "the vault balance" + "it reaches 45".
func withSubject(subj, cond string) string {
	first := strings.ToLower(strings.ReplaceAll(strings.Fields(cond + " x")[0], "’", "'"))
	switch {
	case possessivePronouns[first]:
		return subj + "'s " + dropPronoun(cond)
	case pronounWords[first]:
		return subj + " " + dropPronoun(cond)
	}
	return subj + " " + cond
}

// dropPronoun drops a leading pronoun: "it reaches 45" → "reaches 45".
func dropPronoun(s string) string {
	f := strings.Fields(s)
	if len(f) > 1 && pronounWords[strings.ToLower(strings.ReplaceAll(f[0], "’", "'"))] {
		return strings.Join(f[1:], " ")
	}
	return s
}

// partText is the clause as written, without what intent, push and
// cooldown phrases took from its edges.
func (p *parser) partText(pt *clause) string {
	v := pt.view
	if len(v) == 0 {
		return ""
	}
	var words []string
	run := v[0].start
	prevEnd := v[0].start
	for _, t := range pt.toks {
		if t.start < v[0].start || t.end > v[len(v)-1].end {
			continue
		}
		if t.used {
			if prevEnd > run {
				words = append(words, p.text[run:prevEnd])
			}
			run = t.end
			prevEnd = t.end
			continue
		}
		prevEnd = t.end
	}
	if prevEnd > run {
		words = append(words, p.text[run:prevEnd])
	}
	return strings.Join(strings.Fields(strings.Join(words, " ")), " ")
}

// cleanLabel makes a label Validate accepts: one line, at most
// MaxLabelLength characters, starting with a capital.
func cleanLabel(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	s = strings.Join(strings.Fields(s), " ")
	s = strings.TrimRight(s, " .,;:!?-")
	for _, the := range []string{"the ", "The "} {
		s = strings.TrimPrefix(s, the)
	}
	first, _, _ := strings.Cut(s, " ")
	if r, w := utf8.DecodeRuneInString(s); w > 0 && unicode.IsLower(r) && strings.IndexFunc(first, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
		s = string(unicode.ToUpper(r)) + s[w:]
	}
	if utf8.RuneCountInString(s) > tripwire.MaxLabelLength {
		runes := []rune(s)[:tripwire.MaxLabelLength-1]
		cut := string(runes)
		if i := strings.LastIndex(cut, " "); i > tripwire.MaxLabelLength/2 {
			cut = cut[:i]
		}
		s = strings.TrimRight(cut, " .,;:!?-") + "…"
	}
	return s
}

// ---- assembling ----

const askAllOrAny = `Should all of those hold at once, or any one of them? Say it with only "and" or only "or".`

// assemble combines the built conditions into one draft: compound when
// there are several, with the action, cooldown, label and notes.
func (p *parser) assemble(bs []builtCond, mine bool) WatchIntent {
	var conds []tripwire.Condition
	var srcs []core.SourceRef
	var descs []string
	var label strings.Builder
	combine := tripwire.Op("")
	agree := func(op tripwire.Op) bool {
		if combine == "" {
			combine = op
		}
		return combine == op
	}
	fallbacks, while := 0, false
	for i, b := range bs {
		if i > 0 {
			op := tripwire.OpAll
			switch {
			case b.member:
				op = b.group
			case b.conn == connAny:
				op = tripwire.OpAny
			}
			if !agree(op) {
				return askWatch(askAllOrAny)
			}
		}
		if len(b.conds) > 1 && !agree(b.group) {
			return askWatch(askAllOrAny)
		}
		for j, c := range b.conds {
			conds = append(conds, c)
			srcs = append(srcs, b.src)
			if b.descs[j] != "" {
				descs = append(descs, b.descs[j])
			}
		}
		if b.fallback {
			fallbacks++
		}
		while = while || b.connWord == "while" || b.connWord == "whilst"
		if b.label == "" {
			continue
		}
		if label.Len() > 0 {
			switch {
			case b.conn == connAny:
				label.WriteString(" or ")
			case b.conn == connAll && b.connWord != "":
				label.WriteString(" " + b.connWord + " ")
			case b.conn == connAll:
				label.WriteString(" and ")
			default:
				label.WriteString(", ")
			}
		}
		label.WriteString(b.label)
	}
	if p.question && !p.has(classWatch) && !slices.ContainsFunc(bs, func(b builtCond) bool { return !b.vague }) {
		return WatchIntent{} // "can you tell me if GI is ok?" asks how GI is
	}
	if len(conds) > 1 && fallbacks == len(bs) {
		combine = tripwire.OpAny // "watch GI and EVE": either changing is news
	}
	if len(conds) > tripwire.MaxSubConditions {
		return askWatch(fmt.Sprintf("I can combine at most %d conditions in one tripwire. Which matter most?", tripwire.MaxSubConditions))
	}
	joiner := " and "
	switch {
	case combine == tripwire.OpAny:
		joiner = " or "
	case while:
		joiner = " while "
	}
	d := tripwire.Draft{Source: srcs[0], Condition: conds[0]}
	desc := strings.Join(descs, joiner)
	if len(conds) > 1 {
		if c, ok := collapseIn(combine, srcs, conds); ok {
			d.Condition = c
			values := make([]string, 0, len(conds))
			for _, v := range c.Threshold.([]any) {
				values = append(values, fmt.Sprint(v))
			}
			desc = bs[0].subject + " is " + joinOr(values)
		} else {
			sub := make([]tripwire.Condition, len(conds))
			for i, c := range conds {
				sub[i] = c
				if srcs[i] != srcs[0] {
					src := srcs[i]
					sub[i].Source = &src
				}
			}
			d.Condition = tripwire.Condition{Op: combine, Conditions: sub}
		}
	}
	push := p.has(classTell) || p.has(classNotify) || p.has(classWorried) || p.pushOn
	d.Action = &tripwire.Action{Journal: true, Push: push && !p.pushOff}
	cooldown := tripwire.DefaultCooldownSeconds
	if p.cooldown != nil {
		cooldown = *p.cooldown
	}
	d.CooldownSeconds = &cooldown
	for _, l := range []string{label.String(), desc, srcs[0].Kind, "Tripwire"} {
		if d.Label = cleanLabel(l); d.Label != "" {
			break
		}
	}
	note := joinNotes(p.notes...)
	if fallbacks > 0 {
		note = joinNotes("No number or direction was given, so this fires whenever the value changes.", note)
	}
	return WatchIntent{Kind: IntentProposal, Draft: d, Description: singleLine(desc), Note: note, Mine: mine}
}

// collapseIn turns "mode is yellow or mode is red" into "mode in [yellow,
// red]".
func collapseIn(combine tripwire.Op, srcs []core.SourceRef, conds []tripwire.Condition) (tripwire.Condition, bool) {
	if combine != tripwire.OpAny {
		return tripwire.Condition{}, false
	}
	var values []any
	for i, c := range conds {
		if srcs[i] != srcs[0] || c.Op != tripwire.OpEQ {
			return tripwire.Condition{}, false
		}
		if !slices.Contains(values, c.Threshold) {
			values = append(values, c.Threshold)
		}
	}
	return tripwire.Condition{Op: tripwire.OpIn, Threshold: values}, true
}
