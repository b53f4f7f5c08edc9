package commands

import (
	"context"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestAddressedMessagesAreAlwaysAnswered(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		addressed bool     // set by the channel: a mention or a direct room
		want      []string // substrings of the one reply; none when nil
	}{
		{name: "name and a comma", body: "Jarvis, what's the weather like?", want: []string{"I didn't understand that", "!help"}},
		{name: "name and a colon, in any case", body: "JARVIS: sing me a song", want: []string{"I didn't understand that"}},
		{name: "a greeting and the name", body: "hi jarvis", want: []string{"Hello!", "!help"}},
		{name: "the name alone", body: "jarvis?", want: []string{"Hello!"}},
		{name: "the display name", body: "Mr Butler, anything new", want: []string{"I didn't understand that"}},
		{name: "help by name", body: "jarvis help", want: []string{"**Commands**", "!ping"}},
		{name: "what can you do, by name", body: "Jarvis, what can you do?", want: []string{"**Commands**"}},
		{name: "a command after the name", body: "jarvis, !ping", want: []string{"pong"}},
		{name: "a mention or a direct room", body: "good morning", addressed: true, want: []string{"I didn't understand that"}},
		{name: "help in a direct room", body: "help", addressed: true, want: []string{"**Commands**"}},
		{name: "small talk in a shared room", body: "good morning everyone"},
		{name: "a word that starts with the name", body: "jarvisbot is a nice name"},
		{name: "the name later in the sentence", body: "I asked jarvis yesterday"},
		{name: "a question not addressed", body: "any cards blocked?"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.proc.AddNames("jarvis", "Mr Butler")
			h.seq++
			got := h.handle(t, Message{RoomID: "!room:x", EventID: "$a" + strings.Repeat("x", h.seq), Sender: "@alice:x",
				Body: tt.body, Addressed: tt.addressed, Sent: h.clock.Now()})
			if tt.want == nil {
				if len(got) != 0 {
					t.Fatalf("%q got %q, want no answer", tt.body, got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%q got %q, want one answer", tt.body, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got[0], w) {
					t.Errorf("%q got %q, which lacks %q", tt.body, got[0], w)
				}
			}
		})
	}
}

// TestNotUnderstoodRepeatsNothing: a bridged stranger or an agent
// addressing Jarvis cannot make it say their words in its own voice.
func TestNotUnderstoodRepeatsNothing(t *testing.T) {
	h := newHarness(t)
	h.proc.AddNames("jarvis")
	for i, body := range []string{
		"jarvis, **I am the admin now** [click](https://evil.example) @room",
		"jarvis <b>say</b> `rm -rf` everyone must reset their password at https://evil.example",
	} {
		got := h.handle(t, Message{RoomID: "!room:x", EventID: "$n" + strings.Repeat("x", i), Sender: "@telegram_1:x",
			Puppet: "@telegram_1:x", Network: "telegram", Trust: core.TrustBridged, Body: body, Sent: h.clock.Now()})
		if len(got) != 1 {
			t.Fatalf("%q got %q, want one answer", body, got)
		}
		for _, w := range []string{"admin now", "evil", "@room", "<b>", "rm -rf", "password"} {
			if strings.Contains(got[0], w) {
				t.Errorf("the answer to %q repeats %q: %q", body, w, got[0])
			}
		}
	}
}

func TestRepliesToJarvisAreAddressed(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	h.proc.AddNames("jarvis")
	o := h.store.Outbox()
	if err := o.Enqueue(ctx, core.Notice{Key: "status:1", RoomID: "!room:x", Kind: core.NoticeMessage, Body: "All quiet."}); err != nil {
		t.Fatal(err)
	}
	if err := o.MarkSent(ctx, []string{"status:1"}, "$jarvis", h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	reply := func(eventID, target, body string) []string {
		h.proc.HandleReply(ctx, Message{RoomID: "!room:x", EventID: eventID, Sender: "@alice:x", Body: body, Sent: h.clock.Now()}, target)
		return h.repliesTo(t, eventID)
	}
	if got := reply("$r1", "$jarvis", "thanks, and what else?"); len(got) != 1 || !strings.Contains(got[0], "!help") {
		t.Errorf("a reply to Jarvis got %q, want the short line with !help", got)
	}
	if got := reply("$r2", "$bob", "thanks, and what else?"); len(got) != 0 {
		t.Errorf("a reply to someone else got %q, want no answer", got)
	}
	if got := reply("$r3", "$bob", "jarvis, what can you do?"); len(got) != 1 || !strings.Contains(got[0], "**Commands**") {
		t.Errorf("a reply to someone else naming Jarvis got %q, want help", got)
	}
}
