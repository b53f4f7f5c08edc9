package fleet

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// Signal is what a script's ping says about its job, Healthchecks-style.
type Signal string

const (
	// SignalSuccess is a plain ping or heartbeat: the job did its work.
	SignalSuccess Signal = ""
	// SignalStart says the job began: its success is expected within the
	// agent's grace.
	SignalStart Signal = "start"
	// SignalFail says the job failed: the room is told once per failure
	// episode, which the next success ends.
	SignalFail Signal = "fail"
)

// kindFail is the kind of the incident a failure signal raises; failPrefix
// starts its ID and its alert's key.
const (
	kindFail   = "fail"
	failPrefix = "fail:"
)

// nextExpected is when the agent's next report is due after hb: its
// cadence and grace later, or after a start, its grace later (its cadence
// when it has none), the time the job may take.
func nextExpected(a AgentConfig, hb Heartbeat) time.Time {
	if hb.Signal == SignalStart {
		if a.Grace > 0 {
			return hb.ReceivedAt.Add(a.Grace)
		}
		return hb.ReceivedAt.Add(a.Cadence)
	}
	if a.schedule != nil {
		return a.schedule.Next(hb.ReceivedAt).Add(a.Grace)
	}
	return hb.ReceivedAt.Add(a.Cadence + a.Grace)
}

// Schedule says when an agent that runs on a calendar runs next.
type Schedule interface {
	// Next is the first run after t.
	Next(t time.Time) time.Time
}

// ScheduleParser reads an agent's schedule spec in its time zone; an
// error is an ErrInvalid naming the field after prefix
// (fleet.agents[2].schedule).
type ScheduleParser func(prefix, spec, zone string) (Schedule, error)

// zone is the time zone of the agent's schedule.
func (a AgentConfig) zone() string {
	if a.Schedule != "" && a.TimeZone == "" {
		return "UTC"
	}
	return a.TimeZone
}

// interval is how long a schedule waits between its next two runs after
// now, the cadence misses are counted in, at least MinCadence.
func interval(s Schedule, now time.Time) time.Duration {
	next := s.Next(now)
	return max(s.Next(next).Sub(next), MinCadence)
}

// failureEpisode tells the room about a failure signal, once for the
// failures that come until the next success, and resolves that alert at
// the success. st is the agent's state before b: a failure leaves its mode
// red, so only a report after a red one looks for an open failure.
func (f *Service) failureEpisode(ctx context.Context, st AgentState, b queuedBeat) error {
	hb := b.hb
	if hb.Signal == SignalStart || (hb.Signal == SignalSuccess && st.Mode != "red") {
		return nil
	}
	id, open, err := f.deps.Incidents.OpenIncident(ctx, kindFail, hb.Agent)
	switch {
	case err != nil:
		return err
	case hb.Signal == SignalFail && !open:
		key, err := f.failKey(ctx, hb)
		if err != nil {
			return err
		}
		return f.deps.Incidents.Raise(ctx, key, kindFail, hb.Agent, core.Notice{Key: key, RoomID: f.deps.Room,
			Kind: core.NoticeMessage, Body: failText(hb)})
	case hb.Signal == SignalSuccess && open:
		return f.deps.Incidents.Resolve(ctx, id, fmt.Sprintf("✅ **%s** succeeded again at %s.",
			core.EscapeMarkdown(hb.Agent), hb.ReceivedAt.UTC().Format("15:04 MST")))
	}
	return nil
}

// failKey names the incident and alert of a failure episode after the
// time it began, told apart from an episode that began and ended at the
// same instant.
func (f *Service) failKey(ctx context.Context, hb Heartbeat) (string, error) {
	base := fmt.Sprintf("%s%s:%d", failPrefix, hb.Agent, hb.ReceivedAt.UnixNano())
	for n := 1; ; n++ {
		key := base
		if n > 1 {
			key = fmt.Sprintf("%s.%d", base, n)
		}
		_, err := f.deps.Incidents.Incident(ctx, key)
		switch {
		case errors.Is(err, core.ErrNotFound):
			return key, nil
		case err != nil:
			return "", err
		}
	}
}

// failText is the alert of a failure signal.
func failText(hb Heartbeat) string {
	return fmt.Sprintf("❌ **%s** %s at %s. Further failures are not posted; its next success resolves this.",
		core.EscapeMarkdown(hb.Agent), failWhat(hb), hb.ReceivedAt.UTC().Format("15:04 MST"))
}

// failWhat says what a failure signal reported.
func failWhat(hb Heartbeat) string {
	if hb.ExitStatus != nil {
		return fmt.Sprintf("failed with exit status %d", *hb.ExitStatus)
	}
	return "reported a failure"
}
