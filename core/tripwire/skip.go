package tripwire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Skip reasons the skip log records besides cooldown and source errors.
const (
	// SkipQuarantine: the pass's source error was one too many, and
	// stopped the tripwire for review.
	SkipQuarantine SkipReason = "quarantine"
	// SkipRateLimit: its owner's fetch budget had no time left for a
	// network source (tripwires.fetch_budget).
	SkipRateLimit SkipReason = "rate-limit"
)

// SkipLogReasons are the skips the skip log records, in the order a
// person reads them. A tripwire that is already tripped, or was armed
// after a pass read its sources, is not skipped in that sense: it is
// watched as it should be.
var SkipLogReasons = []SkipReason{SkipCooldown, SkipSourceError, SkipQuarantine, SkipRateLimit}

// Skip is one evaluation the evaluator skipped: when, why, and what it
// observed, which is nothing (the observation of a skipped evaluation is
// null: a quiet tripwire whose log shows only skips is not watching).
type Skip struct {
	TripwireID string     `json:"tripwire_id"`
	Timestamp  time.Time  `json:"timestamp"`
	Reason     SkipReason `json:"skip_reason"`
	// ObservedValue is always nil: a skipped evaluation observed nothing.
	ObservedValue any `json:"observed_value"`
	// Detail is the source error for source-error, quarantine and
	// rate-limit skips; empty for cooldown.
	Detail string `json:"detail,omitempty"`
}

// SkipLogConfig bounds the skip log.
type SkipLogConfig struct {
	// PerTripwire is how many skips each tripwire keeps, the newest.
	PerTripwire int
}

// trimEvery is how many skips a tripwire logs between two trims of its
// log: a tenth of what it keeps, so a tripwire's log holds at most
// PerTripwire plus that many rows.
func (c SkipLogConfig) trimEvery() int { return max(1, c.PerTripwire/10) }

// SkipSummary is what a tripwire's skip log says since a time: how many
// evaluations were skipped for each reason, and the latest skips.
type SkipSummary struct {
	Since  time.Time          `json:"since"`
	Counts map[SkipReason]int `json:"counts"`
	Total  int                `json:"total"`
	// Latest are the newest skips since Since, oldest first.
	Latest []Skip `json:"latest"`
	// Truncated is true when the log no longer holds every skip since
	// Since: the counts are then at least what they say.
	Truncated bool `json:"truncated"`
}

// logSkip reports what reason a pass's skip is logged under, and whether
// it is logged at all.
func logSkip(ev evaluation) (SkipReason, bool) {
	switch ev.skip {
	case SkipCooldown:
		return SkipCooldown, true
	case SkipSourceError:
		if errors.Is(ev.err, errFetchBudget) {
			return SkipRateLimit, true
		}
		return SkipSourceError, true
	}
	return "", false
}

// addSkip logs a skip of the entry's tripwire in the pass's writes, and
// asks for its log to be trimmed when it has grown by trimEvery since the
// last trim (at once on the first skip after Jarvis started watching it).
func (s *Service) addSkip(w *TickWrites, e *evalEntry, reason SkipReason, ev evaluation, now time.Time) {
	sk := Skip{TripwireID: e.state.ID, Timestamp: now, Reason: reason}
	if ev.err != nil {
		sk.Detail = core.Truncate(ev.err.Error(), maxSkipDetail)
	}
	w.Skips = append(w.Skips, sk)
	if e.skipsUntilTrim--; e.skipsUntilTrim < 0 {
		w.TrimSkips = append(w.TrimSkips, e.state.ID)
		e.skipsUntilTrim = s.cfg.SkipLog.trimEvery()
	}
}

// maxSkipDetail bounds the error text a skip keeps.
const maxSkipDetail = 300

// Skips reads one of scope's tripwires' skip log since a time (midnight
// UTC today when zero): the count of each reason, and up to limit of the
// latest skips (at most tripwires.skip_log.per_tripwire).
func (s *Service) Skips(ctx context.Context, scope, id string, since time.Time, limit int) (SkipSummary, error) {
	if err := CheckScope(scope); err != nil {
		return SkipSummary{}, err
	}
	if since.IsZero() {
		since = s.deps.Clock.Now().UTC().Truncate(24 * time.Hour)
	}
	if limit <= 0 || limit > s.cfg.SkipLog.PerTripwire {
		limit = s.cfg.SkipLog.PerTripwire
	}
	if _, err := s.deps.Store.Tripwire(ctx, scope, id); err != nil {
		return SkipSummary{}, fmt.Errorf("tripwire %q skip log: %w", id, err)
	}
	read, err := s.deps.Store.SkipLog(ctx, id, since, limit)
	if err != nil {
		return SkipSummary{}, fmt.Errorf("tripwire %q skip log: %w", id, err)
	}
	sum := SkipSummary{Since: since, Counts: map[SkipReason]int{}, Latest: read.Latest,
		Truncated: read.Kept >= s.cfg.SkipLog.PerTripwire && read.Oldest.After(since)}
	for r, n := range read.Counts {
		sum.Counts[r] = n
		sum.Total += n
	}
	if sum.Latest == nil {
		sum.Latest = []Skip{}
	}
	return sum, nil
}

// SkipLogRead is what the store reads of a tripwire's skip log.
type SkipLogRead struct {
	// Counts are the skips since the time asked, by reason.
	Counts map[SkipReason]int
	// Latest are up to the limit asked of them, oldest first.
	Latest []Skip
	// Kept is how many skips the log holds for the tripwire in all, and
	// Oldest when the oldest of them was.
	Kept   int
	Oldest time.Time
}
