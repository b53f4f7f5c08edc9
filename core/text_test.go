package core_test

import (
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n         int
		one, many string
		want      string
	}{
		{0, "card", "cards", "0 cards"},
		{1, "card", "cards", "1 card"},
		{2, "journal entry", "journal entries", "2 journal entries"},
		{1, "card waits", "cards wait", "1 card waits"},
	} {
		if got := core.Plural(tt.n, tt.one, tt.many); got != tt.want {
			t.Errorf("Plural(%d, %q, %q) = %q, want %q", tt.n, tt.one, tt.many, got, tt.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tt := range []struct {
		s          string
		n          int
		want, more string
	}{
		{"short", 5, "short", "short"},
		{"longer", 5, "long…", "longe…"},
		{"ünïcödé", 4, "ünï…", "ünïc…"},
	} {
		if got := core.Truncate(tt.s, tt.n); got != tt.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.want)
		}
		if got := core.TruncateAfter(tt.s, tt.n); got != tt.more {
			t.Errorf("TruncateAfter(%q, %d) = %q, want %q", tt.s, tt.n, got, tt.more)
		}
	}
}

func TestUpperFirst(t *testing.T) {
	for s, want := range map[string]string{"": "", "card": "Card", "élan vital": "Élan vital", "3 cards": "3 cards"} {
		if got := core.UpperFirst(s); got != want {
			t.Errorf("UpperFirst(%q) = %q, want %q", s, got, want)
		}
	}
}

// ShortDuration writes the tripwires' quarantine windows and the circuit
// breakers' timeouts.
func TestShortDuration(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "hour", d: time.Hour, want: "1h"},
		{name: "hour and a half", d: 90 * time.Minute, want: "1h30m"},
		{name: "five minutes", d: 5 * time.Minute, want: "5m"},
		{name: "45 seconds", d: 45 * time.Second, want: "45s"},
		{name: "day", d: 24 * time.Hour, want: "24h"},
		{name: "seconds", d: 30 * time.Second, want: "30s"},
		{name: "minutes", d: 10 * time.Minute, want: "10m"},
		{name: "hours", d: 2 * time.Hour, want: "2h"},
		{name: "mixed", d: 90*time.Minute + 5*time.Second, want: "1h30m5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := core.ShortDuration(tt.d); got != tt.want {
				t.Errorf("ShortDuration(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}

func TestHumanDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{-time.Second, "0s"},
		{40 * time.Second, "40s"},
		{12*time.Minute + 30*time.Second, "12m"},
		{5*time.Hour + 12*time.Minute, "5h 12m"},
		{5 * time.Hour, "5h"},
		{74 * time.Hour, "3d 2h"},
	} {
		if got := core.HumanDuration(tt.d); got != tt.want {
			t.Errorf("HumanDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestClockDuration(t *testing.T) {
	tests := []struct {
		name string
		d    time.Duration
		want string
	}{
		{name: "seconds", d: 45 * time.Second, want: "45s"},
		{name: "minutes", d: 12*time.Minute + 30*time.Second, want: "12m"},
		{name: "hours", d: 3*time.Hour + 5*time.Minute, want: "3h05m"},
		{name: "days", d: 52 * time.Hour, want: "2d4h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := core.ClockDuration(tt.d); got != tt.want {
				t.Errorf("ClockDuration(%v) = %q, want %q", tt.d, got, tt.want)
			}
		})
	}
}
