package bot

import (
	"context"
	"fmt"
	"strings"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/format"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/markdown"
)

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
	content := format.RenderMarkdownCustom(text, markdown.Goldmark)
	if content.FormattedBody != "" {
		content.Body = strings.TrimSpace(markdown.Plain.Parse(content.FormattedBody, format.NewContext(context.Background())))
	}
	content.MsgType = event.MsgText
	content.Mentions = &event.Mentions{}
	for _, user := range mentions {
		content.Mentions.Add(id.UserID(user))
	}
	return &content
}
