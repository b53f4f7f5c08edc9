package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/renderer/html"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/format"
	"maunium.net/go/mautrix/format/mdext"
	"maunium.net/go/mautrix/id"
)

// markdown renders notices: mautrix's extensions, raw HTML shown as
// literal text (mdext.EscapeHTML) and without html.WithUnsafe, so no tag
// and no javascript: link in a notice's Markdown reaches the HTML, and
// nothing but Jarvis's own Markdown makes markup.
var markdown = goldmark.New(
	format.Extensions,
	goldmark.WithRendererOptions(html.WithHardWraps()),
	goldmark.WithExtensions(mdext.EscapeHTML),
)

// plainParser turns rendered HTML into a plain text that reads well on
// networks that ignore HTML: no Markdown symbols, links spelled out.
var plainParser = &format.HTMLParser{
	TabsToSpaces:   4,
	Newline:        "\n",
	HorizontalLine: "\n――――\n",
	PillConverter: func(displayname, mxid, eventID string, ctx format.Context) string {
		if mxid != "" {
			return mxid
		}
		return displayname
	},
	LinkConverter: func(text, href string, ctx format.Context) string {
		if text == href || strings.HasPrefix(href, "https://matrix.to/") {
			return text
		}
		return fmt.Sprintf("%s (%s)", text, href)
	},
	MonospaceBlockConverter: func(code, language string, ctx format.Context) string {
		return strings.TrimRight(code, "\n")
	},
	BoldConverter:          keepText,
	ItalicConverter:        keepText,
	StrikethroughConverter: keepText,
	UnderlineConverter:     keepText,
	MonospaceConverter:     keepText,
}

func keepText(text string, _ format.Context) string { return text }

// render turns a notice's Markdown into message content with HTML and a
// plain-text body, mentioning the given users.
func render(text string, mentions []string) *event.MessageEventContent {
	var prefix []string
	for _, user := range mentions {
		if !strings.Contains(text, user) {
			prefix = append(prefix, fmt.Sprintf("[%s](https://matrix.to/#/%s)", user, user))
		}
	}
	if len(prefix) > 0 {
		text = strings.Join(prefix, " ") + " " + text
	}
	content := format.RenderMarkdownCustom(text, markdown)
	if content.FormattedBody != "" {
		content.Body = strings.TrimSpace(plainParser.Parse(content.FormattedBody, format.NewContext(context.Background())))
	}
	content.MsgType = event.MsgText
	content.Mentions = &event.Mentions{}
	for _, user := range mentions {
		content.Mentions.Add(id.UserID(user))
	}
	return &content
}
