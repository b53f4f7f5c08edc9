package core

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckTransition(t *testing.T) {
	tests := []struct {
		name    string
		from    CardState
		to      CardState
		cause   Cause
		wantErr error
		// wantText is part of the message people and workers see.
		wantText string
	}{
		{name: "worker claims a published card", from: CardPublished, to: CardClaimed, cause: ByWorker},
		{name: "worker starts a claimed card", from: CardClaimed, to: CardInProgress, cause: ByWorker},
		{name: "worker finishes", from: CardInProgress, to: CardDone, cause: ByWorker},
		{name: "worker releases a card", from: CardInProgress, to: CardPublished, cause: ByWorker},
		{name: "worker unblocks", from: CardBlocked, to: CardInProgress, cause: ByWorker},
		{name: "question from in progress", from: CardInProgress, to: CardNeedsDecision, cause: ByQuestion},
		{name: "question from blocked", from: CardBlocked, to: CardNeedsDecision, cause: ByQuestion},
		{name: "answer re-dispatches", from: CardNeedsDecision, to: CardPublished, cause: ByAnswer},
		{name: "expiry blocks", from: CardNeedsDecision, to: CardBlocked, cause: ByExpiry},
		{name: "scope change from in progress", from: CardInProgress, to: CardAwaitingRatification, cause: ByScope},
		{name: "ratification publishes", from: CardAwaitingRatification, to: CardPublished, cause: ByRatification},
		{name: "cancel while waiting on a question", from: CardNeedsDecision, to: CardCancelled, cause: ByWorker},
		{
			name: "done is final", from: CardDone, to: CardInProgress, cause: ByWorker,
			wantErr: ErrIllegalTransition, wantText: "done is final",
		},
		{
			name: "cancelled is final", from: CardCancelled, to: CardPublished, cause: ByWorker,
			wantErr: ErrIllegalTransition, wantText: "cancelled is final",
		},
		{
			name: "published cannot jump to done", from: CardPublished, to: CardDone, cause: ByWorker,
			wantErr: ErrIllegalTransition, wantText: "from published: claimed, cancelled",
		},
		{
			name: "worker cannot set needs_decision directly", from: CardInProgress, to: CardNeedsDecision, cause: ByWorker,
			wantErr: ErrIllegalTransition, wantText: "only when a worker raises a question",
		},
		{
			name: "worker cannot leave needs_decision for published", from: CardNeedsDecision, to: CardPublished, cause: ByWorker,
			wantErr: ErrIllegalTransition, wantText: "only an answer",
		},
		{
			name: "worker cannot ratify", from: CardAwaitingRatification, to: CardPublished, cause: ByWorker,
			wantErr: ErrIllegalTransition, wantText: "only a person ratifying",
		},
		{
			name: "no scope change while a question is open", from: CardNeedsDecision, to: CardAwaitingRatification, cause: ByScope,
			wantErr: ErrIllegalTransition, wantText: "needs_decision → awaiting_ratification is not allowed",
		},
		{
			name: "question needs a held card", from: CardPublished, to: CardNeedsDecision, cause: ByQuestion,
			wantErr: ErrIllegalTransition, wantText: "published → needs_decision",
		},
		{
			name: "unknown state", from: CardPublished, to: "archived", cause: ByWorker,
			wantErr: ErrInvalid, wantText: `unknown state "archived"`,
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
	for from, moves := range cardTransitions {
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
	for _, s := range CardStates {
		if s.Final() != (s == CardDone || s == CardCancelled) {
			t.Errorf("%s.Final() = %v", s, s.Final())
		}
	}
}
