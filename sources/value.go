package sources

import (
	"crypto/sha256"
	"encoding/hex"
	"unicode/utf8"
)

// Bounds of sources.max_value_bytes.
const (
	minValueBytes = 64
	maxValueBytes = 64 << 10
)

// capText bounds a text value a source read at max bytes. A longer one
// becomes its first bytes, an ellipsis and a digest of the whole, max
// bytes in all: a value that changes anywhere still reads as changed, and
// nothing shown to people is longer than max.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	suffix := "… (sha256 " + hex.EncodeToString(sum[:8]) + ")"
	prefix := s[:max-len(suffix)]
	// Drop a rune cut in two at the end.
	for i := 0; i < utf8.UTFMax-1 && prefix != ""; i++ {
		if r, size := utf8.DecodeLastRuneInString(prefix); r != utf8.RuneError || size > 1 {
			break
		}
		prefix = prefix[:len(prefix)-1]
	}
	return prefix + suffix
}
