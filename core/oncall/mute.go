package oncall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// MuteTiming is a recurring maintenance window, as Alertmanager's time
// intervals are: on Weekdays (every day when empty), within Times, read
// in Location (UTC when empty), the alerts about Targets are held as a
// silence holds them, and those still open are posted when it ends.
type MuteTiming struct {
	Name string
	// Targets are what a silence names: agents, FleetTarget, sources, or
	// Alertmanager labels as name=value.
	Targets []string
	// Weekdays are day names ("monday") and ranges ("monday:friday").
	Weekdays []string
	Times    []TimeRange
	Location string
}

// TimeRange is a part of a day, "02:00" to "04:30" (EndTime up to
// "24:00"), the end not included.
type TimeRange struct {
	StartTime string
	EndTime   string
}

// MuteTimingBy is who a mute timing's silences are by, followed by its
// name.
const MuteTimingBy = "oncall.mute_timings "

var weekdays = map[string]time.Weekday{"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday,
	"wednesday": time.Wednesday, "thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday}

// check validates the mute timing at index i, naming its key.
func (m MuteTiming) check(i int) error {
	field := fmt.Sprintf("oncall.mute_timings[%d]", i)
	switch {
	case strings.TrimSpace(m.Name) == "":
		return core.Invalid(field+".name", "is empty: name the window, as its silences will say")
	case len(m.Targets) == 0:
		return core.Invalid(field+".targets", "is empty: name agents, `%s`, sources or Alertmanager labels (name=value)", FleetTarget)
	case len(m.Times) == 0:
		return core.Invalid(field+".times", "is empty: give start_time and end_time, such as 02:00 and 04:00")
	}
	for _, t := range m.Targets {
		if strings.TrimSpace(t) == "" || len(t) > MaxTarget {
			return core.Invalid(field+".targets", "%q: name something in at most %d characters", t, MaxTarget)
		}
	}
	if _, err := m.days(); err != nil {
		return core.Invalid(field+".weekdays", "%v", err)
	}
	for j, r := range m.Times {
		start, end, ok := r.minutes()
		if !ok || start >= end {
			return core.Invalid(fmt.Sprintf("%s.times[%d]", field, j), "needs start_time before end_time, each HH:MM (end_time up to 24:00), got %q to %q", r.StartTime, r.EndTime)
		}
	}
	if _, err := time.LoadLocation(m.Location); err != nil {
		return core.Invalid(field+".location", "%v", err)
	}
	return nil
}

// days are the weekdays the timing holds on; all of them when none are
// named.
func (m MuteTiming) days() (map[time.Weekday]bool, error) {
	out := map[time.Weekday]bool{}
	if len(m.Weekdays) == 0 {
		for _, d := range weekdays {
			out[d] = true
		}
		return out, nil
	}
	for _, w := range m.Weekdays {
		from, to, isRange := strings.Cut(strings.ToLower(strings.TrimSpace(w)), ":")
		if !isRange {
			to = from
		}
		a, okA := weekdays[from]
		b, okB := weekdays[to]
		if !okA || !okB {
			return nil, fmt.Errorf("%q is not a weekday or a range such as monday:friday", w)
		}
		for d := a; ; d = (d + 1) % 7 {
			out[d] = true
			if d == b {
				break
			}
		}
	}
	return out, nil
}

// minutes are the range's ends in minutes after midnight.
func (r TimeRange) minutes() (start, end int, ok bool) {
	parse := func(s string, max int) (int, bool) {
		var h, m int
		if n, err := fmt.Sscanf(s, "%d:%d", &h, &m); err != nil || n != 2 || len(s) != 5 || h < 0 || m < 0 || m > 59 || h*60+m > max {
			return 0, false
		}
		return h*60 + m, true
	}
	start, okS := parse(r.StartTime, 23*60+59)
	end, okE := parse(r.EndTime, 24*60)
	return start, end, okS && okE
}

// Window returns the window of the timing that holds at now, and whether
// one does.
func (m MuteTiming) Window(now time.Time) (start, end time.Time, ok bool) {
	loc, err := time.LoadLocation(m.Location)
	days, derr := m.days()
	if err != nil || derr != nil {
		return time.Time{}, time.Time{}, false
	}
	local := now.In(loc)
	if !days[local.Weekday()] {
		return time.Time{}, time.Time{}, false
	}
	midnight := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, loc)
	for _, r := range m.Times {
		from, to, valid := r.minutes()
		if !valid {
			continue
		}
		start, end = midnight.Add(time.Duration(from)*time.Minute), midnight.Add(time.Duration(to)*time.Minute)
		if !now.Before(start) && now.Before(end) {
			return start, end, true
		}
	}
	return time.Time{}, time.Time{}, false
}

// Mute opens the silences of the mute timings whose window holds now,
// one per target, each ending with its window, in a transaction of its
// own, and returns how many it opened. A window's silence is opened once
// by this process: ended early by hand (`!silence end`), it stays ended.
// It writes, so only the lease holder runs it.
func (s *Service) Mute(ctx context.Context) (int, error) {
	if len(s.cfg.MuteTimings) == 0 {
		return 0, nil
	}
	now := s.deps.Clock.Now()
	active, err := s.deps.Store.ActiveSilences(ctx)
	if err != nil {
		return 0, fmt.Errorf("mute timings: %w", err)
	}
	opened := 0
	var errs []error
	for _, m := range s.cfg.MuteTimings {
		_, end, ok := m.Window(now)
		if !ok {
			continue
		}
		for _, target := range m.Targets {
			key := fmt.Sprintf("%s\x00%s\x00%d", m.Name, target, end.Unix())
			if s.muted(key) || holdsAlready(active, MuteTimingBy+m.Name, target, end) {
				continue
			}
			sil := Silence{Target: target, Reason: "mute timing " + m.Name, By: MuteTimingBy + m.Name, RoomID: s.deps.Room,
				StartedAt: now, EndsAt: end}
			err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
				_, err := s.Silence(ctx, sil)
				return err
			})
			if err != nil {
				errs = append(errs, fmt.Errorf("mute timing %s on %s: %w", m.Name, target, err))
				continue
			}
			s.mute(key)
			opened++
		}
	}
	return opened, errors.Join(errs...)
}

// holdsAlready reports whether one of active is a mute timing's silence
// on target ending at end.
func holdsAlready(active []Silence, by, target string, end time.Time) bool {
	for _, sil := range active {
		if sil.By == by && sil.Target == target && sil.EndsAt.Equal(end) {
			return true
		}
	}
	return false
}

// muted reports whether this process opened the window's silence.
func (s *Service) muted(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened[key]
}

// mute remembers that this process opened the window's silence.
func (s *Service) mute(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.opened == nil {
		s.opened = map[string]bool{}
	}
	s.opened[key] = true
}
