package tripwire

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SnoozeReaction is seeded on every trip pushed to a person; their tap
// (or a reply `snooze 4h`) snoozes the tripwire's pushes.
const SnoozeReaction = "💤"

// Snooze puts off the pushes of one of scope's tripwires until until: its
// trips before then are journaled, not pushed. Another scope's tripwire
// is ErrNotFound: only its owner snoozes it.
func (s *Service) Snooze(ctx context.Context, scope, id string, until time.Time) error {
	if err := CheckScope(scope); err != nil {
		return err
	}
	if err := s.deps.Store.SnoozeTripwire(ctx, scope, id, until); err != nil {
		return fmt.Errorf("snooze tripwire %q: %w", id, err)
	}
	return nil
}

// TripOf names the tripwire a trip push is about, from the push's key
// ("trip:tw_x:17"); false for any other notice of a tripwire.
func TripOf(noticeKey string) (string, bool) {
	rest, ok := strings.CutPrefix(noticeKey, "trip:")
	id, seq, cut := strings.Cut(rest, ":")
	if _, err := strconv.ParseInt(seq, 10, 64); !ok || !cut || err != nil {
		return "", false
	}
	return id, true
}
