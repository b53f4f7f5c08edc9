package oncall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
)

// Bounds of a silence.
const (
	// MaxSilence is the longest a silence holds for a time.
	MaxSilence = 7 * 24 * time.Hour
	// MaxUntilResolved is the longest a silence waits for what it
	// silences to resolve: nothing is silenced for good.
	MaxUntilResolved = 24 * time.Hour
	// MaxReason bounds what --because says, in characters.
	MaxReason = 200
	// MaxTarget bounds what a silence names.
	MaxTarget = 100
	// heldLines is how many of the things it held a silence lists when it
	// ends; it counts the rest.
	heldLines = 10
	// FleetTarget silences every fleet alert.
	FleetTarget = "fleet"
)

// Silence is a maintenance window: it holds the alerts about Target (an
// agent, or FleetTarget for them all) and the trips of tripwires that read
// it (an agent, a source kind or a source, "agent.status[EVE]") from the
// room and pushes; they are journaled instead.
type Silence struct {
	ID int64
	// Scope is "" for an admin's silence, which holds alerts and
	// everyone's trips, or the person whose own trips alone it holds.
	Scope  string
	Target string
	// Reason is what --because said, as written: untrusted.
	Reason string
	By     string
	// RoomID is where it was set, and where its end is told.
	RoomID    string
	StartedAt time.Time
	// EndsAt is when it ends by itself; with UntilResolved, the bound on
	// waiting for what it silences to resolve.
	EndsAt        time.Time
	UntilResolved bool
	EndedAt       time.Time
	HeldAlerts    int
	HeldTrips     int
	// Held are the first things it held, one line each, Markdown with
	// what others wrote escaped.
	Held []string
}

// SilenceStore keeps silences.
type SilenceStore interface {
	// AddSilence writes a new silence and returns it with its ID.
	AddSilence(ctx context.Context, s Silence) (Silence, error)
	// Silence returns one silence, core.ErrNotFound when none has the ID.
	Silence(ctx context.Context, id int64) (Silence, error)
	// ActiveSilences lists the silences not ended, oldest first.
	ActiveSilences(ctx context.Context) ([]Silence, error)
	// HoldInSilence counts one alert (or trip) more in a silence, keeping
	// what it was (one line of Markdown) among the first keep it lists.
	HoldInSilence(ctx context.Context, id int64, alert bool, what string, keep int) error
	// EndSilence ends a silence not ended yet and reports whether it did.
	EndSilence(ctx context.Context, id int64, at time.Time) (bool, error)
}

// CheckSilence refuses a silence with nothing to silence, a reason too
// long, or an end out of bounds.
func CheckSilence(s Silence) error {
	span := s.EndsAt.Sub(s.StartedAt)
	switch {
	case strings.TrimSpace(s.Target) == "" || len(s.Target) > MaxTarget:
		return core.Invalid("target", "name an agent, a source or `%s`, in at most %d characters", FleetTarget, MaxTarget)
	case len([]rune(s.Reason)) > MaxReason:
		return core.Invalid("because", "say why in at most %d characters", MaxReason)
	case span <= 0:
		return core.Invalid("until", "that time has passed")
	case s.UntilResolved && span > MaxUntilResolved:
		return core.Invalid("until", "a silence waits %s at most for what it silences to resolve", core.HumanDuration(MaxUntilResolved))
	case span > MaxSilence:
		return core.Invalid("until", "a silence lasts %s at most", core.HumanDuration(MaxSilence))
	}
	return nil
}

// Silence starts a silence, at sil.StartedAt if set (the moment its end
// was read against, so that "for 1m" lasts 1m in its end's words), else
// now.
func (s *Service) Silence(ctx context.Context, sil Silence) (Silence, error) {
	if sil.StartedAt.IsZero() {
		sil.StartedAt = s.deps.Clock.Now()
	}
	if err := CheckSilence(sil); err != nil {
		return Silence{}, err
	}
	return s.deps.Store.AddSilence(ctx, sil)
}

