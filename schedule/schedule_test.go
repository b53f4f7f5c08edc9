package schedule_test

import (
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/schedule"
)

func TestParse(t *testing.T) {
	after := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	tests := []struct {
		name, spec, zone string
		wantNext         time.Time
		wantField        string
	}{
		{name: "five fields in UTC", spec: "0 3 * * *", wantNext: time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC)},
		{name: "in a time zone", spec: "0 3 * * *", zone: "Asia/Tokyo", wantNext: time.Date(2026, 12, 4, 18, 0, 0, 0, time.UTC).Add(24 * time.Hour)},
		{name: "a descriptor", spec: "@every 6h", wantNext: after.Add(6 * time.Hour)},
		{name: "not a schedule", spec: "nightly", wantField: "fleet.agents[0].schedule"},
		{name: "six fields", spec: "0 0 3 * * *", wantField: "fleet.agents[0].schedule"},
		{name: "no such zone", spec: "@daily", zone: "Mars/Olympus", wantField: "fleet.agents[0].time_zone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := schedule.Parse("fleet.agents[0]", tt.spec, tt.zone)
			if tt.wantField != "" {
				var fe *core.FieldError
				if !errors.As(err, &fe) || fe.Field != tt.wantField {
					t.Fatalf("Parse(%q, %q) = %v, want an error naming %s", tt.spec, tt.zone, err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if next := s.Next(after); !next.Equal(tt.wantNext) {
				t.Errorf("next run after %s is %s, want %s", after, next, tt.wantNext)
			}
		})
	}
}
