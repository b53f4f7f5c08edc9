package intent

import (
	"strings"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// Silence: "tell me if ZEUS hasn't reported for 2 hours" watches how long
// the agent has been silent (agent.silence, which counts from when it was
// first expected if it never reported; agent.heartbeat_age where silence
// is not registered), not its status. A clause is about silence when it says so (a word of
// silenceCues) and how long (a duration after "for", "in", "within",
// "over", "been" or a comparator).

// silenceCues say that an agent has not been heard from.
var silenceCues = wordSet("reported", "reporting", "report", "reports", "heartbeat", "heartbeats", "heartbeated",
	"heard", "silent", "quiet", "dark", "offline", "unreachable", "unresponsive", "responded", "responding",
	"checked", "word", "missing", "down")

// durationIntro come before how long something has lasted.
var durationIntro = wordSet("for", "in", "within", "over", "during", "been", "past", "last", "the", "than")

// silence reads "hasn't reported for 2 hours", "has been quiet for more
// than an hour", "no heartbeat from EVE in the last 30 minutes": the
// condition on the seconds since the last heartbeat and how to say the
// duration.
func silence(ts []*token) (tripwire.Condition, string, bool) {
	cue := false
	for _, t := range ts {
		cue = cue || silenceCues[t.low]
	}
	if !cue {
		return tripwire.Condition{}, "", false
	}
	for i := range ts {
		secs, n := durationAt(ts, i)
		j := i - 1 // "for at least 2 hours": back to "for"
		for j >= 0 && windowFillers[ts[j].low] && !durationIntro[ts[j].low] {
			j--
		}
		if n == 0 || secs <= 0 || j < 0 || !durationIntro[ts[j].low] {
			continue
		}
		op := tripwire.OpGTE // "for 2 hours": two hours or more
		for k := i - 1; k >= 0 && k >= i-3; k-- {
			if c, m := longestMatch(comparatorPatterns, ts, k); m > 0 && k+m <= i && !comparatorTable[c].weak && !comparatorTable[c].postfix {
				op = comparatorTable[c].op
				break
			}
		}
		return tripwire.Condition{Op: op, Threshold: secs}, spanText(ts[i : i+n]), true
	}
	return tripwire.Condition{}, "", false
}

// window finds a span of time a condition was said to hold over or count
// within ("for 10 minutes", "in an hour", "over the last day"), which a
// tripwire cannot keep: it tests each value as it is read.
func window(ts []*token) (string, bool) {
	for i := range ts {
		if !durationIntro[ts[i].low] || ts[i].low == "the" || ts[i].low == "than" || ts[i].low == "been" {
			continue
		}
		j := i + 1
		for j < len(ts) && windowFillers[ts[j].low] {
			j++
		}
		if _, n := durationAt(ts, j); n > 0 {
			return spanText(ts[i : j+n]), true
		}
	}
	return "", false
}

// windowFillers may stand between "for" and how long: "for more than 5
// minutes", "over the last day".
var windowFillers = wordSet("the", "last", "past", "more", "less", "than", "longer", "at", "least", "over", "about")

// spanText is the text of adjacent tokens as written.
func spanText(ts []*token) string {
	words := make([]string, len(ts))
	for i, t := range ts {
		words[i] = t.text
	}
	return strings.Join(words, " ")
}
