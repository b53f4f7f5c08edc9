package intent

import (
	"regexp"
	"strings"
	"time"
)

// Until reads how long something is put off, at now in the person's zone
// loc, the way a reminder's time is read: "4h", "for 2 hours", "in 30
// minutes", "until 18:00", "until tomorrow 9:00", "till Monday". It
// reports false when it finds no time, or finds words it does not read
// as one.
func Until(text string, now time.Time, loc *time.Location) (time.Time, bool) {
	t := strings.ToLower(strings.TrimSpace(strings.TrimRight(strings.TrimSpace(text), ".!")))
	t = untilLead.ReplaceAllString(t, "")
	switch {
	case t == "":
		return time.Time{}, false
	case untilSpan.MatchString(t):
		t = "in " + t
	case !remindAt.MatchString(" " + t + " "):
		t = untilClock.ReplaceAllString(t, "${1}at $2")
	}
	// The reminder reader wants something to remind of; "x" stands in,
	// and anything else left over means words it did not read.
	w := Reminder(t+" x", now, loc)
	if w.At.IsZero() || w.Every != "" || w.What != "x" {
		return time.Time{}, false
	}
	return w.At, true
}

var (
	untilLead  = regexp.MustCompile(`^(for|until|till|til|to)\s+`)
	untilSpan  = regexp.MustCompile(`^(\d+|an?|one|two|three|four|five|six|ten|fifteen|twenty|thirty|half an?)\s*(minutes?|mins?|m|hours?|hrs?|h|days?|d|weeks?|w)$`)
	untilClock = regexp.MustCompile(`(^|\s)(\d{1,2}(?:[:.h]\d{2})?\s*(?:am|pm)?|noon|midnight)$`)
)
