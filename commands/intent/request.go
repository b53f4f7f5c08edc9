package intent

import (
	"math"
	"slices"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

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
		toks  []*token
		class requestClass
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
		for k, ph := range requestPhrases {
			if m := ph.p.at(ts, i); m > n {
				best, n = k, m
			}
		}
		if best < 0 {
			continue
		}
		class := requestPhrases[best].class
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
func (p *parser) has(class requestClass) bool { return slices.Contains(p.classes, class) }

// pushPhrases reads "quietly", "with a push" and the like, and drops
// fillers.
func (p *parser) pushPhrases() {
	ts := unusedTokens(p.toks)
	for i := 0; i < len(ts); i++ {
		if _, n := longestMatch(fillers, ts, i); n > 0 {
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
func cooldownAt(ts []*token, i int) (float64, int) {
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
func durationCooldown(ts []*token, i int) (float64, int) {
	if d, n := durationAt(ts, i); n > 0 && i+n < len(ts) && cooldownWords[ts[i+n].low] {
		return d, n + 1
	}
	return 0, 0
}

// cooldownPhrase reads "[no more than|at most] once|twice|N times a <unit>",
// "every <duration>", "cooldown of <duration>", "no cooldown".
func cooldownPhrase(ts []*token, i int) (float64, int) {
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
func durationAt(ts []*token, i int) (float64, int) {
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
