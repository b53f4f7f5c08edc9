package core

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Plural counts n things in words: Plural(3, "card", "cards") is "3
// cards". one and many may carry a verb that agrees: "card waits",
// "cards wait".
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// Truncate cuts s to at most n runes, the last of them an ellipsis when
// something was cut.
func Truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// TruncateAfter keeps the first n runes of s, and puts an ellipsis after
// them when something was cut.
func TruncateAfter(s string, n int) string {
	if rs := []rune(s); len(rs) > n {
		return string(rs[:n]) + "…"
	}
	return s
}

// UpperFirst upper-cases the first letter of s.
func UpperFirst(s string) string {
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 {
		return s
	}
	return string(unicode.ToUpper(r)) + s[size:]
}

// ShortDuration writes d as Go does, without its zero tail: "45s", "10m",
// "1h", "1h30m", "24h".
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// HumanDuration writes d in its largest one or two units, as people say
// it: "40s", "12m", "5h 12m", "5h", "3d 2h"; less than nothing is "0s".
func HumanDuration(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return twoUnits(int(d/time.Hour), "h", int(d%time.Hour/time.Minute), "m")
	default:
		return twoUnits(int(d/(24*time.Hour)), "d", int(d%(24*time.Hour)/time.Hour), "h")
	}
}

func twoUnits(major int, majorUnit string, minor int, minorUnit string) string {
	if minor == 0 {
		return fmt.Sprintf("%d%s", major, majorUnit)
	}
	return fmt.Sprintf("%d%s %d%s", major, majorUnit, minor, minorUnit)
}

// ClockDuration writes d in its largest unit and the next, the minutes
// padded as on a clock: "45s", "12m", "3h05m", "2d4h".
func ClockDuration(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// TimeText is how chat shows a moment, in UTC: "Jan 2 15:04 UTC". The
// API's moments are RFC 3339.
func TimeText(t time.Time) string { return t.UTC().Format("Jan 2 15:04 MST") }
