// Package markdown is the one way Jarvis's Markdown becomes what a reader
// sees: HTML with a plain-text body for a Matrix room, styled text for a
// terminal. Untrusted text reaches that Markdown only through
// core.EscapeMarkdown (or core.CodeSpan, core.CodeBlock), so it shows as
// written in both.
package markdown

import (
	"context"
	"fmt"
	"strings"
	"unicode"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/renderer/html"
	"maunium.net/go/mautrix/format"
	"maunium.net/go/mautrix/format/mdext"
)

// Goldmark renders notices: mautrix's extensions, raw HTML shown as
// literal text (mdext.EscapeHTML) and without html.WithUnsafe, so no tag
// and no javascript: link in a notice's Markdown reaches the HTML, and
// nothing but Jarvis's own Markdown makes markup.
var Goldmark = goldmark.New(
	format.Extensions,
	goldmark.WithRendererOptions(html.WithHardWraps()),
	goldmark.WithExtensions(mdext.EscapeHTML),
)

// Plain turns rendered HTML into a plain text that reads well on networks
// that ignore HTML: no Markdown symbols, links spelled out.
var Plain = &format.HTMLParser{
	TabsToSpaces:            4,
	Newline:                 "\n",
	HorizontalLine:          "\n――――\n",
	PillConverter:           pill,
	LinkConverter:           link,
	MonospaceBlockConverter: func(code, _ string, _ format.Context) string { return strings.TrimRight(code, "\n") },
	BoldConverter:           keepText,
	ItalicConverter:         keepText,
	StrikethroughConverter:  keepText,
	UnderlineConverter:      keepText,
	MonospaceConverter:      keepText,
}

// styled is Plain for a terminal that shows bold and italics: emphasis
// as the terminal's own, code blocks indented.
var styled = &format.HTMLParser{
	TabsToSpaces:            4,
	Newline:                 "\n",
	HorizontalLine:          "\n――――\n",
	PillConverter:           pill,
	LinkConverter:           link,
	MonospaceBlockConverter: indent,
	BoldConverter:           sgr(1, 22),
	ItalicConverter:         sgr(3, 23),
	StrikethroughConverter:  sgr(9, 29),
	UnderlineConverter:      sgr(4, 24),
	MonospaceConverter:      keepText,
	TextConverter:           printable,
}

// unstyled is a terminal's text without escape sequences, for output
// that is not a terminal.
var unstyled = &format.HTMLParser{
	TabsToSpaces:            4,
	Newline:                 "\n",
	HorizontalLine:          "\n――――\n",
	PillConverter:           pill,
	LinkConverter:           link,
	MonospaceBlockConverter: indent,
	BoldConverter:           keepText,
	ItalicConverter:         keepText,
	StrikethroughConverter:  keepText,
	UnderlineConverter:      keepText,
	MonospaceConverter:      keepText,
	TextConverter:           printable,
}

// HTML renders Markdown to HTML, a lone paragraph unwrapped.
func HTML(text string) string {
	var b strings.Builder
	if err := Goldmark.Convert([]byte(text), &b); err != nil {
		// goldmark's renderer fails only when the writer does.
		panic(fmt.Errorf("render markdown: %w", err))
	}
	return format.UnwrapSingleParagraph(b.String())
}

// Terminal renders Markdown as a terminal shows it: lists as lists, code
// blocks indented, bold and italics as the terminal's own when style is
// set. Control characters in the text are dropped, so nothing in a
// notice can move the cursor or restyle the screen.
func Terminal(text string, style bool) string {
	parser := unstyled
	if style {
		parser = styled
	}
	return strings.Trim(parser.Parse(HTML(text), format.NewContext(context.Background())), "\n")
}

func keepText(text string, _ format.Context) string { return text }

func pill(displayname, mxid, _ string, _ format.Context) string {
	if mxid != "" {
		return mxid
	}
	return displayname
}

func link(text, href string, _ format.Context) string {
	if text == href || strings.HasPrefix(href, "https://matrix.to/") {
		return text
	}
	return fmt.Sprintf("%s (%s)", text, href)
}

// indent shows a code block four spaces in.
func indent(code, _ string, ctx format.Context) string {
	lines := strings.Split(strings.TrimRight(printable(code, ctx), "\n"), "\n")
	for i, l := range lines {
		lines[i] = "    " + l
	}
	return strings.Join(lines, "\n")
}

// sgr wraps text in the terminal's select-graphic-rendition codes on and
// off.
func sgr(on, off int) format.TextConverter {
	return func(text string, _ format.Context) string {
		return fmt.Sprintf("\x1b[%dm%s\x1b[%dm", on, text, off)
	}
}

// printable drops control characters other than newlines and tabs.
func printable(text string, _ format.Context) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, text)
}
