package core

import (
	"strings"
	"time"
)

// MaxCoalesced is how many waiting notices the sender merges into one
// message at most, and MaxCoalescedBytes how long that message may get.
const (
	MaxCoalesced      = 20
	MaxCoalescedBytes = 16 << 10
)

// Batch is what the sender delivers in one Matrix request: one notice, or
// several coalescible messages for the same room merged into one.
type Batch struct {
	// TxnKey is the key the Matrix transaction id derives from: the notice's
	// own key, or the batch key fixed before the first attempt.
	TxnKey  string
	Entries []OutboxEntry
	// New is true when the batch key was chosen now and must be recorded
	// before the first attempt, so a retry sends the very same batch.
	New bool
}

// Destination is the room a notice goes to, or the person whose direct
// room it goes to.
func (e OutboxEntry) Destination() string {
	if e.RoomID != "" {
		return e.RoomID
	}
	return "user:" + e.ToUser
}

// lane is one destination's queue of urgent, or of other, notices.
type lane struct {
	destination string
	urgent      bool
}

// PlanBatches decides what to send next from the waiting entries, given in
// outbox order. Each destination has two lanes, the urgent notices and the
// others, and the urgent lanes' batches come first. Notices of one lane go
// out in order, so only the head of each lane is considered; a head still
// backing off holds its lane back. Consecutive coalescible messages at the
// head merge.
func PlanBatches(waiting []OutboxEntry, now time.Time) []Batch {
	byLane := map[lane][]OutboxEntry{}
	var urgent, others []lane
	for _, e := range waiting {
		l := lane{destination: e.Destination(), urgent: e.Urgent}
		if _, ok := byLane[l]; !ok && l.urgent {
			urgent = append(urgent, l)
		} else if !ok {
			others = append(others, l)
		}
		byLane[l] = append(byLane[l], e)
	}
	var batches []Batch
	for _, l := range append(urgent, others...) {
		queue := byLane[l]
		head := queue[0]
		if head.NextAttempt.After(now) {
			continue
		}
		if head.BatchKey != "" {
			b := Batch{TxnKey: head.BatchKey}
			for _, e := range queue {
				if e.BatchKey == head.BatchKey {
					b.Entries = append(b.Entries, e)
				}
			}
			batches = append(batches, b)
			continue
		}
		b := Batch{TxnKey: head.Key, Entries: []OutboxEntry{head}}
		if head.Coalesce {
			size := len(head.Body)
			for _, e := range queue[1:] {
				if !e.Coalesce || e.BatchKey != "" || len(b.Entries) == MaxCoalesced || size+len(e.Body) > MaxCoalescedBytes {
					break
				}
				size += len(e.Body)
				b.Entries = append(b.Entries, e)
			}
			if len(b.Entries) > 1 {
				b.TxnKey = "batch:" + head.Key
				b.New = true
			}
		}
		batches = append(batches, b)
	}
	return batches
}

// Body joins the bodies of a batch into one Markdown text.
func (b Batch) Body() string {
	if len(b.Entries) == 1 {
		return b.Entries[0].Body
	}
	parts := make([]string, len(b.Entries))
	for i, e := range b.Entries {
		parts[i] = strings.TrimSpace(e.Body)
	}
	return strings.Join(parts, "\n\n---\n\n")
}

// Mentions joins the mentions of a batch, each user once.
func (b Batch) Mentions() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range b.Entries {
		for _, m := range e.Mentions {
			if !seen[m] {
				seen[m] = true
				out = append(out, m)
			}
		}
	}
	return out
}

// Keys lists the notice keys of a batch.
func (b Batch) Keys() []string {
	keys := make([]string, len(b.Entries))
	for i, e := range b.Entries {
		keys[i] = e.Key
	}
	return keys
}

// MaxRefusals is how many refusals in a row the sender takes before it
// gives up on a notice: a person who does not exist, a room Jarvis cannot
// post to. With RetryDelay's back-off the last comes about 15 s after the
// first, long enough for a refusal that was a passing state to clear.
const MaxRefusals = 5

// RetryDelay is the back-off before the next attempt after the given
// number of failed attempts: 1 s doubling up to 5 minutes.
func RetryDelay(attempts int) time.Duration {
	d := time.Second
	for i := 1; i < attempts && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}
