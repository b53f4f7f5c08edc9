package reminder

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// The reactions a delivered reminder carries, and the replies that do the
// same where a network cannot react.
const (
	SnoozeShort    = "⏰"
	SnoozeHour     = "🕐"
	SnoozeTomorrow = "🌅"
	MarkDone       = "✅"
)

// Deps are what the reminder service needs.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Snooze is how long ⏰ puts a reminder off, as its deliveries say
	// (10 minutes when not positive).
	Snooze time.Duration
}

// Service keeps and delivers reminders.
type Service struct{ deps Deps }

// NewService returns a reminder service.
func NewService(deps Deps) *Service {
	if deps.Snooze <= 0 {
		deps.Snooze = 10 * time.Minute
	}
	return &Service{deps: deps}
}

// Add keeps a new reminder for r.Owner, due at r.Due.
func (s *Service) Add(ctx context.Context, r Reminder) (Reminder, error) {
	r.Text = strings.Join(strings.Fields(r.Text), " ")
	switch {
	case r.Text == "":
		return Reminder{}, core.Invalid("text", "say what to remind you of")
	case len(r.Text) > MaxText:
		return Reminder{}, core.Invalid("text", "is longer than %d bytes", MaxText)
	case r.Due.IsZero():
		return Reminder{}, core.Invalid("due", "say when")
	}
	open, err := s.deps.Store.OpenReminders(ctx, r.Owner)
	if err != nil {
		return Reminder{}, err
	}
	if len(open) >= MaxPerOwner {
		return Reminder{}, core.Invalid("reminders", "you keep %d already, the most there may be; cancel some first", len(open))
	}
	r.At, r.Status, r.Deliveries, r.CreatedAt = r.Due, Waiting, 0, s.deps.Clock.Now()
	r.ID, err = s.deps.Store.InsertReminder(ctx, r)
	return r, err
}

// List returns the owner's waiting reminders, soonest first.
func (s *Service) List(ctx context.Context, owner string) ([]Reminder, error) {
	return s.deps.Store.OpenReminders(ctx, owner)
}

// Get returns one of the owner's reminders; anyone else's is not found.
func (s *Service) Get(ctx context.Context, owner string, id int64) (Reminder, error) {
	r, err := s.deps.Store.Reminder(ctx, id)
	if err == nil && r.Owner != owner {
		err = fmt.Errorf("reminder %d: %w", id, core.ErrNotFound)
	}
	return r, err
}

// Cancel stops one of the owner's reminders for good.
func (s *Service) Cancel(ctx context.Context, owner string, id int64) (Reminder, error) {
	r, err := s.Get(ctx, owner, id)
	if err != nil {
		return Reminder{}, err
	}
	if r.Status == Done || r.Status == Cancelled {
		return Reminder{}, fmt.Errorf("reminder %d is %s: %w", id, r.Status, core.ErrNotFound)
	}
	r.Status = Cancelled
	return r, s.deps.Store.UpdateReminder(ctx, r)
}

// Snooze delivers one of the owner's reminders again at until.
func (s *Service) Snooze(ctx context.Context, owner string, id int64, until time.Time) (Reminder, error) {
	r, err := s.Get(ctx, owner, id)
	if err != nil {
		return Reminder{}, err
	}
	if r.Status == Cancelled {
		return Reminder{}, fmt.Errorf("reminder %d was cancelled: %w", id, core.ErrNotFound)
	}
	r.Status, r.Due = Waiting, until
	return r, s.deps.Store.UpdateReminder(ctx, r)
}

// Finish marks a delivered reminder done: a one-shot one is over, a
// repeating one keeps its next time.
func (s *Service) Finish(ctx context.Context, owner string, id int64) (Reminder, error) {
	r, err := s.Get(ctx, owner, id)
	if err != nil {
		return Reminder{}, err
	}
	if r.Every != Once || r.Status == Done || r.Status == Cancelled {
		return r, nil
	}
	r.Status = Done
	return r, s.deps.Store.UpdateReminder(ctx, r)
}

// Adopt gives the reminders of a linked puppet to its account.
func (s *Service) Adopt(ctx context.Context, from, to string) (int, error) {
	return s.deps.Store.MoveReminders(ctx, from, to)
}

// Sweep delivers the reminders that are due, each once, in one
// transaction with what it changes: a one-shot reminder is then sent, a
// repeating one waits for its next time after now, however many it
// missed. One that comes late (Jarvis was not running at its time) says
// so.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n := 0
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		now := s.deps.Clock.Now()
		due, err := s.deps.Store.DueReminders(ctx, now, SweepBatch)
		if err != nil {
			return err
		}
		n = len(due)
		for _, r := range due {
			if err := s.deliver(ctx, r, now); err != nil {
				return fmt.Errorf("deliver reminder %d: %w", r.ID, err)
			}
		}
		return nil
	})
	return n, err
}

func (s *Service) deliver(ctx context.Context, r Reminder, now time.Time) error {
	r.Deliveries++
	key := r.NoticeKey(r.Deliveries)
	loc := r.Location()
	var b strings.Builder
	fmt.Fprintf(&b, "⏰ **Reminder:** %s", core.EscapeMarkdown(r.Text))
	if late := now.Sub(r.Due); late > Late {
		fmt.Fprintf(&b, "\n\nThis comes late: it was due %s, when I was not running.", When(r.Due, now, loc))
	}
	r.Status = Sent
	if next := r.Next(now); !next.IsZero() {
		r.Status, r.Due = Waiting, next
		fmt.Fprintf(&b, "\n\nNext: %s.", When(next, now, loc))
	}
	fmt.Fprintf(&b, "\n\nReact %s to snooze %s, %s 1 hour, %s until tomorrow, %s when done; or reply `10m`, `1h`, `tomorrow` or `done`.",
		SnoozeShort, core.HumanDuration(s.deps.Snooze), SnoozeHour, SnoozeTomorrow, MarkDone)
	notices := []core.Notice{{Key: key, ToUser: r.Owner, Kind: core.NoticeMessage, Body: b.String(), Mentions: []string{r.Owner}}}
	for _, emoji := range []string{SnoozeShort, SnoozeHour, SnoozeTomorrow, MarkDone} {
		notices = append(notices, core.Notice{Key: key + ":" + emoji, ToUser: r.Owner, Kind: core.NoticeReaction, Body: emoji, Target: key})
	}
	for _, n := range notices {
		if err := s.deps.Outbox.Enqueue(ctx, n); err != nil {
			return err
		}
	}
	return s.deps.Store.UpdateReminder(ctx, r)
}

// When says a time the way a person reads it in their zone: "at 10:00"
// today, "tomorrow at 10:00", "on Mon 7 Dec at 09:00" further away.
func When(t, now time.Time, loc *time.Location) string {
	t, now = t.In(loc), now.In(loc)
	zone := " " + t.Format("MST")
	day := func(x time.Time) time.Time { y, m, d := x.Date(); return time.Date(y, m, d, 0, 0, 0, 0, loc) }
	switch days := int(day(t).Sub(day(now)).Hours() / 24); {
	case days == 0:
		return "today at " + t.Format("15:04") + zone
	case days == 1:
		return "tomorrow at " + t.Format("15:04") + zone
	case days == -1:
		return "yesterday at " + t.Format("15:04") + zone
	default:
		return "on " + t.Format("Mon 2 Jan at 15:04") + zone
	}
}
