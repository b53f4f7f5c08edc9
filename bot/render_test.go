package bot

import (
	"strings"
	"testing"

	"maunium.net/go/mautrix/id"
)

func TestRenderPlainBodyReadsWithoutMarkdown(t *testing.T) {
	tests := []struct {
		name, markdown string
		mentions       []string
		want           string
		html           string
	}{
		{"bold and code", "**Commands**: `!ping`", nil, "Commands: !ping", "<strong>Commands</strong>"},
		{"link spelled out", "see [the docs](https://example.org/docs)", nil, "see the docs (https://example.org/docs)", `href="https://example.org/docs"`},
		{"list keeps its lines", "- one\n- two", nil, "one", "<li>one</li>"},
		{"mention added as a pill", "your tripwire fired", []string{"@alice:x"}, "@alice:x your tripwire fired", `href="https://matrix.to/#/@alice:x"`},
		{"mention already in the text", "hey @alice:x", []string{"@alice:x"}, "hey @alice:x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			content := render(tt.markdown, tt.mentions)
			if !strings.Contains(content.Body, tt.want) {
				t.Errorf("body = %q, want it to contain %q", content.Body, tt.want)
			}
			for _, sym := range []string{"**", "`", "]("} {
				if strings.Contains(content.Body, sym) {
					t.Errorf("body %q still has Markdown %q", content.Body, sym)
				}
			}
			if tt.html != "" && !strings.Contains(content.FormattedBody, tt.html) {
				t.Errorf("HTML = %q, want it to contain %q", content.FormattedBody, tt.html)
			}
			for _, m := range tt.mentions {
				if content.Mentions == nil || !content.Mentions.Has(id.UserID(m)) {
					t.Errorf("m.mentions lacks %s", m)
				}
			}
		})
	}
}
