package watchdog

import (
	"context"
	"time"
)

// Boot is one start of Jarvis.
type Boot struct {
	// ID is random per start.
	ID      string
	Host    string
	Version string
	// StartedAt is when it started; StoppedAt when it stopped cleanly,
	// zero while it runs or when it never did (it crashed, was killed).
	StartedAt time.Time
	StoppedAt time.Time
}

// BootStore keeps Jarvis's boots.
type BootStore interface {
	// RecordBoot stores a start, keeping the newest KeepBoots.
	RecordBoot(ctx context.Context, b Boot) error
	// MarkStopped records a boot's clean stop.
	MarkStopped(ctx context.Context, id string, at time.Time) error
	// BootsSince returns the boots started at or after since, newest
	// first.
	BootsSince(ctx context.Context, since time.Time) ([]Boot, error)
}

// KeepBoots is how many boots the store keeps.
const KeepBoots = 1000

// CrashLoopConfig says when Jarvis's own restarts are a crash loop.
type CrashLoopConfig struct {
	// Restarts is how many boots that ended without a clean stop, within
	// Window before the current one, make a crash loop; 0 looks for none.
	Restarts int
	Window   time.Duration
}

// Crashes returns the boots before current, within the window before it,
// that ended without a clean stop, newest first; boots is newest first.
func Crashes(boots []Boot, current Boot, window time.Duration) []Boot {
	var out []Boot
	for _, b := range boots {
		if b.ID == current.ID || b.StartedAt.After(current.StartedAt) || current.StartedAt.Sub(b.StartedAt) > window {
			continue
		}
		if b.StoppedAt.IsZero() {
			out = append(out, b)
		}
	}
	return out
}
