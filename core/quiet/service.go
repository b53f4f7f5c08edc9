package quiet

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// DigestCap is how many held trips a digest lists; it counts the rest.
const DigestCap = 30

// Deps are what the quiet-hours service needs.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Zone is the time zone of people who set none (UTC when nil).
	Zone *time.Location
}

// Service holds pushes in quiet hours, gathers journal-only trips for
// daily digests, and delivers the digests.
type Service struct{ deps Deps }

var _ tripwire.Quiet = (*Service)(nil)

// NewService returns a quiet-hours service.
func NewService(deps Deps) *Service {
	if deps.Zone == nil {
		deps.Zone = time.UTC
	}
	return &Service{deps: deps}
}

// Settings returns what a person set and the time zone they are read in.
func (s *Service) Settings(ctx context.Context, user string) (Settings, *time.Location, error) {
	set, err := s.deps.Store.QuietSettings(ctx, user)
	if err != nil {
		return Settings{}, nil, err
	}
	return set, s.location(set), nil
}

// location is the time zone a person's settings are read in.
func (s *Service) location(set Settings) *time.Location {
	if l, err := time.LoadLocation(set.Zone); set.Zone != "" && err == nil {
		return l
	}
	return s.deps.Zone
}

// SetHours records a person's quiet hours (Off turns them off). Pushes
// held when they are turned off go out on the next sweep.
func (s *Service) SetHours(ctx context.Context, user string, h Hours) error {
	return s.deps.Store.SetQuietHours(ctx, user, h)
}

// SetDigest sets the time of a person's daily digest, in minutes after
// midnight (NoDigest turns it off; what it gathered goes out on the next
// sweep).
func (s *Service) SetDigest(ctx context.Context, user string, at int) error {
	return s.deps.Store.SetDigest(ctx, user, at)
}

// Keep holds the pushes of one evaluator pass whose owners are in their
// quiet hours at now, and keeps its journal-only trips for the daily
// digests of those who asked for one; it reports which pushes it held. It
// reads the owners' settings with one query and writes in ctx's
// transaction, the one that records the trips.
func (s *Service) Keep(ctx context.Context, trips []tripwire.Trip, now time.Time) ([]bool, error) {
	owners := make([]string, 0, len(trips))
	for _, t := range trips {
		owners = append(owners, t.Scope)
	}
	settings, err := s.deps.Store.QuietSettingsOf(ctx, owners)
	if err != nil {
		return nil, err
	}
	held := make([]bool, len(trips))
	var keep []Held
	for i, t := range trips {
		set := settings[t.Scope]
		switch {
		case t.Push && set.Hours.Contains(now, s.location(set)):
			held[i] = true
			keep = append(keep, heldTrip(Quiet, t))
		case !t.Push && set.Digest != NoDigest:
			keep = append(keep, heldTrip(Daily, t))
		}
	}
	return held, s.deps.Store.HoldPush(ctx, keep...)
}

func heldTrip(kind Kind, t tripwire.Trip) Held {
	ev := t.Event
	return Held{Owner: t.Scope, Kind: kind, TripwireID: ev.TripwireID, Trip: ev.Trip, Label: ev.Label, Summary: ev.Summary, At: ev.Timestamp}
}

// Adopt gives a linked puppet's held trips to its account (its settings
// move with its time zone, in the person row).
func (s *Service) Adopt(ctx context.Context, from, to string) (int, error) {
	return s.deps.Store.MoveHeld(ctx, from, to)
}

// Sweep delivers, in one transaction with their removal, one digest to
// each person whose quiet hours are over and who has pushes held, and one
// to each person whose daily digest time has come with the journal-only
// trips before it; it returns how many it delivered.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n := 0
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		now := s.deps.Clock.Now()
		for _, kind := range []Kind{Quiet, Daily} {
			owners, err := s.deps.Store.HeldOwners(ctx, kind)
			if err != nil {
				return err
			}
			for _, owner := range owners {
				set, loc, err := s.Settings(ctx, owner)
				if err != nil {
					return err
				}
				upTo := now
				switch {
				case kind == Quiet && set.Hours.Contains(now, loc):
					continue
				case kind == Daily && set.Digest != NoDigest:
					upTo = lastAt(set.Digest, now, loc)
				}
				held, err := s.deps.Store.TakeHeld(ctx, owner, kind, upTo)
				if err != nil {
					return err
				}
				if len(held) == 0 {
					continue
				}
				if err := s.deps.Outbox.Enqueue(ctx, digest(owner, kind, held, set, loc)); err != nil {
					return fmt.Errorf("deliver the digest of %s: %w", owner, err)
				}
				n++
			}
		}
		return nil
	})
	return n, err
}

// lastAt is the latest time at or before now that the clock in loc showed
// at minutes after midnight.
func lastAt(minutes int, now time.Time, loc *time.Location) time.Time {
	local := now.In(loc)
	y, m, d := local.Date()
	at := time.Date(y, m, d, minutes/60, minutes%60, 0, 0, loc)
	if at.After(now) {
		at = time.Date(y, m, d-1, minutes/60, minutes%60, 0, 0, loc)
	}
	return at
}

// digest is the one message that brings a person what was held for them;
// its key names the last trip it carries, so it is sent once.
func digest(owner string, kind Kind, held []Held, set Settings, loc *time.Location) core.Notice {
	var b strings.Builder
	trips := core.Plural(len(held), "trip", "trips")
	switch {
	case kind == Daily:
		fmt.Fprintf(&b, "☀️ **Your daily digest:** %s only journaled since the last one\n\n", trips)
	case set.Hours.Set:
		fmt.Fprintf(&b, "🌙 **While your quiet hours held them (%s):** %s\n\n", set.Hours, trips)
	default:
		fmt.Fprintf(&b, "🌙 **While your quiet hours held them:** %s\n\n", trips)
	}
	for _, p := range held[:min(len(held), DigestCap)] {
		fmt.Fprintf(&b, "- %s **%s**: %s · %s trip %d\n", p.At.In(loc).Format("Mon 15:04"), core.EscapeMarkdown(p.Label),
			core.EscapeMarkdown(core.Truncate(p.Summary, 300)), core.CodeSpan(p.TripwireID), p.Trip)
	}
	if more := len(held) - DigestCap; more > 0 {
		fmt.Fprintf(&b, "- and %d more, all in your tripwire journal\n", more)
	}
	return core.Notice{Key: fmt.Sprintf("%s:%s:%d", kind, owner, held[len(held)-1].ID), ToUser: owner, Kind: core.NoticeMessage,
		Body: b.String(), Mentions: []string{owner}}
}
