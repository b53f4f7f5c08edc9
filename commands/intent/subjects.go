package intent

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

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
	agentBefore := l.prev != nil && l.prev.kind.ParamType == core.ParamAgent
	if _, _, ok := silence(condTokens(cp, fleet.SourceAgentSilence)); (agentish || agentBefore) && ok &&
		(lookup(fleet.SourceAgentSilence) || lookup(fleet.SourceAgentHeartbeatAge)) {
		return true // "hasn't reported for 2 hours"
	}
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
	case k.Param == "":
	case k.ParamType == core.ParamAgent:
		var agents []string
		anyAgent, all := false, false
		for _, q := range from {
			if len(agents) == 0 {
				agents = q.agents
			}
			anyAgent, all = anyAgent || q.anyAgent, all || q.allAgents
		}
		if len(agents) == 0 && !anyAgent && l.prev != nil && l.prev.param != "" && l.prev.kind.ParamType == core.ParamAgent {
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
	case k.ParamType == core.ParamCard:
		for _, q := range from {
			if l.param == "" {
				l.param = q.cardID
			}
		}
		if l.param == "" {
			return "Which card? Give its id (card_…)."
		}
	case k.ParamType == core.ParamURL:
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
	case k.ParamType == core.ParamUser:
		// "my decision": the sender, which the caller knows
		for _, q := range from {
			if l.param == "" {
				l.param = q.mxid
			}
			for i, t := range q.toks {
				if t.low == "my" || t.low == "me" && i > 0 && toMe[q.toks[i-1].low] ||
					t.alias != nil && slices.Contains(foldWords(t.alias.text), "my") {
					l.mine = true
				}
			}
		}
	default:
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
func looksLikeName(t *token) bool {
	if t.kind != tWord || t.role != roleNone || functionWords[t.low] || stopValues[t.low] {
		return false
	}
	if _, n := longestMatch(comparatorPatterns, []*token{t}, 0); n > 0 {
		return false
	}
	return strings.IndexFunc(t.text, func(r rune) bool {
		return unicode.IsUpper(r) || unicode.IsDigit(r) || r == '-' || r == '_' || r > unicode.MaxASCII
	}) >= 0
}
