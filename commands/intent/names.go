package intent

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/jarvis-hmi/jarvis/core"
)

// aliasHit is a kind named in the sentence, by its name or an alias.
type aliasHit struct {
	kind  core.SourceKind
	text  string // as written
	first int    // index of its first token in the sentence
}

// namePattern is a name to look for: an agent's, or a kind's.
type namePattern struct {
	words []string
	kind  core.SourceKind
	agent string
}

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
			strings.Contains(lowURL, "atom") || slices.ContainsFunc(p.toks, func(u *token) bool { return feedWords[u.low] }))
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
func isCardID(t *token) bool {
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
	ts := tokenize(w)
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
		if w := foldWords(a); len(w) > 0 {
			agentNames = append(agentNames, namePattern{words: w, agent: a})
		}
	}
	for _, k := range p.kinds {
		for _, n := range append([]string{k.Kind}, k.Aliases...) {
			if w := foldWords(n); len(w) > 0 {
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
			if slices.ContainsFunc(hit, func(t *token) bool { return t.role != roleNone }) {
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
func freeTokens(toks []*token) []*token {
	var out []*token
	for _, t := range toks {
		if !t.used && t.role == roleNone {
			out = append(out, t)
		}
	}
	return out
}

// foldWords tokenizes a name into folded words.
func foldWords(s string) []string {
	var out []string
	for _, t := range tokenize(s) {
		out = append(out, t.fold)
	}
	return out
}

// wordsAt matches a name at ts[i:]; plural reports whether a word may
// differ from the name by a trailing s ("needs"/"need", "cards"/"card").
// The tokens must be adjacent in the sentence, not merely in the view.
func wordsAt(words []string, ts []*token, i int, plural bool) bool {
	if i+len(words) > len(ts) {
		return false
	}
	for k, w := range words {
		t := ts[i+k]
		if k > 0 && t.start-ts[i+k-1].end > 3 {
			return false
		}
		if t.fold == w {
			continue
		}
		if plural && (len(w) > 2 && t.fold == w+"s" || len(w) > 4 && w == t.fold+"s") {
			continue
		}
		return false
	}
	return true
}

// separators marks the words and punctuation that split clauses.
