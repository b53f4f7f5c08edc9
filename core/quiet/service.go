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

// Service holds pushes in quiet hours and delivers the digests.
type Service struct{ deps Deps }

var _ tripwire.Quiet = (*Service)(nil)

// NewService returns a quiet-hours service.
func NewService(deps Deps) *Service {
	if deps.Zone == nil {
		deps.Zone = time.UTC
	}
	return &Service{deps: deps}
}

// Hours returns a person's quiet hours and the time zone they are read in.
func (s *Service) Hours(ctx context.Context, user string) (Hours, *time.Location, error) {
	h, zone, err := s.deps.Store.QuietHours(ctx, user)
	if err != nil {
		return Off, nil, err
	}
	loc := s.deps.Zone
	if l, err := time.LoadLocation(zone); zone != "" && err == nil {
		loc = l
	}
	return h, loc, nil
}

// Set records a person's quiet hours (Off turns them off). Pushes held
// when they are turned off go out on the next sweep.
func (s *Service) Set(ctx context.Context, user string, h Hours) error {
	return s.deps.Store.SetQuietHours(ctx, user, h)
}

// Hold keeps a trip for user's digest instead of pushing it when now is
// in their quiet hours, and reports whether it did. It writes in ctx's
// transaction, the one that records the trip.
func (s *Service) Hold(ctx context.Context, user string, ev tripwire.TripEvent, now time.Time) (bool, error) {
	h, loc, err := s.Hours(ctx, user)
	if err != nil || !h.Contains(now, loc) {
		return false, err
	}
	err = s.deps.Store.HoldPush(ctx, Held{Owner: user, TripwireID: ev.TripwireID, Trip: ev.Trip, Label: ev.Label, Summary: ev.Summary, At: ev.Timestamp})
	return err == nil, err
}

// Adopt gives a linked puppet's held pushes to its account (its quiet
// hours move with its time zone, in the person row).
func (s *Service) Adopt(ctx context.Context, from, to string) (int, error) {
	return s.deps.Store.MoveHeld(ctx, from, to)
}

// Sweep delivers one digest to each person whose quiet hours are over
// and who has pushes held, in one transaction with their removal, and
// returns how many it delivered.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	n := 0
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		now := s.deps.Clock.Now()
		owners, err := s.deps.Store.HeldOwners(ctx)
		if err != nil {
			return err
		}
		for _, owner := range owners {
			h, loc, err := s.Hours(ctx, owner)
			if err != nil {
				return err
			}
			if h.Contains(now, loc) {
				continue
			}
			held, err := s.deps.Store.TakeHeld(ctx, owner)
			if err != nil || len(held) == 0 {
				return err
			}
			if err := s.deps.Outbox.Enqueue(ctx, digest(owner, held, h, loc)); err != nil {
				return fmt.Errorf("deliver the digest of %s: %w", owner, err)
			}
			n++
		}
		return nil
	})
	return n, err
}

// digest is the one message that brings a person what their quiet hours
// held; its key names the last push it carries, so it is sent once.
func digest(owner string, held []Held, h Hours, loc *time.Location) core.Notice {
	var b strings.Builder
	hours := ""
	if h.Set {
		hours = " (" + h.String() + ")"
	}
	fmt.Fprintf(&b, "🌙 **While your quiet hours held them%s:** %s\n\n", hours, core.Plural(len(held), "trip", "trips"))
	for _, p := range held[:min(len(held), DigestCap)] {
		fmt.Fprintf(&b, "- %s **%s**: %s · %s trip %d\n", p.At.In(loc).Format("Mon 15:04"), core.EscapeMarkdown(p.Label),
			core.EscapeMarkdown(core.Truncate(p.Summary, 300)), core.CodeSpan(p.TripwireID), p.Trip)
	}
	if more := len(held) - DigestCap; more > 0 {
		fmt.Fprintf(&b, "- and %d more, all in your tripwire journal\n", more)
	}
	return core.Notice{Key: fmt.Sprintf("quiet:%s:%d", owner, held[len(held)-1].ID), ToUser: owner, Kind: core.NoticeMessage,
		Body: b.String(), Mentions: []string{owner}}
}
