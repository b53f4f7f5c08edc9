package markdown

import (
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

// TestTerminal checks how a notice reads in a terminal: lists as lists,
// bold as bold where styled, code blocks indented, and untrusted text,
// escaped as it is for Matrix, shown as written without a single escape
// sequence of its own reaching the screen.
func TestTerminal(t *testing.T) {
	tests := []struct {
		name, markdown string
		style          bool
		want           string
	}{
		{"bold styled", "Shall I watch this? **GI below 0.70**", true, "Shall I watch this? \x1b[1mGI below 0.70\x1b[22m"},
		{"bold unstyled", "Shall I watch this? **GI below 0.70**", false, "Shall I watch this? GI below 0.70"},
		{"list", "Fleet:\n\n- EVE: online\n- ADA: late", false, "Fleet:\n\n* EVE: online\n* ADA: late"},
		{"code block indented", "Logs:\n\n```\nline one\nline two\n```", false, "Logs:\n\n    line one\n    line two"},
		{"code span as text", "Run `!tw list`.", false, "Run !tw list."},
		{"untrusted text shows as written", "Agent says: " + core.EscapeMarkdown("**not bold** [x](https://e.x) <b>"), true,
			"Agent says: **not bold** [x](https://e.x) <b>"},
		{"no escape sequence from the text", "Agent says: " + core.EscapeMarkdown("\x1b[2J\x1b]0;owned\x07wiped"), true,
			"Agent says: [2J]0;ownedwiped"},
		{"none from a code block either", "Log:\n\n```\n\x1b[31mred\n```", false, "Log:\n\n    [31mred"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Terminal(tt.markdown, tt.style); got != tt.want {
				t.Errorf("Terminal(%q) =\n%q\nwant\n%q", tt.markdown, got, tt.want)
			}
		})
	}
}
