package intent

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// condition reads the leaf's condition for its kind and describes it; it
// returns a question when the sentence cannot be built.
func (p *parser) condition(l *watchLeaf) ([]builtCond, string) {
	k := l.kind
	subject := p.subjectName(l)
	b := builtCond{src: core.SourceRef{Kind: k.Kind, Param: l.param}, subject: subject, conn: l.conn, connWord: l.connWord}
	var ts []*token
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
		if k.Value == core.ValueCount {
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
	case (k.Kind == fleet.SourceAgentSilence || k.Kind == fleet.SourceAgentHeartbeatAge) && silenced(ts):
		c, text, _ := silence(ts)
		one(c, subject+" "+opWords(c.Op)+" "+text)
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
			if span, ok := window(ts); ok && k.Value != core.ValueSeconds {
				p.notes = append(p.notes, fmt.Sprintf("I left out %q: a tripwire tests each value as it is read, so it fires on the first one that matches.", span))
			}
			break
		}
		if v, neg, found := wordValue(ts); found && !k.Value.Numeric() {
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
func (p *parser) stateIn(kind string, ts []*token) (values []string, strong, found bool) {
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
func negatedBefore(ts []*token, vocab []stateWord) bool {
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
func wordValue(ts []*token) (string, bool, bool) {
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
func (p *parser) numeric(k core.SourceKind, ts []*token, subject string) ([]tripwire.Condition, []string, string, bool) {
	// between a and b; outside a and b
	for i := 0; i+3 < len(ts); i++ {
		if rangeWords[ts[i].low] && p.isValue(k, ts[i+1]) &&
			(ts[i+2].low == "and" || ts[i+2].low == "to" || isRangeDash(ts, i+2)) && p.isValue(k, ts[i+3]) {
			lo, loText, n1 := p.value(k, ts, i+1)
			hi, hiText, n2 := p.value(k, ts, i+3)
			if k.Value == core.ValueSeconds && ts[i+1].kind == tNum {
				lo *= sharedUnit(ts, i+3) // "between 5 and 10 minutes"
			}
			if lo > hi {
				lo, hi, loText, hiText = hi, lo, hiText, loText
			}
			conds := []tripwire.Condition{{Op: tripwire.OpGTE, Threshold: lo}, {Op: tripwire.OpLTE, Threshold: hi}}
			word := "between"
			if outsideRange(ts, i) {
				conds = []tripwire.Condition{{Op: tripwire.OpLT, Threshold: lo}, {Op: tripwire.OpGT, Threshold: hi}}
				word = "outside"
			}
			return conds, []string{subject + " " + word + " " + loText + " and " + hiText, ""}, joinNotes(n1, n2), true
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

// sharedUnit is the seconds per unit of the duration at ts[j] ("10
// minutes", "10min"), which a bare number before it shares; 1 when there
// is none.
func sharedUnit(ts []*token, j int) float64 {
	if u := durationUnits[ts[j].unit]; u > 0 {
		return u
	}
	if j+1 < len(ts) && len(ts[j+1].low) > 1 && durationUnits[ts[j+1].low] > 0 {
		return durationUnits[ts[j+1].low]
	}
	return 1
}

// rangeWords open a range: "between 0.6 and 0.8", "within 10 to 20",
// "in the range 0.6 to 0.8", "outside 0.5 and 0.7".
var rangeWords = wordSet("between", "outside", "within", "range")

// outsideRange reports whether the range at ts[i] is to be left: "outside
// 0.5 and 0.7", "not between", "leaves the range", "out of the range".
func outsideRange(ts []*token, i int) bool {
	if ts[i].low == "outside" || negatedAt(ts, i) {
		return true
	}
	for k := i - 1; k >= 0 && k >= i-3; k-- {
		switch ts[k].low {
		case "leaves", "leave", "left", "exits", "exit", "out", "outside":
			return true
		}
	}
	return false
}

// silenced reports whether ts say how long an agent has been silent.
func silenced(ts []*token) bool {
	_, _, ok := silence(ts)
	return ok
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
func negatedAt(ts []*token, i int) bool {
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
func (p *parser) isValue(k core.SourceKind, t *token) bool {
	if !t.isNum {
		return false
	}
	if t.kind == tNum {
		return true
	}
	_, unit := durationUnits[t.unit]
	return unit && k.Value == core.ValueSeconds
}

// value reads the number at ts[j] for kind k: percentages of ratios become
// fractions, durations of seconds kinds become seconds. It returns the
// value, how to show it, and a note on any reading.
func (p *parser) value(k core.SourceKind, ts []*token, j int) (float64, string, string) {
	t := ts[j]
	v, text := t.num, t.text
	if t.pct {
		text += "%"
	}
	switch {
	case k.Value == core.ValueSeconds && t.unit != "":
		v = t.num * durationUnits[t.unit]
	case k.Value == core.ValueSeconds && j+1 < len(ts) && durationUnits[ts[j+1].low] > 0 && len(ts[j+1].low) > 1:
		v = t.num * durationUnits[ts[j+1].low]
		text += " " + ts[j+1].text
	case k.Value == core.ValueRatio && t.pct:
		v = t.num / 100
	case k.Value == core.ValueRatio && t.num > 1 && t.num <= 100:
		v = t.num / 100
		return v, text + "%", fmt.Sprintf("%s runs from 0 to 1, so I read %s as %s%% (%s).", k.Kind, t.text, t.text, formatNumber(v))
	case t.pct:
		return v, text, fmt.Sprintf("I read %s%% as %s.", t.text, t.text)
	}
	return v, text, ""
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
