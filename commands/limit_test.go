package commands

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestSenderLimit: a flood from one sender is answered up to the burst,
// then once with how long Jarvis will not listen, then not at all until
// the bucket is full again; another sender is answered throughout.
func TestSenderLimit(t *testing.T) {
	st, err := store.Open(context.Background(), store.Config{Type: "sqlite3", URI: filepath.Join(t.TempDir(), "j.db")}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	clock := coretest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	p := NewProcessor(Config{Prefix: "!", SenderLimit: SenderLimit{PerSecond: 0.5, Burst: 3}},
		Deps{Tx: st, Outbox: st.Outbox(), Handled: st, Notices: st.Outbox(), Pending: st, Excerpts: st, Clock: clock})
	h := &harness{proc: p, store: st, clock: clock}

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