// SilenceAnnounced starts a silence set from outside the room (a deploy
// script over the API) and tells the room, in one transaction: who set
// it, on what, until when and why.
func (s *Service) SilenceAnnounced(ctx context.Context, sil Silence) (Silence, error) {
	err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		var err error
		if sil, err = s.Silence(ctx, sil); err != nil {
			return err
		}
		ends := "until " + UntilText(sil.EndsAt, sil.StartedAt, time.UTC)
		if sil.UntilResolved {
			ends = "until it resolves, " + ends + " at the latest"
		}
		body := fmt.Sprintf("🔕 **Silence %d on %s** %s, set by %s", sil.ID, core.EscapeMarkdown(sil.Target), ends, core.EscapeMarkdown(sil.By))
		if sil.Reason != "" {
			body += fmt.Sprintf(" because “%s”", core.EscapeMarkdown(sil.Reason))
		}
		return s.enqueue(ctx, core.Notice{Key: fmt.Sprintf("silence:%d:set", sil.ID), RoomID: sil.RoomID, Kind: core.NoticeMessage,
			Body: body + ". What it holds is journaled; its end says what it held."})
	})
	return sil, err
}

// EndSilenceNow is EndSilence in a transaction of its own, for a caller
// outside the room's; a silence of one person's own is not ended here
// (core.ErrNotFound), nor one ended already (core.ErrGone).
func (s *Service) EndSilenceNow(ctx context.Context, id int64, why string) error {
	return s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
		sil, err := s.deps.Store.Silence(ctx, id)
		switch {
		case err != nil:
			return err
		case sil.Scope != "":
			return fmt.Errorf("silence %d is a person's own: %w", id, core.ErrNotFound)
		}
		ended, err := s.EndSilence(ctx, id, why)
		if err == nil && !ended {
			err = fmt.Errorf("silence %d ended at %s: %w", id, stamp(sil.EndedAt), core.ErrGone)
		}
		return err
	})
}

// Silences lists the silences that hold now.
func (s *Service) Silences(ctx context.Context) ([]Silence, error) {
	return s.deps.Store.ActiveSilences(ctx)
}

// SilenceByID returns one silence.
func (s *Service) SilenceByID(ctx context.Context, id int64) (Silence, error) {
	return s.deps.Store.Silence(ctx, id)
}

// EndSilence ends a silence now, telling its room what it held; why says
// how it ended ("ended by @bob:x", Markdown, untrusted parts escaped).
// The alerts held that are still open, and that no other silence holds,
// are posted after it, each as it would have been. It reports whether it
// ended the silence (false: it had ended).
func (s *Service) EndSilence(ctx context.Context, id int64, why string) (bool, error) {
	ok, err := s.deps.Store.EndSilence(ctx, id, s.deps.Clock.Now())
	if err != nil || !ok {
		return false, err
	}
	sil, err := s.deps.Store.Silence(ctx, id)
	if err != nil {
		return false, err
	}
	var due []Incident
	if sil.Scope == "" {
		if due, err = s.unheld(ctx); err != nil {
			return false, err
		}
	}
	// A mute timing's window that held nothing ends without a word: it
	// comes back every day.
	quiet := strings.HasPrefix(sil.By, MuteTimingBy) && sil.HeldAlerts+sil.HeldTrips == 0 && len(due) == 0
	if !quiet {
		if err := s.enqueue(ctx, silenceEnded(sil, why, len(due))); err != nil {
			return false, err
		}
	}
	now := s.deps.Clock.Now()
	for _, inc := range due {
		n := core.Notice{Key: inc.HeldKey, RoomID: inc.RoomID, Kind: core.NoticeMessage, Mentions: inc.HeldMentions}
		inc.NoticeKey, inc.EscalatedAt = n.Key, now
		if err := s.post(ctx, inc, n); err != nil {
			return false, fmt.Errorf("post the alert of incident %s: %w", inc.ID, err)
		}
	}
	return true, nil
}

