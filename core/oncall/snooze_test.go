package oncall_test

import (
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// TestSnoozeAnswers: which answers to an alert or a push snooze it, and
// for how long as written; 👀 and other words do not.
func TestSnoozeAnswers(t *testing.T) {
	for _, c := range []struct {
		answer, length string
		ok             bool
	}{
		{"💤", "", true},
		{"snooze", "", true},
		{"Snooze.", "", true},
		{"snooze 4h", "4h", true},
		{"snooze until tomorrow 9:00!", "until tomorrow 9:00", true},
		{"SNOOZE: for 2 hours", "for 2 hours", true},
		{"👀", "", false},
		{"mine", "", false},
		{"snoozed", "", false},
		{"please snooze", "", false},
	} {
		length, ok := oncall.SnoozeOf(c.answer)
		if ok != c.ok || length != c.length {
			t.Errorf("SnoozeOf(%q) = %q, %v; want %q, %v", c.answer, length, ok, c.length, c.ok)
		}
	}
}

// TestSnoozeBounds: a snooze ends after now and within seven days; its
// end is said with the day only when it is not the day it was set.
func TestSnoozeBounds(t *testing.T) {
	now := time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		until time.Time
		ok    bool
	}{
		{now, false},
		{now.Add(-time.Minute), false},
		{now.Add(time.Second), true},
		{now.Add(oncall.MaxSnooze), true},
		{now.Add(oncall.MaxSnooze + time.Second), false},
	} {
		if err := oncall.CheckSnooze(c.until, now); (err == nil) != c.ok {
			t.Errorf("CheckSnooze(%s) = %v, want ok %v", c.until.Sub(now), err, c.ok)
		}
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		until time.Time
		loc   *time.Location
		want  string
	}{
		{now.Add(20 * time.Minute), time.UTC, "23:50 UTC"},
		{now.Add(time.Hour), time.UTC, "Wed Dec 2 00:30 UTC"},
		// 00:30 in Berlin already: the same day there.
		{now.Add(time.Hour), berlin, "01:30 CET"},
	} {
		if got := oncall.UntilText(c.until, now, c.loc); got != c.want {
			t.Errorf("UntilText(%s in %s) = %q, want %q", c.until, c.loc, got, c.want)
		}
	}
}
