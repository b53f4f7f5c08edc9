package commands

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/jarvis-hmi/jarvis/core"
)

// Splitting a command's arguments: words, quoted text, flags.

// argWord is one argument, and whether it was quoted (a quoted "--accept" is
// text, not a flag).
type argWord struct {
	text   string
	quoted bool
}

// quoteClosers maps each opening quote to the quotes that may close it;
// phones and bridges turn straight quotes into curly ones.
var quoteClosers = map[rune]string{
	'"': "\"”“", '“': "”\"“", '„': "“”\"", '”': "”\"",
	'\'': "'’", '‘': "’'", '’': "’'",
	'«': "»", '»': "«",
}

// splitArgs splits arguments at spaces, keeping quoted text together. A
// quote opens only at the start of a word and closes before a space or
// the end, so apostrophes inside words are text. `--flag=value` is split
// into the flag and its value.
func splitArgs(s string) ([]argWord, error) {
	rs := []rune(s)
	var out []argWord
	for i := 0; i < len(rs); {
		if unicode.IsSpace(rs[i]) {
			i++
			continue
		}
		if closers, ok := quoteClosers[rs[i]]; ok {
			var b strings.Builder
			j, closed := i+1, false
			for ; j < len(rs); j++ {
				if rs[j] == '\\' && j+1 < len(rs) && (rs[j+1] == '\\' || strings.ContainsRune(closers, rs[j+1])) {
					j++
					b.WriteRune(rs[j])
					continue
				}
				if strings.ContainsRune(closers, rs[j]) && (j+1 == len(rs) || unicode.IsSpace(rs[j+1])) {
					closed = true
					break
				}
				b.WriteRune(rs[j])
			}
			if !closed {
				return nil, fmt.Errorf("the quote that opens `%s` is never closed", core.TruncateAfter(string(rs[i:]), 30))
			}
			out = append(out, argWord{text: b.String(), quoted: true})
			i = j + 1
			continue
		}
		j := i
		for j < len(rs) && !unicode.IsSpace(rs[j]) {
			if rs[j] == '=' {
				if _, isFlag := flagName(argWord{text: string(rs[i:j])}); isFlag {
					break
				}
			}
			j++
		}
		out = append(out, argWord{text: string(rs[i:j])})
		if j < len(rs) && rs[j] == '=' {
			j++
		}
		i = j
	}
	return out, nil
}

// flagName returns the name of a flag word, "--accept" → "accept". Phones
// turn "--" into a dash, so "—accept" and "–accept" are flags too.
func flagName(w argWord) (string, bool) {
	if w.quoted {
		return "", false
	}
	for _, dash := range []string{"--", "—", "–"} {
		if name, ok := strings.CutPrefix(w.text, dash); ok && name != "" && unicode.IsLetter([]rune(name)[0]) {
			return strings.ToLower(name), true
		}
	}
	return "", false
}

// rawAfter returns raw with its first n words removed, keeping the spacing
// of the rest (quoted text, Markdown).
func rawAfter(raw string, n int) string {
	s := raw
	for range n {
		s = strings.TrimLeft(s, " \t\n")
		if i := strings.IndexAny(s, " \t\n"); i >= 0 {
			s = s[i:]
		} else {
			s = ""
		}
	}
	return strings.TrimSpace(s)
}
