package quiet

import (
	"testing"
	"time"
)

func TestHours(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, hours string
		at          time.Time // UTC; Berlin is one hour ahead in December
		want        bool
		err         bool
	}{
		{name: "before the night starts", hours: "22:00-07:00", at: time.Date(2026, 12, 1, 20, 59, 0, 0, time.UTC)},
		{name: "at its start", hours: "22:00-07:00", at: time.Date(2026, 12, 1, 21, 0, 0, 0, time.UTC), want: true},
		{name: "past midnight", hours: "22-7", at: time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC), want: true},
		{name: "at its end", hours: "22:00–07:00", at: time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)},
		{name: "a window in one day", hours: "12:30-13:30", at: time.Date(2026, 12, 2, 11, 45, 0, 0, time.UTC), want: true},
		{name: "after a window in one day", hours: "12:30-13:30", at: time.Date(2026, 12, 2, 12, 30, 0, 0, time.UTC)},
		{name: "no dash", hours: "22:00", err: true},
		{name: "not a time", hours: "late-early", err: true},
		{name: "empty window", hours: "7-7", err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := ParseHours(tt.hours)
			if (err != nil) != tt.err {
				t.Fatalf("ParseHours(%q) = %+v, %v", tt.hours, h, err)
			}
			if err == nil && h.Contains(tt.at, berlin) != tt.want {
				t.Errorf("%s contains %s in Berlin = %v, want %v", h, tt.at.In(berlin).Format("15:04"), !tt.want, tt.want)
			}
		})
	}
}
