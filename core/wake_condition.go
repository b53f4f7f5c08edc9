package core

import "time"

// WakeCondition is one thing worth a person's attention, as its source sees
// it now: a blocked card, an open breaker, a pending approval. Sources
// are level-triggered: they report every condition that holds, each
// time they are asked, and the router decides what is news.
type WakeCondition struct {
	// Key names the condition across reconciles, e.g. "card-blocked:c_1".
	Key string
	// Source says where the data came from ("cards", "heartbeats"); it is
	// shown beside every field.
	Source string
	// EventID, when set, is the source's own event id: the router acts on
	// each one at most once, even across restarts.
	EventID string
	// Fingerprint is the state that matters; a change notifies again.
	Fingerprint string
	// Title is the fixed frame's headline, chosen by the source's code
	// (never taken from workspace data).
	Title string
	// Fields are the workspace data, shown only inside delimited fields.
	Fields []WakeField
	// Backoff, when positive, notifies again after this long even if
	// nothing changed; zero notifies once per change.
	Backoff time.Duration
	// Mentions are the people the notice pings.
	Mentions []string
	// Alert makes the condition an on-call incident while it holds: its
	// notices carry 👀 and 💤, it escalates while nobody claims it, and
	// it is edited to resolved when it no longer holds. Unset for a
	// condition that reminds of an incident kept elsewhere (an approval
	// request waiting).
	Alert bool
}

// WakeField is one piece of workspace data in a wake notice.
type WakeField struct {
	Name  string
	Value string
}
