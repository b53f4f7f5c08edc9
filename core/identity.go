package core

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// Trust says where content came from. Content from bridged senders and
// from external payloads is external, and so is anything derived from it.
type Trust string

const (
	// TrustNative is content a person wrote on Matrix, or a linked account.
	TrustNative Trust = "native"
	// TrustExternal is content from a bridged network or an outside
	// payload (webhook body, RSS item, journal content).
	TrustExternal Trust = "external"
)

// Derive is the trust of something made from parts of these trusts:
// external as soon as one part is.
func Derive(parts ...Trust) Trust {
	for _, t := range parts {
		if t != TrustNative {
			return TrustExternal
		}
	}
	return TrustNative
}

// standingInstruction matches text shaped like an instruction meant to
// outlive the message: "from now on always…", "ignore previous…".
var standingInstruction = regexp.MustCompile(`(?i)\b(from now on|going forward|henceforth|ignore (all |any )?(the )?(previous|prior|above|earlier)|disregard (all |any )?(the )?(previous|prior|above|earlier)|forget (all |your |the )?(previous|prior|earlier)?\s*instructions|you (are|will be) now|new instructions?|system prompt|act as)\b`)

// LooksLikeInstruction reports whether text reads like a standing
// instruction. Such text from an external source is never acted on as an
// instruction and is stored only once a native account ratifies it.
func LooksLikeInstruction(text string) bool {
	return standingInstruction.MatchString(strings.ToLower(text))
}

// IdentityLink ties a bridged puppet to the Matrix account of the person
// behind it, so their tripwires, tokens and decisions follow them.
type IdentityLink struct {
	Puppet   string
	Account  string
	Network  string
	LinkedAt time.Time
}

// LinkCode is a one-time code that proves the same person holds two
// accounts: asked from one, shown only there, typed from the other.
type LinkCode struct {
	Code string
	// From is who asked: the puppet or the Matrix account.
	From    string
	Network string
	// Redeemer is the one account that may use the code.
	Redeemer string
	// Tries counts wrong tries on the code.
	Tries     int
	ExpiresAt time.Time
}

// IdentityStore keeps identity links and pending link codes.
type IdentityStore interface {
	// LinkedAccount returns the Matrix account a puppet is linked to, or
	// ErrNotFound.
	LinkedAccount(ctx context.Context, puppet string) (string, error)
	AddLinkCode(ctx context.Context, c LinkCode) error
	// GetLinkCode returns a code, or ErrNotFound.
	GetLinkCode(ctx context.Context, code string) (LinkCode, error)
	// TakeLinkCode returns and deletes a code, or ErrNotFound.
	TakeLinkCode(ctx context.Context, code string) (LinkCode, error)
	// MissLinkCode counts a wrong try on a code, returning the tries.
	MissLinkCode(ctx context.Context, code string) (int, error)
	// AddLinkFailure records a wrong code sent from an account, and
	// LinkFailures counts those sent after since.
	AddLinkFailure(ctx context.Context, account string, at time.Time) error
	LinkFailures(ctx context.Context, account string, since time.Time) (int, error)
	// PutLink records a link; ErrDuplicate if the puppet is linked.
	PutLink(ctx context.Context, l IdentityLink) error
	// DeleteLink removes a puppet's link to account, or ErrNotFound.
	DeleteLink(ctx context.Context, puppet, account string) error
	// DirectRoom returns the direct room Jarvis shares with a user, or
	// ErrNotFound.
	DirectRoom(ctx context.Context, userID string) (string, error)
}