// unheld lists the open incidents whose alert a silence held and no
// silence holds now.
func (s *Service) unheld(ctx context.Context) ([]Incident, error) {
	held, err := s.deps.Store.HeldIncidents(ctx)
	if err != nil || len(held) == 0 {
		return nil, err
	}
	active, err := s.deps.Store.ActiveSilences(ctx)
	if err != nil {
		return nil, err
	}
	now := s.deps.Clock.Now()
	var out []Incident
	for _, inc := range held {
		if _, ok := holding(active, now, "", alertTargets(inc.Kind, inc.Subject)); !ok {
			out = append(out, inc)
		}
	}
	return out, nil
}

// EndSilences ends the silences whose time is up, each in a transaction
// of its own, and returns how many. It writes, so only the lease holder
// runs it.
func (s *Service) EndSilences(ctx context.Context) (int, error) {
	active, err := s.deps.Store.ActiveSilences(ctx)
	if err != nil {
		return 0, fmt.Errorf("end silences: %w", err)
	}
	now := s.deps.Clock.Now()
	ended := 0
	var errs []error
	for _, sil := range active {
		if now.Before(sil.EndsAt) {
			continue
		}
		why := "its " + core.HumanDuration(sil.EndsAt.Sub(sil.StartedAt)) + " are up"
		if sil.UntilResolved {
			why = "what it silenced did not resolve within " + core.HumanDuration(MaxUntilResolved)
		}
		err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			ok, err := s.EndSilence(ctx, sil.ID, why)
			if ok {
				ended++
			}
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("end silence %d: %w", sil.ID, err))
		}
	}
	return ended, errors.Join(errs...)
}

// holding returns the first of active that holds, at now, what scope's
// notice about any of subjects would say, and whether there is one: an
// admin's for anyone, a person's own for their trips (scope "": the
// room's alerts, which only an admin's holds).
func holding(active []Silence, now time.Time, scope string, subjects []string) (Silence, bool) {
	for _, sil := range active {
		if sil.EndedAt.IsZero() && now.Before(sil.EndsAt) && (sil.Scope == "" || sil.Scope == scope) && sil.matches(subjects) {
			return sil, true
		}
	}
	return Silence{}, false
}

// matches reports whether the silence names any of subjects.
func (sil Silence) matches(subjects []string) bool {
	for _, sub := range subjects {
		if strings.EqualFold(sil.Target, sub) {
			return true
		}
	}
	return false
}

// holdAlert keeps an alert that targets name (its subject, the fleet, its
// labels) from the room when a workspace silence holds it, and reports
// whether it did.
func (s *Service) holdAlert(ctx context.Context, targets []string, body string) (bool, error) {
	active, err := s.deps.Store.ActiveSilences(ctx)
	if err != nil {
		return false, err
	}
	sil, ok := holding(active, s.deps.Clock.Now(), "", targets)
	if !ok {
		return false, nil
	}
	line, _, _ := strings.Cut(strings.TrimSpace(body), "\n")
	return true, s.deps.Store.HoldInSilence(ctx, sil.ID, true, line, heldLines)
}

// alertTargets are the names a silence that holds an alert of kind about
// subject gives: the subject; for a fleet alert the fleet, and the label
// an Alertmanager alert about the agent would carry ("agent=EVE"), so that
// one silence holds both.
func alertTargets(kind, subject string) []string {
	if notFleet[kind] {
		return []string{subject}
	}
	return []string{subject, FleetTarget, AgentLabel + "=" + subject}
}

// AgentLabel is the Alertmanager label that names an agent of the fleet:
// a silence on agent=EVE holds EVE's alerts and Alertmanager's about it.
const AgentLabel = "agent"

// notFleet are the kinds of incident that are no fleet alert, which a
// fleet-wide silence does not hold: trips of shared tripwires, the wake
// router's alerts and Alertmanager's alert groups.
var notFleet = map[string]bool{"trip": true, "wake": true, "alertmanager": true}

// silencing is what the silences that held at the start of an evaluator
// pass hold.
type silencing struct {
	s      *Service
	active []Silence
}

var _ tripwire.Silences = (*Service)(nil)

// Silencing reads the silences that hold now, for one evaluator pass;
// nil when none does.
func (s *Service) Silencing(ctx context.Context) (tripwire.Silencing, error) {
	active, err := s.deps.Store.ActiveSilences(ctx)
	if err != nil || len(active) == 0 {
		return nil, err
	}
	return &silencing{s: s, active: active}, nil
}

