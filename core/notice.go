package core

import (
	"context"
	"strings"
	"time"
)

// NoticeKind says what a notice does in its room.
type NoticeKind string

const (
	// NoticeMessage is a new message.
	NoticeMessage NoticeKind = "message"
	// NoticeEdit replaces the text of an earlier notice (Target).
	NoticeEdit NoticeKind = "edit"
	// NoticeReaction puts Body (an emoji) as a reaction on Target.
	NoticeReaction NoticeKind = "reaction"
	// NoticeImage is an image drawn when it is sent: Body says what to
	// draw (a chart of a source's history), and the sender renders it,
	// uploads it and sends it as m.image, in Target's thread when set.
	NoticeImage NoticeKind = "image"
)

// Notice is one thing Jarvis says. Every notice is written to the durable
// outbox in the same transaction as the change that caused it; the sender
// delivers it once, using Key as the Matrix transaction id.
type Notice struct {
	// Key is unique per notice and stable across retries, e.g.
	// "reply:$event:1" or "trip:tw_x:17".
	Key string
	// RoomID is the room to send to. When empty, ToUser names a person whose
	// direct room with Jarvis is used (created on first need).
	RoomID string
	ToUser string
	Kind   NoticeKind
	// Body is Markdown for messages and edits, an emoji for reactions,
	// what to draw for images.
	Body string
	// Mentions are user IDs the message pings (m.mentions).
	Mentions []string
	// Target is the key of an earlier notice that an edit or reaction
	// applies to, or that a message is threaded under (with Thread).
	Target string
	// TargetEvent is a Matrix event ID, used when the target is not one of
	// Jarvis's own notices (a reply to a person's message).
	TargetEvent string
	// Thread puts a message in the thread rooted at Target, rather than
	// replying to it.
	Thread bool
	// ThreadRoot, a Matrix event ID, puts a reply to TargetEvent in the
	// thread rooted there: the thread the person wrote in.
	ThreadRoot string
	// Coalesce allows the sender to merge this message with other waiting
	// coalescible messages of the same room into one Matrix event. Only
	// notices that are never edited or reacted to may coalesce.
	Coalesce bool
	// Secret marks a message that shows a secret once (a token): the
	// outbox blanks its body as soon as it is sent, keeping the row. The
	// store records it in the key, as SecretKeyPrefix + Key.
	Secret bool
	// Urgent puts the notice in the outbox's urgent lane, which the sender
	// empties first: a command's reply and a halt never wait behind a
	// flood of other notices. Within a lane a destination's notices go
	// out in order; across lanes an urgent one may overtake.
	Urgent bool
}

// ConsolePrefix starts a room or a recipient that is the operator's
// terminal rather than Matrix ("console:alice"): a console reads those
// notices from the outbox, the Matrix sender leaves them alone, and the
// lease holder marks them delivered.
const ConsolePrefix = "console:"

// SecretKeyPrefix starts the key of a secret notice in the outbox.
const SecretKeyPrefix = "secret:"

// Validate checks that a notice can be delivered.
func (n Notice) Validate() error {
	switch {
	case n.Key == "":
		return Invalid("key", "is required")
	case n.RoomID == "" && n.ToUser == "":
		return Invalid("room_id", "a room or a recipient is required")
	case strings.TrimSpace(n.Body) == "":
		return Invalid("body", "is empty")
	}
	switch n.Kind {
	case NoticeMessage:
	case NoticeImage:
		if n.Coalesce || n.Secret {
			return Invalid("kind", "an image neither coalesces nor carries a secret")
		}
	case NoticeEdit, NoticeReaction:
		if n.Target == "" && n.TargetEvent == "" {
			return Invalid("target", "an %s needs a target", n.Kind)
		}
		if n.Coalesce {
			return Invalid("coalesce", "only messages coalesce")
		}
		if n.Secret {
			return Invalid("secret", "only messages carry secrets")
		}
	default:
		return Invalid("kind", "unknown notice kind %q", n.Kind)
	}
	return nil
}

// OutboxEntry is a notice in the outbox with its delivery state.
type OutboxEntry struct {
	Notice
	Seq         int64
	BatchKey    string
	Attempts    int
	NextAttempt time.Time
	LastError   string
	EventID     string
	CreatedAt   time.Time
	SentAt      time.Time
	// AttemptStarted is set while a send is under way; found set on a
	// waiting notice, it means a send's outcome was never recorded.
	AttemptStarted time.Time
	// Refusals counts the attempts in a row the homeserver refused for a
	// reason a retry may not change; FailedAt is when the sender gave up
	// on the notice after MaxRefusals of them.
	Refusals int
	FailedAt time.Time
}

// Outbox is the durable queue of notices.
type Outbox interface {
	// Enqueue writes the notices in their order. A notice whose key exists
	// already is not written, the others are, and Enqueue returns
	// ErrDuplicate.
	Enqueue(ctx context.Context, notices ...Notice) error
}

// Transactor runs fn in one transaction: every store call made with the
// context fn receives is part of it, and all of them commit or none.
type Transactor interface {
	InTx(ctx context.Context, fn func(ctx context.Context) error) error
}
