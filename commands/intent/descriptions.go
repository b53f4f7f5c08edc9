package intent

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

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
		case k.ParamType == core.ParamAgent:
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
	s = strings.TrimRight(singleLine(s), " .,;:!?-")
	for _, the := range []string{"the ", "The "} {
		s = strings.TrimPrefix(s, the)
	}
	first, _, _ := strings.Cut(s, " ")
	if r, _ := utf8.DecodeRuneInString(s); unicode.IsLower(r) && strings.IndexFunc(first, func(r rune) bool { return !unicode.IsLetter(r) }) < 0 {
		s = core.UpperFirst(s)
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
