package workload

import (
	"maps"
	"slices"
	"time"

	"maunium.net/go/mautrix/id"
)

// Record is what Jarvis acknowledged during a workload, and what it did
// not: everything in it but Refused and Failed must be in the store (and
// each exchange's answer in the room) for as long as the retention
// windows keep it.
type Record struct {
	// Elapsed is how long the workload had run.
	Elapsed time.Duration
	// Heartbeats are the heartbeats answered with 200, by agent and
	// cycle; a cycle whose heartbeats all went unanswered has Count 0.
	Heartbeats map[AgentCycle]Heartbeats
	// Journal are the journal entries answered with 201.
	Journal []JournalEntry
	// CardSets are the card sets answered with 200 and their cards.
	CardSets []CardSet
	// UnknownCardSets are the idempotency keys of card sets whose request
	// got no answer: published or not, asking again with the key tells.
	UnknownCardSets []string
	// Breakers are the breakers opened, each with how far its cycle got.
	Breakers []BreakerCycle
	// Chat is every message people sent and the answer they saw.
	Chat []Exchange
	// Refused counts the answers that were no acknowledgement, by route
	// and status ("POST /api/agents/journal 423").
	Refused map[string]int
	// Failed counts the requests that got no answer, or no answer in the
	// room within the timeout, by route or by what was said.
	Failed map[string]int
}

// AgentCycle names one heartbeat row: an agent's cycle.
type AgentCycle struct {
	Agent string
	Cycle string
}

// Heartbeats are the acknowledged heartbeats of one agent's cycle.
type Heartbeats struct {
	Count int
	// Last is the timestamp and MII of the last one acknowledged, which
	// the store keeps.
	Last time.Time
	MII  float64
	// UnansweredSince counts the heartbeats sent after Last that got no
	// answer (Stop cut them off, or Jarvis went away): the store may
	// hold one of them instead of Last.
	UnansweredSince int
}

// JournalEntry is an acknowledged journal entry.
type JournalEntry struct {
	Agent   string
	Cycle   string
	EntryID string
}

// CardSet is an acknowledged card set.
type CardSet struct {
	Key   string
	SetID string
	Cards []string
}

// BreakerCycle is one breaker the supervisor opened: Event is the halt's
// ID; Resumed says the admin's !breaker resume was answered, Verified
// that the supervisor's verification closed it.
type BreakerCycle struct {
	Agent    string
	Event    string
	Resumed  bool
	Verified bool
}

// Exchange is one message a person sent in the room and Jarvis's answer;
// Answer is empty when none came within the timeout.
type Exchange struct {
	Person  id.UserID
	Text    string
	Sent    id.EventID
	Answer  id.EventID
	Latency time.Duration
}

// HeartbeatCount is how many heartbeats were acknowledged.
func (r Record) HeartbeatCount() int {
	n := 0
	for _, hb := range r.Heartbeats {
		n += hb.Count
	}
	return n
}

// Answered is how many exchanges got their answer.
func (r Record) Answered() int {
	n := 0
	for _, e := range r.Chat {
		if e.Answer != "" {
			n++
		}
	}
	return n
}

func newRecord() Record {
	return Record{Heartbeats: map[AgentCycle]Heartbeats{}, Refused: map[string]int{}, Failed: map[string]int{}}
}

func (r Record) clone() Record {
	c := r
	c.Heartbeats = maps.Clone(r.Heartbeats)
	c.Journal = slices.Clone(r.Journal)
	c.CardSets = slices.Clone(r.CardSets)
	c.UnknownCardSets = slices.Clone(r.UnknownCardSets)
	c.Breakers = slices.Clone(r.Breakers)
	c.Chat = slices.Clone(r.Chat)
	c.Refused = maps.Clone(r.Refused)
	c.Failed = maps.Clone(r.Failed)
	return c
}
