// Package quiet holds a person's trip pushes during their quiet hours and
// delivers them as one digest when the hours end, and gathers the trips
// they only journal into one daily digest.
package quiet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Hours are a person's quiet hours: from From to To, in minutes after
// midnight in their time zone; To before From runs past midnight. The
// zero value with Set false is none.
type Hours struct {
	Set      bool
	From, To int
}

// Off is no quiet hours.
var Off = Hours{}

// ParseHours reads "22:00-07:00" (or "22-7", "22:00–07:00").
func ParseHours(s string) (Hours, error) {
	s = strings.ReplaceAll(strings.ReplaceAll(s, "–", "-"), " ", "")
	from, to, ok := strings.Cut(s, "-")
	if !ok {
		return Off, core.Invalid("hours", "say them as from-to, e.g. 22:00-07:00")
	}
	f, err := parseClock(from)
	if err != nil {
		return Off, err
	}
	t, err := parseClock(to)
	if err != nil {
		return Off, err
	}
	if f == t {
		return Off, core.Invalid("hours", "start and end are the same time")
	}
	return Hours{Set: true, From: f, To: t}, nil
}

// ParseClock reads a time of day, "09:00" or "9", as minutes after
// midnight.
func ParseClock(s string) (int, error) { return parseClock(strings.TrimSpace(s)) }

// parseClock reads "22:00", "7:30" or "22" as minutes after midnight.
func parseClock(s string) (int, error) {
	if !strings.Contains(s, ":") {
		s += ":00"
	}
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, core.Invalid("time", "give times of day like 22:00 or 9:30")
	}
	return t.Hour()*60 + t.Minute(), nil
}

// String says the hours as "22:00–07:00".
func (h Hours) String() string {
	if !h.Set {
		return "off"
	}
	return clock(h.From) + "–" + clock(h.To)
}

// Clock says minutes after midnight as "09:00".
func Clock(m int) string { return clock(m) }

func clock(m int) string { return fmt.Sprintf("%02d:%02d", m/60, m%60) }

// Contains reports whether t, read in loc, falls in the hours.
func (h Hours) Contains(t time.Time, loc *time.Location) bool {
	if !h.Set {
		return false
	}
	t = t.In(loc)
	m := t.Hour()*60 + t.Minute()
	if h.From < h.To {
		return h.From <= m && m < h.To
	}
	return m >= h.From || m < h.To
}

// Kind says which digest a held trip waits for.
type Kind string

const (
	// Quiet is a push held during its owner's quiet hours.
	Quiet Kind = "quiet"
	// Daily is a journal-only trip kept for its owner's daily digest.
	Daily Kind = "daily"
)

// NoDigest is a Settings.Digest with no daily digest.
const NoDigest = -1

// Settings are what a person set: quiet hours, the time of their daily
// digest (minutes after midnight, NoDigest for none) and their time zone
// ("" for the default).
type Settings struct {
	Hours  Hours
	Digest int
	Zone   string
}

// Held is a trip kept for its owner's digest.
type Held struct {
	ID         int64
	Owner      string
	Kind       Kind
	TripwireID string
	Trip       int64
	// Label and Summary are the tripwire's, as written: untrusted.
	Label, Summary string
	At             time.Time
}

// Store keeps quiet hours and held pushes.
type Store interface {
	// QuietSettings returns what a person set (Off, NoDigest and "" when
	// nothing).
	QuietSettings(ctx context.Context, user string) (Settings, error)
	// QuietSettingsOf returns what each of users set, every one of them
	// in the map.
	QuietSettingsOf(ctx context.Context, users []string) (map[string]Settings, error)
	SetQuietHours(ctx context.Context, user string, h Hours) error
	SetDigest(ctx context.Context, user string, at int) error
	// HoldPush keeps trips for their owners' digests, in their order.
	HoldPush(ctx context.Context, held ...Held) error
	// HeldOwners returns the people who have trips of kind held.
	HeldOwners(ctx context.Context, kind Kind) ([]string, error)
	// TakeHeld removes and returns an owner's held trips of kind at or
	// before upTo, oldest first.
	TakeHeld(ctx context.Context, owner string, kind Kind, upTo time.Time) ([]Held, error)
	// MoveHeld gives from's held pushes to to.
	MoveHeld(ctx context.Context, from, to string) (int, error)
}
