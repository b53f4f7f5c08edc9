package intent

import (
	"slices"
	"testing"
)

func TestCardStop(t *testing.T) {
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"stop the CSV export", []string{"csv", "export"}},
		{"Please cancel the report card.", []string{"report"}},
		{"call off the key rotation now", []string{"key", "rotation"}},
		{"stop working on the PDF export!", []string{"pdf", "export"}},
		{"stop reminding me", nil},
		{"cancel my reminder", nil},
		{"stop it", nil},
		{"stop the", nil},
		{"when does ZEUS stop", nil},
	} {
		t.Run(tt.text, func(t *testing.T) {
			got, ok := CardStop(tt.text)
			if ok != (tt.want != nil) || !slices.Equal(got, tt.want) {
				t.Errorf("CardStop(%q) = %q, %v; want %q", tt.text, got, ok, tt.want)
			}
		})
	}
}
