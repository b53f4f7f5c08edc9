package intent

import (
	"fmt"
	"slices"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

func (p *parser) separators() {
	ts := freeTokens(p.toks)
	for i := 0; i < len(ts); i++ {
		t := ts[i]
		if t.kind == tPunct && isRangeDash(ts, i) {
			continue // "0.6-0.8"
		}
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
			// "0.5 or less" is one comparator; "under 0.6 or over 0.9" two
			if orComparators[next] && !(i+2 < len(ts) && ts[i+2].isNum) || prev == "at" {
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
func isBetween(ts []*token, i int) bool {
	if i == 0 || i+1 >= len(ts) || !ts[i-1].isNum || !ts[i+1].isNum {
		return false
	}
	for k := i - 2; k >= 0 && k >= i-3; k-- {
		if rangeWords[ts[k].low] {
			return true
		}
	}
	return false
}

// isRangeDash reports whether the dash at ts[i] joins the two ends of a
// range: "in the range 0.6-0.8", "between 10–20".
func isRangeDash(ts []*token, i int) bool {
	return (ts[i].low == "-" || ts[i].low == "–") && i > 0 && i+1 < len(ts) && ts[i-1].isNum && ts[i+1].isNum
}

// clause is one clause of the sentence and what it names.
type clause struct {
	toks     []*token // every token of the clause
	view     []*token // those no intent, push or cooldown phrase took
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
func (pt *clause) free() []*token {
	var out []*token
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
	if hasPattern(directionPhrases, ts) || hasPattern(changedWords, ts) || silenced(ts) {
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
		if !a.kind.Value.Numeric() && vocabularies[a.kind.Kind] == nil {
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
func condTokens(pt *clause, kind string) []*token {
	var out []*token
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
			case last != nil && silenced(pt.free()):
				// "EVE turns red or hasn't reported for 2 hours": another
				// kind, of the agent before
				add(&watchLeaf{cond: pt, conn: conn, connWord: word})
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
