package commands

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLinkPuppetToAccount(t *testing.T) {
	code := regexp.MustCompile(`code is (\d{6})`)
	tests := []struct {
		name          string
		askPuppet     string // who asks: a puppet, or "" for the native account
		confirmPuppet string
		advance       time.Duration
		want          string
		linked        bool
	}{
		{name: "puppet asks, account confirms", askPuppet: "@telegram_1:x", want: "Linked: @telegram_1:x on telegram is @alice:x", linked: true},
		{name: "account asks, puppet confirms", confirmPuppet: "@telegram_1:x", want: "Linked: @telegram_1:x on telegram is @alice:x", linked: true},
		{name: "expired code", askPuppet: "@telegram_1:x", advance: 11 * time.Minute, want: "expired"},
		{name: "two native accounts", want: "one bridged account to one Matrix account"},
		{name: "two puppets", askPuppet: "@telegram_1:x", confirmPuppet: "@telegram_2:x", want: "one bridged account to one Matrix account"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.proc.AddFeatures(Features{Identities: h.store})
			ctx := context.Background()
			asked := h.sayFrom(t, tt.askPuppet, "!link")
			m := code.FindStringSubmatch(strings.Join(asked, " "))
			if m == nil {
				t.Fatalf("no code in %q", asked)
			}
			h.clock.Advance(tt.advance)
			got := h.sayFrom(t, tt.confirmPuppet, "!link "+m[1])
			if len(got) != 1 || !strings.Contains(got[0], tt.want) {
				t.Fatalf("confirming replied %q, want %q", got, tt.want)
			}
			account, err := h.store.LinkedAccount(ctx, "@telegram_1:x")
			if tt.linked != (err == nil && account == "@alice:x") {
				t.Errorf("link stored = %q (%v), want linked=%v", account, err, tt.linked)
			}
			if again := h.sayFrom(t, tt.confirmPuppet, "!link "+m[1]); len(again) != 1 || !strings.Contains(again[0], "unknown or already used") {
				t.Errorf("a code used twice got %q", again)
			}
		})
	}
}

// sayFrom sends as Alice, either from Matrix or from the given puppet.
func (h *harness) sayFrom(t *testing.T, puppet, body string) []string {
	t.Helper()
	h.seq++
	msg := Message{RoomID: "!room:x", EventID: "$l" + strings.Repeat("z", h.seq), Sender: "@alice:x", Network: "matrix", Body: body, Sent: h.clock.Now()}
	if puppet != "" {
		msg.Sender, msg.Puppet, msg.Network = puppet, puppet, "telegram"
	}
	return h.handle(t, msg)
}
