// Package core is the small kernel every feature of Jarvis shares: errors,
// the clock, notices and the outbox interface, pending actions, identity and
// trust, excerpts, the source registry and wake conditions. Each feature
// lives in a package below it (tripwire, breaker, card, fleet, lease, wake).
// Everything under core imports the standard library only.
package core

import (
	"errors"
	"fmt"
)

// Sentinel errors. Callers wrap them with context; the API maps them to
// status codes in one table and chat handlers turn them into short replies.
var (
	// ErrNotFound means the thing asked for does not exist in the caller's scope.
	ErrNotFound = errors.New("not found")
	// ErrInvalid means the input is malformed; wrap it with a FieldError to
	// name the field at fault.
	ErrInvalid = errors.New("invalid input")
	// ErrConflict means the write collides with an existing record
	// (a duplicate id, an illegal state transition).
	ErrConflict = errors.New("conflict")
	// ErrDuplicate means the same request was already handled; nothing was
	// done a second time.
	ErrDuplicate = errors.New("already handled")
	// ErrUnauthorized means the caller did not prove who it is (a missing or
	// wrong token or signature).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrForbidden means the caller is known but may not do this (a
	// non-admin running an admin verb).
	ErrForbidden = errors.New("forbidden")
	// ErrRateLimited means the caller made too many requests of this kind
	// in the window; nothing was done.
	ErrRateLimited = errors.New("rate limited")
	// ErrGone means the window in which the request was allowed has closed.
	ErrGone = errors.New("window closed")
	// ErrUnprocessable means the request is well formed but cannot be
	// honoured as it stands (an idempotency key reused with another body).
	ErrUnprocessable = errors.New("unprocessable")
	// ErrIllegalTransition means a state machine was asked for a move it
	// does not allow; nothing was written.
	ErrIllegalTransition = errors.New("illegal transition")
	// ErrLeaseHeld means another Jarvis holds the workspace lease.
	ErrLeaseHeld = errors.New("workspace lease held by another instance")
	// ErrStaleEpoch means a write carried a lease epoch that is no longer
	// current; it was refused.
	ErrStaleEpoch = errors.New("stale lease epoch")
	// ErrBreakerOpen means the agent's circuit breaker is open.
	ErrBreakerOpen = errors.New("circuit breaker open")
	// ErrBudgetExceeded means a priority budget has no room left in its window.
	ErrBudgetExceeded = errors.New("priority budget exceeded")
	// ErrExpired means the thing acted on (a proposal, a question) has expired.
	ErrExpired = errors.New("expired")
	// ErrTooLarge means the input, or what it would add to, is larger than
	// a configured size allows; nothing was stored.
	ErrTooLarge = errors.New("too large")
	// ErrBeyondLockedReads means a transaction marked LockedReads must
	// read and then write more than what it locked; its Transactor runs
	// it again at full isolation.
	ErrBeyondLockedReads = errors.New("needs more than its locked reads")
)

// FieldError names the field of an input that is wrong and why.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return fmt.Sprintf("%s: %s", e.Field, e.Reason) }

// Unwrap makes every FieldError an ErrInvalid.
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Invalid builds a FieldError.
func Invalid(field, format string, args ...any) error {
	return &FieldError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Refusal is a sentinel error with the reason whoever was refused reads:
// "illegal transition: done → claimed: done is final". Chat replies show
// the reason without the sentinel.
type Refusal struct {
	// Err is the sentinel.
	Err    error
	Reason string
}

// Refuse builds a Refusal of the sentinel err.
func Refuse(err error, format string, args ...any) error {
	return &Refusal{Err: err, Reason: fmt.Sprintf(format, args...)}
}

func (r *Refusal) Error() string { return r.Err.Error() + ": " + r.Reason }

// Unwrap makes a Refusal its sentinel.
func (r *Refusal) Unwrap() error { return r.Err }

// LimitError is a refusal because a configured limit was reached: Key is
// the configuration key that sets it, which the refusal names so that
// whoever reached it knows what to ask the operator for. Err is
// ErrTooLarge for a size, ErrRateLimited for a rate or a count.
type LimitError struct {
	Err    error
	Key    string
	Reason string
}

// OverLimit builds a LimitError of the sentinel err for the key.
func OverLimit(err error, key, format string, args ...any) error {
	return &LimitError{Err: err, Key: key, Reason: fmt.Sprintf(format, args...)}
}

func (e *LimitError) Error() string { return fmt.Sprintf("%s: %s (%s)", e.Err, e.Reason, e.Key) }

// Unwrap makes a LimitError its sentinel.
func (e *LimitError) Unwrap() error { return e.Err }
