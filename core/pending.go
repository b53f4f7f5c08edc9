package core

import (
	"context"
	"time"
)

// Pending is something Jarvis asked a person to confirm in chat: a
// tripwire proposal, a `!sys restart`, a card set to publish. It is
// answered once, by the person who asked, before it expires.
type Pending struct {
	// Key is the key of the notice that asked; reactions and replies to
	// that notice resolve it.
	Key       string
	Kind      string
	RoomID    string
	Requester string
	// Payload is what to do once confirmed, in the kind's own encoding.
	Payload    string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	ResolvedAt time.Time
	// Resolution says how it ended: "confirmed", "dismissed", "expired".
	Resolution string
}

// Resolutions of a pending action.
const (
	Confirmed = "confirmed"
	Dismissed = "dismissed"
)

// PendingStore keeps pending actions.
type PendingStore interface {
	// AddPending records a new pending action.
	AddPending(ctx context.Context, p Pending) error
	// GetPending returns the pending action asked by the notice key.
	GetPending(ctx context.Context, key string) (Pending, error)
	// ResolvePending marks it resolved unless it already was; it returns
	// false when someone resolved it first.
	ResolvePending(ctx context.Context, key, resolution string, at time.Time) (bool, error)
	// MovePending gives the unresolved, unexpired pending actions that
	// from asked for to to (a puppet's, to the account it was linked to),
	// and says how many.
	MovePending(ctx context.Context, from, to string, at time.Time) (int, error)
	// ClearPending drops the unresolved pending actions of a room and
	// says how many of each kind were dropped.
	ClearPending(ctx context.Context, roomID string, at time.Time) (map[string]int, error)
}

// Resolve decides whether who may resolve p now: only the requester, only
// once, only before it expires. It returns nil when they may.
func (p Pending) Resolve(who string, now time.Time) error {
	switch {
	case who != p.Requester:
		return ErrForbidden
	case !p.ResolvedAt.IsZero():
		return ErrDuplicate
	case now.After(p.ExpiresAt):
		return ErrExpired
	}
	return nil
}
