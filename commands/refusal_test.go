package commands

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
)

func TestRefusal(t *testing.T) {
	budget := &card.BudgetError{Priority: card.P0, Rule: card.BudgetRule{Count: 2, Window: 24 * time.Hour}, Used: 2, Requested: 1}
	for _, tt := range []struct {
		name string
		err  error
		want string
		ok   bool
	}{
		{name: "field", err: fmt.Errorf("arm: %w", core.Invalid("label", "is empty")), want: "is empty", ok: true},
		{name: "refusal", err: fmt.Errorf("publish: %w", core.Refuse(core.ErrUnprocessable, "key reused")), want: "key reused", ok: true},
		{name: "budget", err: fmt.Errorf("publish draft: %w", budget), want: "P0 allows 2 cards per day, 2 used, 1 requested; the request is larger than the whole budget", ok: true},
		{name: "sentinel last", err: fmt.Errorf("release tripwire: it is armed: %w", core.ErrIllegalTransition),
			want: "release tripwire: it is armed: illegal transition", ok: true},
		{name: "not the sender's", err: fmt.Errorf("store: %w", errors.New("disk full"))},
		{name: "not found is answered by each command", err: core.ErrNotFound},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := refusal(tt.err)
			if got != tt.want || ok != tt.ok {
				t.Errorf("refusal(%v) = %q, %v; want %q, %v", tt.err, got, ok, tt.want, tt.ok)
			}
		})
	}
}
