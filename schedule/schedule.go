// Package schedule reads an agent's cron schedule ("0 3 * * *", or a
// descriptor such as "@daily" or "@every 6h") in its time zone, for the
// fleet, which is told when the agent is next expected.
package schedule

import (
	"time"

	"github.com/robfig/cron/v3"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// Parse reads spec, a standard five-field cron schedule or a descriptor,
// in the IANA time zone zone (UTC when empty). An error is an
// ErrInvalid naming the field of spec or of zone, after prefix
// (fleet.agents[2]).
func Parse(prefix, spec, zone string) (fleet.Schedule, error) {
	loc := time.UTC
	if zone != "" {
		var err error
		if loc, err = time.LoadLocation(zone); err != nil {
			return nil, core.Invalid(prefix+".time_zone", "must be an IANA time zone such as Europe/Berlin, not %q", zone)
		}
	}
	s, err := cron.ParseStandard(spec)
	if err != nil {
		return nil, core.Invalid(prefix+".schedule", "must be a cron schedule such as \"0 3 * * *\" or \"@every 6h\" (%v), not %q", err, spec)
	}
	return inZone{s: s, loc: loc}, nil
}

// inZone is a cron schedule read in its time zone.
type inZone struct {
	s   cron.Schedule
	loc *time.Location
}

// Next is the first time the schedule runs after t.
func (z inZone) Next(t time.Time) time.Time { return z.s.Next(t.In(z.loc)) }
