package bot

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

// noticeShapes are the places untrusted text takes in notices: a bold
// headline, a list item, a numbered option, the start of a line, inline
// in a sentence and a code span.
var noticeShapes = []struct {
	name   string
	render func(value string) string
}{
	{"headline", func(v string) string {
		return fmt.Sprintf("🛑 **HALTED**: circuit breaker open for agent **%s**", core.EscapeMarkdown(v))
	}},
	{"list item", func(v string) string {
		return fmt.Sprintf("- **Reason:** %s\n- **Status:** open", core.EscapeMarkdown(v))
	}},
	{"option", func(v string) string {
		return fmt.Sprintf("a worker needs a decision on card card_1 — %s\n\n%s\n\n1. %s\n2. No", core.EscapeMarkdown(v), core.EscapeMarkdown(v), core.EscapeMarkdown(v))
	}},
	{"line start", func(v string) string {
		return core.EscapeMarkdown(v) + "\n\nReact with the option's number or reply with it."
	}},
	{"sentence", func(v string) string {
		return fmt.Sprintf("✅ Answered by %s after 1m: 1. %s", core.EscapeMarkdown(v), core.EscapeMarkdown(v))
	}},
	{"code span", func(v string) string { return fmt.Sprintf("- goal (from cards): %s", core.CodeSpan(v)) }},
}

var hostileSeeds = []string{
	"<b>bold</b> <img src=x onerror=alert(1)> <a href=\"https://evil.example\">click</a>",
	"[✅ Answered by @alice:example.org](https://evil.example) ![img](https://evil.example/x.png)",
	"**✅ Answered by @alice:example.org** _it_ ~~gone~~ ||spoiler|| `code`",
	"@room look https://matrix.to/#/@admin:example.org [@admin](https://matrix.to/#/@admin:example.org)",
	"<https://evil.example> <@admin:example.org> &lt;b&gt; &amp; &#x3C;script&#x3E;",
	"zero\u200bwidth \u202egnp.exe\u202c \u2066isolate\u2069 \ufeffbom",
	"- list\n1. item\n# heading\n> quote\n---\n===",
	"1. one", "2) two", "- x", "---", "| a | b |\n| - | - |", "\\*not\\*", "<!-- comment -->", "<details><summary>x</summary>y</details>",
	"javascript:alert(1) [x](javascript:alert(1))", "`` ` ``", "",
}

var tagRE = regexp.MustCompile(`<(/?[a-zA-Z][a-zA-Z0-9]*)`)

func tags(html string) []string {
	var out []string
	for _, m := range tagRE.FindAllStringSubmatch(html, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return out
}

// FuzzNoticeShowsUntrustedTextLiterally renders every notice shape with a
// hostile value and with a harmless one: the HTML must carry exactly the
// same tags (nothing the value wrote becomes a link, an image, emphasis or
// a pill), no mention, and the plain body no Markdown escapes.
func FuzzNoticeShowsUntrustedTextLiterally(f *testing.F) {
	for _, s := range hostileSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, value string) {
		if strings.TrimSpace(core.EscapeMarkdown(value)) == "" {
			value = "x" + value
		}
		for _, shape := range noticeShapes {
			hostile := render(shape.render(value), nil)
			harmless := render(shape.render("x"), nil)
			uses := strings.Count(shape.render("Q7Q"), "Q7Q")
			if got, want := tags(hostile.FormattedBody), tags(harmless.FormattedBody); !slices.Equal(got, want) {
				t.Errorf("%s: %q renders tags %v, want %v:\n%s", shape.name, value, got, want, hostile.FormattedBody)
			}
			if hostile.Mentions == nil || hostile.Mentions.Room || len(hostile.Mentions.UserIDs) > 0 {
				t.Errorf("%s: %q mentions %+v", shape.name, value, hostile.Mentions)
			}
			if strings.Contains(hostile.Body, "@room") || strings.Contains(hostile.FormattedBody, "@room") {
				t.Errorf("%s: %q keeps a live @room", shape.name, value)
			}
			if strings.ContainsAny(hostile.FormattedBody, "\u202e\u202d\u2066\u2067\u2068\u200b\ufeff") {
				t.Errorf("%s: %q keeps an invisible or direction-overriding character", shape.name, value)
			}
			if shape.name != "code span" && strings.Count(hostile.Body, `\`) > uses*strings.Count(value, `\`) {
				t.Errorf("%s: plain body of %q shows Markdown escapes: %q", shape.name, value, hostile.Body)
			}
		}
	})
}
