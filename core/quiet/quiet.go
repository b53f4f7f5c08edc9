// Package quiet holds a person's trip pushes during their quiet hours and
// delivers them as one digest when the hours end.
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

// parseClock reads "22:00", "7:30" or "22" as minutes after midnight.
func parseClock(s string) (int, error) {
	if !strings.Contains(s, ":") {
		s += ":00"
	}
	t, err := time.Parse("15:04", s)
	if err != nil {
		return 0, core.Invalid("hours", "%q is not a time of day like 22:00", s)
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

// Held is a trip push kept for its owner's digest.
type Held struct {
	ID         int64
	Owner      string
	TripwireID string
	Trip       int64
	// Label and Summary are the tripwire's, as written: untrusted.
	Label, Summary string
	At             time.Time
}

// Store keeps quiet hours and held pushes.
type Store interface {
	// QuietHours returns a person's quiet hours and time zone ("" when
	// they set none).
	QuietHours(ctx context.Context, user string) (Hours, string, error)
	SetQuietHours(ctx context.Context, user string, h Hours) error
	HoldPush(ctx context.Context, h Held) error
	// HeldOwners returns the people who have pushes held.
	HeldOwners(ctx context.Context) ([]string, error)
	// TakeHeld removes and returns an owner's held pushes, oldest first.
	TakeHeld(ctx context.Context, owner string) ([]Held, error)
	// MoveHeld gives from's held pushes to to.
	MoveHeld(ctx context.Context, from, to string) (int, error)
}
