package tripwire

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/jarvis-hmi/jarvis/core"
)

// A trip of a shared tripwire (the "self" scope, pushed to the room) is
// an on-call incident: its notice carries 👀, and the tripwire's reset
// resolves it, editing the notice and saying all clear in the reply that
// tells the reset. A person's own trips, in their direct room, are not.

// send enqueues the notices of a tick, as many as it can with one call:
// the room's trip notices are raised as incidents, and their resets'
// replies resolve them.
func (s *Service) send(ctx context.Context, notices []core.Notice) error {
	rest := notices[:0:0]
	for _, n := range notices {
		if s.deps.Incidents != nil && n.RoomID != "" && n.Kind == core.NoticeMessage {
			if tripwire, ok := tripOf(n.Key); ok && n.Target == "" {
				if err := s.deps.Incidents.Raise(ctx, n.Key, "trip", tripwire, n); err != nil {
					return err
				}
				continue
			}
			if trip, ok := strings.CutSuffix(n.Key, clearedSuffix); ok && isTrip(trip) {
				// The all-clear in the trip's thread says what the reply would.
				err := s.deps.Incidents.Resolve(ctx, trip, n.Body)
				if err == nil {
					continue
				}
				if !errors.Is(err, core.ErrNotFound) { // else: a trip from before incidents were kept
					return err
				}
			}
		}
		rest = append(rest, n)
	}
	if err := s.deps.Outbox.Enqueue(ctx, rest...); err != nil && !errors.Is(err, core.ErrDuplicate) {
		return err
	}
	return nil
}

// clearedSuffix follows a trip notice's key in the key of its reset's
// reply.
const clearedSuffix = ":cleared"

// tripOf returns the tripwire whose trip notice has key,
// trip:<tripwire>:<trip>.
func tripOf(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "trip:")
	id, seq, _ := strings.Cut(rest, ":")
	_, err := strconv.ParseInt(seq, 10, 64)
	return id, ok && id != "" && err == nil
}

func isTrip(key string) bool {
	_, ok := tripOf(key)
	return ok
}
