package intent

import (
	"testing"
	"time"
)

// TestUntil: how long a snooze or a silence lasts, said on Tuesday 1
// December 2026 at 09:30 in Berlin; "" where the words are not a time.
func TestUntil(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, berlin)
	for _, c := range []struct{ text, at string }{
		{"4h", "Tue 01 Dec 13:30"},
		{"for 2 hours", "Tue 01 Dec 11:30"},
		{"30m", "Tue 01 Dec 10:00"},
		{"in 20 minutes", "Tue 01 Dec 09:50"},
		{"an hour", "Tue 01 Dec 10:30"},
		{"until 18:00", "Tue 01 Dec 18:00"},
		{"until 9:00", "Wed 02 Dec 09:00"},
		{"until tomorrow 9:00", "Wed 02 Dec 09:00"},
		{"until tomorrow at 10", "Wed 02 Dec 10:00"},
		{"till Monday", "Mon 07 Dec 09:00"},
		{"until 6pm.", "Tue 01 Dec 18:00"},
		{"", ""},
		{"banana", ""},
		{"until the deploy is done", ""},
		{"every day at 9", ""},
		{"4h and then some", ""},
	} {
		t.Run(c.text, func(t *testing.T) {
			at, ok := Until(c.text, now, berlin)
			got := ""
			if ok {
				got = at.In(berlin).Format("Mon 02 Jan 15:04")
			}
			if got != c.at {
				t.Errorf("Until(%q) = %q, want %q", c.text, got, c.at)
			}
		})
	}
}
