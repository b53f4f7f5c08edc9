package card

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestBudgetRuleFit(t *testing.T) {
	t0 := time.Date(2026, 7, 9, 12, 0, 0, 0, time.UTC)
	day := BudgetRule{Count: 2, Window: 24 * time.Hour}
	tests := []struct {
		name      string
		rule      BudgetRule
		charges   []time.Time
		n         int
		wantRetry time.Time // zero with wantErr means "never fits"
		wantErr   bool
		wantText  string
	}{
		{name: "empty window", rule: day, n: 2},
		{name: "one used, one more fits", rule: day, charges: []time.Time{t0}, n: 1},
		{
			name: "full window returns when the oldest charge leaves", rule: day,
			charges: []time.Time{t0, t0.Add(time.Hour)}, n: 1, wantErr: true,
			wantRetry: t0.Add(24 * time.Hour), wantText: "P0 allows 2 cards per day, 2 used, 1 requested; room returns at 2026-07-10T12:00:00Z",
		},
		{
			name: "two new need both old charges gone", rule: day,
			charges: []time.Time{t0, t0.Add(time.Hour)}, n: 2, wantErr: true,
			wantRetry: t0.Add(25 * time.Hour),
		},
		{
			name: "one old charge, two new", rule: day,
			charges: []time.Time{t0.Add(3 * time.Hour)}, n: 2, wantErr: true,
			wantRetry: t0.Add(27 * time.Hour),
		},
		{
			name: "larger than the whole budget never fits", rule: day, n: 3, wantErr: true,
			wantText: "larger than the whole budget",
		},
		{
			name: "zero budget refuses everything", rule: BudgetRule{Count: 0, Window: time.Hour}, n: 1, wantErr: true,
			wantText: "allows 0 cards per hour",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.rule.fit(P0, tt.charges, tt.n, t0.Add(2*time.Hour))
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("fit = %v, want nil", err)
				}
				return
			}
			var be *BudgetError
			if !errors.As(err, &be) || !errors.Is(err, core.ErrBudgetExceeded) {
				t.Fatalf("fit = %v, want a BudgetError", err)
			}
			if !be.RetryAt.Equal(tt.wantRetry) {
				t.Errorf("RetryAt = %v, want %v", be.RetryAt, tt.wantRetry)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
		})
	}
}

func TestCardsConfigValidate(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantField string // "" means valid
	}{
		{name: "defaults", cfg: Config{Budget: map[string]BudgetRule{"P0": {Count: 2, Window: 24 * time.Hour}, "P1": {Count: 10, Window: 24 * time.Hour}}}},
		{name: "no budget at all", cfg: Config{}},
		{name: "lower-case keys as viper gives them", cfg: Config{Budget: map[string]BudgetRule{"p0": {Count: 1, Window: time.Hour}}}},
		{name: "unknown class", cfg: Config{Budget: map[string]BudgetRule{"P5": {Count: 1, Window: time.Hour}}}, wantField: "cards.budget.P5"},
		{name: "negative count", cfg: Config{Budget: map[string]BudgetRule{"P1": {Count: -1, Window: time.Hour}}}, wantField: "cards.budget.P1.count"},
		{name: "no window", cfg: Config{Budget: map[string]BudgetRule{"P1": {Count: 3}}}, wantField: "cards.budget.P1.window"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.wantField {
				t.Fatalf("Validate() = %v, want an error on %s", err, tt.wantField)
			}
		})
	}
}
