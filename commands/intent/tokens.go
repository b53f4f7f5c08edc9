package intent

import (
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// tokKind says what a token is.
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

// tokRole says what a token was taken for: a name or a param.
type tokRole uint8

const (
	roleNone tokRole = iota
	roleAlias
	roleAgent
	roleParam
)

// token is one word, number, symbol, punctuation mark, URL or Matrix ID
// of the sentence, and what the passes made of it.
type token struct {
	kind       tokKind
	text       string // as written, a possessive 's dropped
	low        string // lower case, ’ read as '
	fold       string // low without accents: how names are matched
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

// tokenize splits a sentence into words, numbers, symbols, punctuation,
// URLs and Matrix user IDs.
func tokenize(s string) []*token {
	var toks []*token
	add := func(t *token) { toks = append(toks, t) }
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
			add(&token{kind: tURL, text: s[i:end], low: s[i:end], start: i, end: end})
			i = end
		case r == '@' && isMXID(strings.TrimRight(s[i:chunkEnd(s, i)], trailingPunct)):
			end := i + len(strings.TrimRight(s[i:chunkEnd(s, i)], trailingPunct))
			add(&token{kind: tMXID, text: s[i:end], low: s[i:end], start: i, end: end})
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
			add(&token{kind: kind, text: s[i:j], low: s[i:j], start: i, end: j})
			i = j
		default:
			add(&token{kind: tPunct, text: s[i : i+w], low: s[i : i+w], start: i, end: i + w})
			i += w
		}
	}
	// "70 %", "70 percent"
	out := toks[:0]
	for _, t := range toks {
		t.fold = fold(t.low)
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
func signAllowed(toks []*token) bool {
	if len(toks) == 0 {
		return true
	}
	last := toks[len(toks)-1]
	return last.kind == tSym || last.kind == tPunct || last.kind == tWord && !last.isNum
}

// scanNumber reads "0.70", ".7", "-5", "1,000", "70%" at s[i:]; a number
// followed by letters ("6h") is a word that keeps its value and unit.
func scanNumber(s string, i int) *token {
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
	t := &token{kind: tNum, start: i, end: j, text: s[i:j], low: s[i:j]}
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
			if w.low == "k" {
				// "2.5k": thousands
				t.kind, t.unit, t.num = tNum, "", t.num*1000
			}
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
func scanWord(s string, i int) *token {
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
	t := &token{kind: tWord, start: i, end: j, text: s[i:j]}
	t.low = strings.ToLower(strings.ReplaceAll(t.text, "’", "'"))
	if stem, ok := strings.CutSuffix(t.low, "'s"); ok && stem != "" && !notPossessive[stem] {
		cut := strings.LastIndexAny(t.text, "'’")
		t.text, t.low, t.end = t.text[:cut], stem, i+cut
	}
	return t
}

// fold is s in lower case without accents, so that "ZOE-2" finds the agent
// "Zoë-2" and "aeroskobing" finds "Ærøskøbing": Latin letters lose their
// diacritics (æ is ae, ß is ss), combining marks are dropped.
func fold(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case unicode.Is(unicode.Mn, r):
		case foldLetters[r] != "":
			b.WriteString(foldLetters[r])
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// foldLetters are the lower-case Latin letters with diacritics and what
// they fold to.
var foldLetters = func() map[rune]string {
	m := map[rune]string{'æ': "ae", 'œ': "oe", 'ß': "ss", 'ø': "o", 'ł': "l", 'đ': "d", 'ð': "d", 'þ': "th", 'ı': "i", 'ŋ': "n"}
	for base, letters := range map[string]string{
		"a": "àáâãäåāăą", "c": "çćĉċč", "d": "ď", "e": "èéêëēĕėęě", "g": "ĝğġģ", "h": "ĥħ", "i": "ìíîïĩīĭįİ",
		"j": "ĵ", "k": "ķ", "l": "ĺļľŀ", "n": "ñńņňŉ", "o": "òóôõöōŏő", "r": "ŕŗř", "s": "śŝşšș", "t": "ţťŧț",
		"u": "ùúûüũūŭůűų", "w": "ŵ", "y": "ýÿŷ", "z": "źżž",
	} {
		for _, r := range letters {
			m[r] = base
		}
	}
	return m
}()
