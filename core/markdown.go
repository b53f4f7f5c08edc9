package core

import "strings"

// markdownEscaper escapes what Markdown would read as markup.
var markdownEscaper = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "<", `\<`, ">", `\>`, "#", `\#`, "|", `\|`, "~", `\~`,
)

// EscapeMarkdown makes text from agents and people safe to put inline in
// a notice: one line, no markup of its own.
func EscapeMarkdown(s string) string {
	return markdownEscaper.Replace(strings.Join(strings.Fields(s), " "))
}

// CodeBlock fences text as a code block, with a fence longer than any run
// of backticks inside it, so that nothing can break out.
func CodeBlock(text string) string {
	fence := strings.Repeat("`", max(3, longestBacktickRun(text)+1))
	return fence + "\n" + text + "\n" + fence + "\n"
}

// CodeSpan quotes untrusted text as an inline code span that its content
// cannot close, folded to one line of at most 300 characters.
func CodeSpan(s string) string {
	s = strings.Join(strings.Fields(s), " ")
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
