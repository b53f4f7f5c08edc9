package reminder

import (
	"testing"
	"time"
)

func TestNextKeepsTheWallClockTime(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// Set for Monday 19 October 2026, 09:00 in Berlin (summer time).
	at := time.Date(2026, 10, 19, 9, 0, 0, 0, berlin)
	tests := []struct {
		name  string
		every Repeat
		after time.Time
		want  time.Time
	}{
		{"once never repeats", Once, at, time.Time{}},
		{"before the first time", Daily, at.Add(-time.Hour), at},
		{"daily, the next day", Daily, at, time.Date(2026, 10, 20, 9, 0, 0, 0, berlin)},
		{"daily, across the change to winter time", Daily, time.Date(2026, 10, 26, 8, 30, 0, 0, berlin), time.Date(2026, 10, 26, 9, 0, 0, 0, berlin)},
		{"daily, months missed", Daily, time.Date(2027, 3, 1, 12, 0, 0, 0, berlin), time.Date(2027, 3, 2, 9, 0, 0, 0, berlin)},
		{"weekly, the next Monday", Weekly, at.Add(time.Minute), time.Date(2026, 10, 26, 9, 0, 0, 0, berlin)},
		{"weekly, after weeks missed", Weekly, time.Date(2026, 12, 2, 0, 0, 0, 0, berlin), time.Date(2026, 12, 7, 9, 0, 0, 0, berlin)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Reminder{At: at, Every: tt.every, Zone: "Europe/Berlin"}
			if got := r.Next(tt.after); !got.Equal(tt.want) {
				t.Errorf("Next(%s) = %s, want %s", tt.after, got, tt.want)
			}
		})
	}
}

func TestNoticeKeys(t *testing.T) {
	r := Reminder{ID: 42}
	if id, ok := ParseNoticeKey(r.NoticeKey(3)); !ok || id != 42 || r.NoticeKey(3) != "remind:42:3" {
		t.Errorf("key %q parses as %d, %v", r.NoticeKey(3), id, ok)
	}
	for _, key := range []string{"remind:", "remind:x:1", "decision:1:2"} {
		if _, ok := ParseNoticeKey(key); ok {
			t.Errorf("%q parses", key)
		}
	}
}
