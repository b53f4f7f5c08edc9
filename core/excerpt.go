package core

import (
	"context"
	"time"
)

// Excerpt is one message a person wrote to Jarvis, kept for a while so
// that a proposal can quote the conversation that led to it, tagged with
// how far its text is trusted.
type Excerpt struct {
	ID      int64
	RoomID  string
	Sender  string
	EventID string
	Body    string
	Trust   Trust
	// Held marks external text shaped like a standing instruction: it is
	// never acted on, and only a native account's ratification clears it.
	Held       bool
	RatifiedBy string
	At         time.Time
}

// ExcerptKeep is how many recent messages per person and room are kept.
const ExcerptKeep = 10

// ExcerptStore keeps recent messages.
type ExcerptStore interface {
	// AddExcerpt stores a message and forgets all but the newest
	// ExcerptKeep of that person in that room; it returns the new ID.
	AddExcerpt(ctx context.Context, e Excerpt) (int64, error)
	// Excerpts returns up to n of the person's newest messages in the
	// room, oldest first.
	Excerpts(ctx context.Context, roomID, sender string, n int) ([]Excerpt, error)
	// RatifyExcerpt clears the hold on a held message of the person.
	RatifyExcerpt(ctx context.Context, id int64, sender, by string) error
	// ClearExcerpts forgets a room's messages and says how many.
	ClearExcerpts(ctx context.Context, roomID string) (int, error)
}
