package core

import (
	"context"
	"time"
)

// ModelTurn is a chat message whose answer a language model is writing:
// recorded in the transaction that marks the message handled, and taken
// in the one that queues its answer, so that a turn a crash or a restart
// cut short is resumed rather than lost.
type ModelTurn struct {
	EventID string
	RoomID  string
	Sender  string
	// Message is the message as the processor needs it again, in its own
	// encoding.
	Message string
	// Started is when the message was marked handled.
	Started time.Time
}

// ModelTurnStore keeps the model turns not yet answered.
type ModelTurnStore interface {
	// AddModelTurn records a turn.
	AddModelTurn(ctx context.Context, t ModelTurn) error
	// TakeModelTurn deletes the turn of an event; it returns false when
	// there was none (another run answered it).
	TakeModelTurn(ctx context.Context, eventID string) (bool, error)
	// ModelTurns lists the turns not yet answered, oldest first.
	ModelTurns(ctx context.Context) ([]ModelTurn, error)
}
