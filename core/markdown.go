package core

import (
	"strings"
	"unicode"
)

// markdownEscaper escapes what Markdown (and the HTML under it) would read
// as markup anywhere in a line.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "#", `\#`, "|", `\|`, "~", `\~`,
	"&", `\&`, "!", `\!`,
	// "@room" pings everyone on clients that read the plain body; a word
	// joiner keeps it reading the same without the ping.
	"@room", "@\u2060room",
)

// EscapeMarkdown is the one renderer for untrusted text: anything an
// agent, a feed, a bridge or a person wrote goes into a notice through it
// (or through CodeSpan or CodeBlock), never as Markdown of its own. It
// folds the text to one line, drops invisible format characters
// (zero-width, bidirectional overrides) and control characters, and
// escapes every character that Markdown or HTML would read as markup, so
// the text shows literally: no links, images, emphasis, tags, pills or
// list items.
func EscapeMarkdown(s string) string {
	s = markdownEscaper.Replace(strings.Join(strings.Fields(visible(s)), " "))
	// A value that starts a line could open a list item, a heading or a
	// thematic break: "- x", "+ x", "1. x", "2) x", "---", "===".
	if s == "" {
		return s
	}
	if strings.Trim(s, "-= ") == "" {
		s = `\` + s
	} else if (s[0] == '-' || s[0] == '+') && (len(s) == 1 || s[1] == ' ') {
		s = `\` + s
	} else if i := strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }); i > 0 &&
		(s[i] == '.' || s[i] == ')') && (i+1 == len(s) || s[i+1] == ' ') {
		s = s[:i] + `\` + s[i:]
	}
	return s
}

// visible drops the characters that change how text reads without being
// seen: format characters (zero-width spaces and joiners, bidirectional
// overrides and isolates) and control characters other than whitespace.
func visible(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) || (unicode.IsControl(r) && !unicode.IsSpace(r)) {
			return -1
		}
		return r
	}, s)
}

// CodeBlock fences text as a code block, with a fence longer than any run
// of backticks inside it, so that nothing can break out.
func CodeBlock(text string) string {
	text = visible(text)
	fence := strings.Repeat("`", max(3, longestBacktickRun(text)+1))
	return fence + "\n" + text + "\n" + fence + "\n"
}

// CodeSpan quotes untrusted text as an inline code span that its content
// cannot close, folded to one line of at most 300 characters.
func CodeSpan(s string) string {
	s = strings.ReplaceAll(strings.Join(strings.Fields(visible(s)), " "), "@room", "@\u2060room")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	if s == "" {
		return "(empty)"
	}
	fence := strings.Repeat("`", longestBacktickRun(s)+1)
	pad := ""
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		pad = " "
	}
	return fence + pad + s + pad + fence
}

func longestBacktickRun(s string) int {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return longest
}