// HoldTrip keeps a trip of one of scope's tripwires, which reads sources,
// from being pushed when a silence holds one of them, and reports whether
// it did. It writes in ctx's transaction, the one that records the trip.
func (h *silencing) HoldTrip(ctx context.Context, scope string, sources []core.SourceRef, label string) (bool, error) {
	sil, ok := holding(h.active, h.s.deps.Clock.Now(), scope, sourceSubjects(sources))
	if !ok {
		return false, nil
	}
	return true, h.s.deps.Store.HoldInSilence(ctx, sil.ID, false, "🔔 "+core.EscapeMarkdown(label), heldLines)
}

// Cleared ends the silences held until a tripwire of scope reading
// sources resets, in ctx's transaction.
func (h *silencing) Cleared(ctx context.Context, scope string, sources []core.SourceRef) error {
	return h.s.endResolved(ctx, h.active, scope, sourceSubjects(sources), "the tripwire reading it reset")
}

// resolved ends the silences held until what they silence resolves that
// name any of subjects.
func (s *Service) resolved(ctx context.Context, scope string, subjects []string, why string) error {
	active, err := s.deps.Store.ActiveSilences(ctx)
	if err != nil {
		return err
	}
	return s.endResolved(ctx, active, scope, subjects, why)
}

// endResolved ends those of active held until what they silence
// resolves that name any of subjects, marking them ended in active.
func (s *Service) endResolved(ctx context.Context, active []Silence, scope string, subjects []string, why string) error {
	for i, sil := range active {
		if sil.UntilResolved && sil.EndedAt.IsZero() && (sil.Scope == "" || sil.Scope == scope) && sil.matches(subjects) {
			if _, err := s.EndSilence(ctx, sil.ID, why); err != nil {
				return err
			}
			active[i].EndedAt = s.deps.Clock.Now()
		}
	}
	return nil
}

// Names reports whether target names one of sources, as a silence's
// target would.
func Names(target string, sources []core.SourceRef) bool {
	return Silence{Target: target}.matches(sourceSubjects(sources))
}

// sourceSubjects are the names a silence may give sources by: each
// source ("agent.status[EVE]"), its kind and its parameter (an agent).
func sourceSubjects(sources []core.SourceRef) []string {
	var out []string
	for _, src := range sources {
		out = append(out, src.String(), src.Kind)
		if src.Param != "" {
			out = append(out, src.Param)
		}
	}
	return out
}

// silenceEnded tells the silence's room that it ended, why, what it held,
// and how many of the alerts it held are still open, posted after it.
func silenceEnded(sil Silence, why string, open int) core.Notice {
	var b strings.Builder
	fmt.Fprintf(&b, "🔔 **Silence %d on %s ended**: %s. ", sil.ID, core.EscapeMarkdown(sil.Target), why)
	if sil.HeldAlerts+sil.HeldTrips == 0 {
		b.WriteString("It held nothing.")
	} else {
		fmt.Fprintf(&b, "It held %s and %s", core.Plural(sil.HeldAlerts, "alert", "alerts"), core.Plural(sil.HeldTrips, "trip", "trips"))
		if sil.HeldTrips > 0 {
			b.WriteString(" (all in the journals)")
		}
		b.WriteString(":\n")
		for _, l := range sil.Held {
			fmt.Fprintf(&b, "\n- %s", l)
		}
		if more := sil.HeldAlerts + sil.HeldTrips - len(sil.Held); more > 0 {
			fmt.Fprintf(&b, "\n- and %d more", more)
		}
	}
	if open > 0 {
		fmt.Fprintf(&b, "\n\n%s still open, posted below.", core.Plural(open, "alert is", "alerts are"))
	}
	if sil.Reason != "" {
		fmt.Fprintf(&b, "\n\nIt was set by %s because “%s”.", core.EscapeMarkdown(sil.By), core.EscapeMarkdown(sil.Reason))
	}
	return core.Notice{Key: fmt.Sprintf("silence:%d:ended", sil.ID), RoomID: sil.RoomID, Kind: core.NoticeMessage, Body: b.String()}
}
