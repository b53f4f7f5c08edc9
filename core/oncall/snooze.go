package oncall

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// SnoozeReaction is seeded by Jarvis next to 👀 on every alert and on
// every personal trip push; a tap snoozes it for oncall.snooze_default.
// SnoozeWord, replied with a length ("snooze 4h", "snooze until tomorrow
// 9:00"), snoozes it for that long.
const (
	SnoozeReaction = "💤"
	SnoozeWord     = "snooze"
	// MaxSnooze bounds a snooze: nothing sleeps for good.
	MaxSnooze = 7 * 24 * time.Hour
)

// SnoozeOf reads an answer as a snooze: the reaction or the bare word
// (length "", the default), or the word followed by how long, as the
// person wrote it ("4h", "until tomorrow 9:00").
func SnoozeOf(answer string) (length string, ok bool) {
	a := strings.TrimSpace(answer)
	if a == SnoozeReaction {
		return "", true
	}
	word, rest, _ := strings.Cut(a, " ")
	if !strings.EqualFold(strings.Trim(word, ".!:"), SnoozeWord) {
		return "", false
	}
	return strings.TrimSpace(strings.TrimRight(rest, ".!")), true
}

// CheckSnooze refuses a snooze that ends by now or lasts longer than
// MaxSnooze.
func CheckSnooze(until, now time.Time) error {
	switch {
	case !until.After(now):
		return core.Invalid("until", "that time has passed")
	case until.Sub(now) > MaxSnooze:
		return core.Invalid("until", "a snooze lasts %s at most", core.HumanDuration(MaxSnooze))
	}
	return nil
}

// SnoozeStore keeps the snoozes of incidents.
type SnoozeStore interface {
	// SnoozeIncident snoozes an open incident, replacing any snooze it
	// had, and reports whether it did (false: it resolved).
	SnoozeIncident(ctx context.Context, id, by string, at, until time.Time) (bool, error)
	// SnoozesEnded lists the open incidents whose snooze ended by now,
	// the earliest end first.
	SnoozesEnded(ctx context.Context, now time.Time) ([]Incident, error)
	// WakeIncident ends the snooze of incident id that ends at until and
	// reports whether it did (false: it was snoozed again meanwhile, or
	// woken already).
	WakeIncident(ctx context.Context, id string, until time.Time) (bool, error)
}

// Snoozed reports whether the incident is snoozed at now.
func (inc Incident) Snoozed(now time.Time) bool { return now.Before(inc.SnoozedUntil) }

// SnoozeDefault is how long 💤 snoozes.
func (s *Service) SnoozeDefault() time.Duration { return s.cfg.SnoozeDefault }

// Snooze has who snooze incident id until until: nobody is called to it
// before then. It returns the incident as it stands and whether it
// snoozed it now (false: it resolved); the caller sends SnoozeEdit then.
func (s *Service) Snooze(ctx context.Context, id, who string, until time.Time) (Incident, bool, error) {
	now := s.deps.Clock.Now()
	if err := CheckSnooze(until, now); err != nil {
		return Incident{}, false, err
	}
	ok, err := s.deps.Store.SnoozeIncident(ctx, id, who, now, until)
	if err != nil {
		return Incident{}, false, fmt.Errorf("snooze incident %s: %w", id, err)
	}
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return Incident{}, false, fmt.Errorf("snooze incident %s: %w", id, err)
	}
	return inc, ok, nil
}

// SnoozeEdit is the edit of a snoozed incident's alert naming who
// snoozed it and until when.
func SnoozeEdit(inc Incident) core.Notice {
	return core.Notice{Key: fmt.Sprintf("%s:snoozed:%d", inc.NoticeKey, inc.SnoozedAt.UnixMilli()), RoomID: inc.RoomID, Kind: core.NoticeEdit,
		Body: inc.text(), Target: inc.NoticeKey}
}

// WokeKeyPrefix starts the key of the reply that says a snoozed alert is
// back, followed by when its snooze ended (Unix milliseconds) and the
// incident's ID: an answer to it is an answer to the incident.
const WokeKeyPrefix = "woke:"

// IncidentOfWoke names the incident a "back from its snooze" reply is
// about, from the reply's key.
func IncidentOfWoke(key string) (string, bool) {
	return incidentOfStamped(key, WokeKeyPrefix)
}

// incidentOfStamped names the incident of a key that is prefix, a time
// in Unix milliseconds, a colon and the incident's ID.
func incidentOfStamped(key, prefix string) (string, bool) {
	ms, id, ok := strings.Cut(strings.TrimPrefix(key, prefix), ":")
	if _, err := strconv.ParseInt(ms, 10, 64); err != nil || !ok || !strings.HasPrefix(key, prefix) {
		return "", false
	}
	return id, true
}

// Wake ends the snoozes that are over, each in a transaction of its own:
// the alert is edited back to what it says without the snooze, and one
// reply in its thread says it is back and still open. It returns how
// many it woke. It writes, so only the lease holder runs it.
func (s *Service) Wake(ctx context.Context) (int, error) {
	due, err := s.deps.Store.SnoozesEnded(ctx, s.deps.Clock.Now())
	if err != nil {
		return 0, fmt.Errorf("wake snoozed incidents: %w", err)
	}
	woke := 0
	var errs []error
	for _, inc := range due {
		err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			ok, err := s.deps.Store.WakeIncident(ctx, inc.ID, inc.SnoozedUntil)
			if err != nil || !ok {
				return err
			}
			woke++
			return s.wake(ctx, inc)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("wake incident %s: %w", inc.ID, err))
		}
	}
	return woke, errors.Join(errs...)
}

// wake tells the room that inc, whose snooze ended, is still open.
func (s *Service) wake(ctx context.Context, inc Incident) error {
	end := inc.SnoozedUntil.UnixMilli()
	body := fmt.Sprintf("💤 The snooze %s set is over, and this alert is still open.", core.EscapeMarkdown(inc.SnoozedBy))
	if inc.Owner == "" {
		body += fmt.Sprintf(" Nobody has claimed it: tap %s on it or reply `%s` to take it.", ClaimReaction, ClaimWord)
	} else {
		body += fmt.Sprintf(" %s has it.", core.EscapeMarkdown(inc.Owner))
	}
	awake := inc
	awake.SnoozedBy, awake.SnoozedAt, awake.SnoozedUntil = "", time.Time{}, time.Time{}
	for _, n := range []core.Notice{
		{Key: fmt.Sprintf("%s:woke:%d", inc.NoticeKey, end), RoomID: inc.RoomID, Kind: core.NoticeEdit, Body: awake.text(), Target: inc.NoticeKey},
		{Key: fmt.Sprintf("%s%d:%s", WokeKeyPrefix, end, inc.ID), RoomID: inc.RoomID, Kind: core.NoticeMessage, Body: body,
			Target: inc.NoticeKey, Thread: true},
	} {
		if err := s.enqueue(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// UntilText says when a snooze set at from ends, in loc: "15:04 UTC" the
// same day, "Wed Dec 2 09:00 CET" another.
func UntilText(until, from time.Time, loc *time.Location) string {
	u, f := until.In(loc), from.In(loc)
	if u.YearDay() == f.YearDay() && u.Year() == f.Year() {
		return u.Format("15:04 MST")
	}
	return u.Format("Mon Jan 2 15:04 MST")
}
