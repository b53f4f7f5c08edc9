package commands

import (
	"math"
	"sync"
	"time"
)

// SenderLimit bounds how fast one sender is answered: a bucket of Burst
// messages per sender that refills at PerSecond. A sender who empties it
// is told once how long Jarvis will not listen, then ignored until the
// bucket is full again. Zero values set no limit.
type SenderLimit struct {
	PerSecond float64
	Burst     int
}

// verdict is what the limit says about one message.
type verdict int

const (
	// allow: handle the message.
	allow verdict = iota
	// warn: do not handle it; tell the sender they are ignored for a while.
	warn
	// drop: do not handle it, and say nothing.
	drop
)

// senderLimiter keeps a bucket per sender.
type senderLimiter struct {
	limit SenderLimit

	mu      sync.Mutex
	senders map[string]*senderBucket
}

type senderBucket struct {
	tokens float64
	at     time.Time
	// quietUntil is when a sender told to slow down is heard again.
	quietUntil time.Time
}

func newSenderLimiter(l SenderLimit) *senderLimiter {
	if l.PerSecond <= 0 || l.Burst < 1 {
		return nil
	}
	return &senderLimiter{limit: l, senders: map[string]*senderBucket{}}
}

// check draws one message from sender's bucket at now. On warn, quiet is
// how long the sender will be ignored.
func (l *senderLimiter) check(sender string, now time.Time) (v verdict, quiet time.Duration) {
	if l == nil {
		return allow, 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	burst := float64(l.limit.Burst)
	b, ok := l.senders[sender]
	if !ok {
		l.forgetIdle(now)
		b = &senderBucket{tokens: burst, at: now}
		l.senders[sender] = b
	}
	if now.After(b.at) {
		b.tokens = min(burst, b.tokens+now.Sub(b.at).Seconds()*l.limit.PerSecond)
		b.at = now
	}
	switch {
	case now.Before(b.quietUntil):
		return drop, 0
	case b.tokens >= 1:
		b.tokens--
		return allow, 0
	}
	secs := math.Ceil((burst - b.tokens) / l.limit.PerSecond)
	quiet = time.Duration(secs) * time.Second
	b.quietUntil = now.Add(quiet)
	return warn, quiet
}

// forgetIdle drops, once there are many, the buckets that are full again:
// a forgotten bucket and a new one are the same.
func (l *senderLimiter) forgetIdle(now time.Time) {
	if len(l.senders) < 1024 {
		return
	}
	for sender, b := range l.senders {
		if now.After(b.quietUntil) && b.tokens+now.Sub(b.at).Seconds()*l.limit.PerSecond >= float64(l.limit.Burst) {
			delete(l.senders, sender)
		}
	}
}
