package commands

import (
	"strings"
	"testing"
	"time"
)

// TestSenderLimit: a flood from one sender is answered up to the burst,
// then once with how long Jarvis will not listen, then not at all until
// the bucket is full again; another sender is answered throughout.
func TestSenderLimit(t *testing.T) {
	h := newHarnessWith(t, Config{Prefix: "!", SenderLimit: SenderLimit{PerSecond: 0.5, Burst: 3}})
	clock := h.clock

	var pongs, notices int
	for range 50 {
		for _, r := range h.say(t, "@flood:x", "!ping") {
			switch {
			case strings.HasPrefix(r, "pong"):
				pongs++
			case strings.Contains(r, "You are sending faster than I can answer; I will ignore messages for 6 s"):
				notices++
			default:
				t.Errorf("unexpected reply %q", r)
			}
		}
	}
	if pongs != 3 || notices != 1 {
		t.Errorf("a flood of 50 got %d pongs and %d notices, want 3 and 1", pongs, notices)
	}
	if got := h.say(t, "@other:x", "!ping"); len(got) != 1 || !strings.HasPrefix(got[0], "pong") {
		t.Errorf("another sender during the flood got %q, want a pong", got)
	}

	clock.Advance(5 * time.Second)
	if got := h.say(t, "@flood:x", "!ping"); len(got) != 0 {
		t.Errorf("still within the quiet time, got %q, want nothing", got)
	}
	clock.Advance(time.Second)
	for i := range 3 {
		if got := h.say(t, "@flood:x", "!ping"); len(got) != 1 || !strings.HasPrefix(got[0], "pong") {
			t.Errorf("message %d after the bucket refilled got %q, want a pong", i, got)
		}
	}
	if got := h.say(t, "@flood:x", "!ping"); len(got) != 1 || !strings.Contains(got[0], "ignore messages for 6 s") {
		t.Errorf("past the burst again got %q, want the notice", got)
	}
}
