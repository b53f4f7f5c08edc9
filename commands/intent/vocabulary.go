package intent

import (
	"strings"

	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

type requestClass uint8

const (
	classNone requestClass = iota
	classWatch
	classTell
	classNotify
	classJournal
	classWorried
)

type requestPhrase struct {
	p     pattern
	class requestClass
}

// requestPhrases make a sentence a request to watch something, by class.
var requestPhrases = func() []requestPhrase {
	var out []requestPhrase
	add := func(class requestClass, ss ...string) {
		for _, s := range ss {
			out = append(out, requestPhrase{phraseOf(s), class})
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

// fillers are dropped from what is read: "keep an eye on GI for me".
var fillers = phrasesOf("for me|us", "please", "pls", "plz", "thanks", "thank you", "if you can|could", "if possible",
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
	fleet.SourceAgentCrashLoop:    "restarts",
	fleet.SourceAgentSilence:      "silence",
	sourceBreakerState:            "breaker",
	card.SourceCardState:          "",
	card.SourceCardsNeedsDecision: "cards waiting for a decision",
	card.SourceCardsBlocked:       "blocked cards",
}
