package sources

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCapText: a value within the cap stays whole; a longer one becomes a
// prefix and a digest exactly as long as the cap, in valid UTF-8 even when
// the cut falls inside a character, and two long values that differ only
// past the prefix stay different.
func TestCapText(t *testing.T) {
	long := strings.Repeat("x", 300<<10)
	for _, tt := range []struct {
		name, in string
		max      int
	}{
		{name: "short", in: "green", max: 64},
		{name: "exactly the cap", in: strings.Repeat("a", 64), max: 64},
		{name: "300 KB", in: long, max: 512},
		{name: "cut inside a character", in: strings.Repeat("é", 1000), max: 101},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := capText(tt.in, tt.max)
			switch {
			case len(tt.in) <= tt.max && got != tt.in:
				t.Errorf("capText() = %q, want it unchanged", got)
			case len(got) > tt.max:
				t.Errorf("capText() is %d bytes, over the cap of %d", len(got), tt.max)
			case !utf8.ValidString(got):
				t.Errorf("capText() = %q, not valid UTF-8", got)
			case len(tt.in) > tt.max && (!strings.HasPrefix(got, tt.in[:16]) || !strings.Contains(got, "sha256 ")):
				t.Errorf("capText() = %q, want a prefix and a digest", got)
			}
		})
	}
	if capText(long+"1", 512) == capText(long+"2", 512) {
		t.Error("two long values differing at the end capped to the same text")
	}
}
