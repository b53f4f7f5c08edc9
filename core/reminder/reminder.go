// Package reminder keeps a person's reminders: one-shot or repeating,
// delivered through the outbox to the person's direct room at their time,
// snoozed or marked done by a reaction or a reply.
package reminder

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Repeat says how a reminder comes back.
type Repeat string

// How reminders repeat.
const (
	Once   Repeat = ""
	Daily  Repeat = "day"
	Weekly Repeat = "week"
)

// Status is where a reminder stands.
type Status string

// Reminder statuses. A waiting reminder is delivered when due; a sent one
// was delivered once and waits only for a snooze or ✅.
const (
	Waiting   Status = "waiting"
	Sent      Status = "sent"
	Done      Status = "done"
	Cancelled Status = "cancelled"
)

// Limits.
const (
	// MaxText is how long a reminder's text may be, in bytes.
	MaxText = 500
	// MaxPerOwner is how many open reminders one person may keep.
	MaxPerOwner = 200
	// SweepBatch is how many due reminders one sweep delivers at most.
	SweepBatch = 100
	// Late is how long after its time a reminder is said to come late: far
	// more than a sweep takes, or a new Jarvis taking over the lease.
	Late = 30 * time.Second
)

// Reminder is one thing to remind a person of.
type Reminder struct {
	ID    int64
	Owner string
	Text  string
	// Due is when it is delivered next.
	Due time.Time
	// Every says how it repeats; At is the time it was first set for,
	// whose wall-clock time in Zone repeats.
	Every Repeat
	At    time.Time
	// Zone is the owner's time zone (IANA name) when it was set.
	Zone   string
	Status Status
	// Deliveries counts how often it was delivered: the last delivery's
	// notice key is NoticeKey(Deliveries).
	Deliveries int
	CreatedAt  time.Time
}

// Location is the reminder's time zone (UTC when unknown).
func (r Reminder) Location() *time.Location {
	if loc, err := time.LoadLocation(r.Zone); err == nil {
		return loc
	}
	return time.UTC
}

// Next is the first time after t the reminder repeats at, in its zone;
// zero for a one-shot reminder.
func (r Reminder) Next(t time.Time) time.Time {
	var days int
	switch r.Every {
	case Daily:
		days = 1
	case Weekly:
		days = 7
	default:
		return time.Time{}
	}
	at := r.At.In(r.Location())
	if at.After(t) {
		return at
	}
	// Jump close by whole periods, then step in the zone's calendar, so a
	// change to or from summer time keeps the wall-clock time.
	n := int(t.Sub(at).Hours()/24) / days
	next := at.AddDate(0, 0, n*days)
	for !next.After(t) {
		next = next.AddDate(0, 0, days)
	}
	return next
}

// NoticeKeyPrefix starts the keys of delivered reminders: answers to them
// (reactions, replies) reach the reminder commands.
const NoticeKeyPrefix = "remind:"

// NoticeKey is the key of the n-th delivery of the reminder.
func (r Reminder) NoticeKey(n int) string { return fmt.Sprintf("%s%d:%d", NoticeKeyPrefix, r.ID, n) }

// ParseNoticeKey returns the reminder a delivery's key names.
func ParseNoticeKey(key string) (int64, bool) {
	rest, ok := strings.CutPrefix(key, NoticeKeyPrefix)
	if !ok {
		return 0, false
	}
	id, _, _ := strings.Cut(rest, ":")
	n, err := strconv.ParseInt(id, 10, 64)
	return n, err == nil
}

// Store keeps reminders.
type Store interface {
	// InsertReminder writes a new reminder and returns its ID.
	InsertReminder(ctx context.Context, r Reminder) (int64, error)
	// Reminder returns one, or core.ErrNotFound.
	Reminder(ctx context.Context, id int64) (Reminder, error)
	// OpenReminders returns an owner's waiting reminders, soonest first.
	OpenReminders(ctx context.Context, owner string) ([]Reminder, error)
	// DueReminders returns up to limit waiting reminders due at or before
	// now, oldest first.
	DueReminders(ctx context.Context, now time.Time, limit int) ([]Reminder, error)
	// UpdateReminder writes a reminder's due time, status and deliveries.
	UpdateReminder(ctx context.Context, r Reminder) error
	// MoveReminders gives every reminder of from to to.
	MoveReminders(ctx context.Context, from, to string) (int, error)
}
