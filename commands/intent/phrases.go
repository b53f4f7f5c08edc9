package intent

import (
	"slices"
	"strings"
)

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
func (p pattern) at(ts []*token, i int) int {
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
func longestMatch(ps []pattern, ts []*token, i int) (int, int) {
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

// hasPattern reports whether any of ps matches somewhere in ts.
func hasPattern(ps []pattern, ts []*token) bool {
	for i := range ts {
		if _, n := longestMatch(ps, ts, i); n > 0 {
			return true
		}
	}
	return false
}
