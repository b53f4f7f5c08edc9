package core

import (
	"context"
	"regexp"
	"strings"
	"time"
)

// Trust says where content came from, from the most trusted to the
// least: native, linked, bridged, relay, external. Anything made from
// parts of several trusts has the weakest of them (Derive).
type Trust string

const (
	// TrustNative is content a person wrote on Matrix, from their own
	// account.
	TrustNative Trust = "native"
	// TrustLinked is content a person wrote through a bridge, from a
	// puppet linked to their Matrix account.
	TrustLinked Trust = "linked"
	// TrustBridged is content from a bridged puppet linked to nobody: the
	// bridge vouches for the network account, nobody for the person.
	TrustBridged Trust = "bridged"
	// TrustRelay is content a bridge's relay bot posted in someone's
	// name, which it does not prove.
	TrustRelay Trust = "relay"
	// TrustExternal is content from an outside payload (an HTTP body, an
	// RSS item, an agent's journal). Values written before there were
	// five levels say external for anything that crossed a bridge too.
	TrustExternal Trust = "external"
)

// Trusts lists the trust levels from the most trusted to the least.
var Trusts = []Trust{TrustNative, TrustLinked, TrustBridged, TrustRelay, TrustExternal}

// rank orders the levels: native highest. An empty trust is native (rows
// and drafts that never said); an unknown one is the weakest.
func (t Trust) rank() int {
	if t == "" {
		return len(Trusts)
	}
	for i, level := range Trusts {
		if t == level {
			return len(Trusts) - i
		}
	}
	return 0
}

// AtLeast reports whether t is as trusted as min or more.
func (t Trust) AtLeast(min Trust) bool { return t.rank() >= min.rank() }

// Valid reports whether t is one of the five levels.
func (t Trust) Valid() bool { return t.rank() > 0 && t != "" }

// Derive is the trust of something made from parts of these trusts: the
// weakest of them, native when there are none.
func Derive(parts ...Trust) Trust {
	out := TrustNative
	for _, t := range parts {
		if t.rank() < out.rank() {
			out = t
		}
	}
	if !out.Valid() {
		return TrustExternal
	}
	return out
}

// Describe says where content of this trust came from, for views.
func (t Trust) Describe() string {
	switch t {
	case TrustNative, "":
		return "Matrix (native)"
	case TrustLinked:
		return "a bridged account linked to a Matrix account (linked)"
	case TrustBridged:
		return "a bridged account linked to nobody (bridged)"
	case TrustRelay:
		return "a bridge's relay bot, in someone's name (relay)"
	}
	return "outside Matrix (external: an outside payload, or a bridge before trust had levels)"
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

// LinkCodeTTL is how long a link code stays valid, and how long a wrong
// code sent from an account counts against it.
const LinkCodeTTL = 10 * time.Minute

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
