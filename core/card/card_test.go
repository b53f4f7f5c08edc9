package card

import (
	"errors"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
)

func TestCheckTransition(t *testing.T) {
	tests := []struct {
		name    string
		from    State
		to      State
		cause   Cause
		wantErr error
		// wantText is part of the message people and workers see.
		wantText string
	}{
		{name: "worker claims a published card", from: Published, to: Claimed, cause: ByWorker},
		{name: "worker starts a claimed card", from: Claimed, to: InProgress, cause: ByWorker},
		{name: "worker finishes", from: InProgress, to: Done, cause: ByWorker},
		{name: "worker releases a card", from: InProgress, to: Published, cause: ByWorker},
		{name: "worker unblocks", from: Blocked, to: InProgress, cause: ByWorker},
		{name: "question from in progress", from: InProgress, to: NeedsDecision, cause: ByQuestion},
		{name: "question from blocked", from: Blocked, to: NeedsDecision, cause: ByQuestion},
		{name: "answer re-dispatches", from: NeedsDecision, to: Published, cause: ByAnswer},
		{name: "expiry blocks", from: NeedsDecision, to: Blocked, cause: ByExpiry},
		{name: "scope change from in progress", from: InProgress, to: AwaitingRatification, cause: ByScope},
		{name: "ratification publishes", from: AwaitingRatification, to: Published, cause: ByRatification},
		{name: "cancel while waiting on a question", from: NeedsDecision, to: Cancelled, cause: ByWorker},
		{
			name: "done is final", from: Done, to: InProgress, cause: ByWorker,
			wantErr: core.ErrIllegalTransition, wantText: "done is final",
		},
		{
			name: "cancelled is final", from: Cancelled, to: Published, cause: ByWorker,
			wantErr: core.ErrIllegalTransition, wantText: "cancelled is final",
		},
		{
			name: "published cannot jump to done", from: Published, to: Done, cause: ByWorker,
			wantErr: core.ErrIllegalTransition, wantText: "from published: claimed, cancelled",
		},
		{
			name: "worker cannot set needs_decision directly", from: InProgress, to: NeedsDecision, cause: ByWorker,
			wantErr: core.ErrIllegalTransition, wantText: "only when a worker raises a question",
		},
		{
			name: "worker cannot leave needs_decision for published", from: NeedsDecision, to: Published, cause: ByWorker,
			wantErr: core.ErrIllegalTransition, wantText: "only an answer",
		},
		{
			name: "worker cannot ratify", from: AwaitingRatification, to: Published, cause: ByWorker,
			wantErr: core.ErrIllegalTransition, wantText: "only a person ratifying",
		},
		{
			name: "no scope change while a question is open", from: NeedsDecision, to: AwaitingRatification, cause: ByScope,
			wantErr: core.ErrIllegalTransition, wantText: "needs_decision → awaiting_ratification is not allowed",
		},
		{
			name: "question needs a held card", from: Published, to: NeedsDecision, cause: ByQuestion,
			wantErr: core.ErrIllegalTransition, wantText: "published → needs_decision",
		},
		{
			name: "unknown state", from: Published, to: "archived", cause: ByWorker,
			wantErr: core.ErrInvalid, wantText: `unknown state "archived"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckTransition(tt.from, tt.to, tt.cause)
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("CheckTransition(%s, %s, %s) = %v, want nil", tt.from, tt.to, tt.cause, err)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("CheckTransition(%s, %s, %s) = %v, want %v", tt.from, tt.to, tt.cause, err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not say %q", err, tt.wantText)
			}
		})
	}
}

func TestTransitionTableIsClosed(t *testing.T) {
	for from, moves := range transitions {
		if !from.Valid() {
			t.Errorf("table lists unknown state %q", from)
		}
		for to, cause := range moves {
			if !to.Valid() {
				t.Errorf("%s lists unknown target %q", from, to)
			}
			if causeText[cause] == "" {
				t.Errorf("%s → %s has a cause %q with no message", from, to, cause)
			}
		}
	}
	for _, s := range States {
		if s.Final() != (s == Done || s == Cancelled) {
			t.Errorf("%s.Final() = %v", s, s.Final())
		}
	}
}
