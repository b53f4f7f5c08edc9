// Package oncall keeps the incidents behind the alerts Jarvis posts to its
// room: who claimed each (👀 or a reply `mine`), since when, and when what
// it reported resolved.
package oncall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// ClaimReaction is seeded by Jarvis on every alert; the first person to
// tap it owns the alert. ClaimWord, replied to the alert, does the same
// where reactions do not reach Jarvis.
const (
	ClaimReaction = "👀"
	ClaimWord     = "mine"
)

// IsClaim reports whether an answer to an alert claims it.
func IsClaim(answer string) bool {
	a := strings.ToLower(strings.Trim(strings.TrimSpace(answer), ".!"))
	return a == ClaimReaction || a == ClaimWord
}

// Incident is one alert from the moment Jarvis raises it until what it
// reported resolves.
type Incident struct {
	// ID names the incident across the notices that raise it ("silence:EVE:3").
	ID string
	// NoticeKey is the outbox key of the alert that stands for it now (an
	// alert that escalates gets a new notice), and Body that notice's text.
	NoticeKey string
	Body      string
	RoomID    string
	// Kind is what the alert reported ("alert", "offline"), Subject what
	// it is about (an agent).
	Kind       string
	Subject    string
	OpenedAt   time.Time
	Owner      string
	ClaimedAt  time.Time
	ResolvedAt time.Time
	// EscalatedAt is when the admins were called because nobody had
	// claimed it.
	EscalatedAt time.Time
	// SnoozedBy snoozed it at SnoozedAt until SnoozedUntil (zero when it
	// is not snoozed): nobody is called to it before then.
	SnoozedBy    string
	SnoozedAt    time.Time
	SnoozedUntil time.Time
}

// Posted reports whether the incident's alert was posted: a silence
// holds the alerts of the incidents it keeps from the room.
func (inc Incident) Posted() bool { return inc.NoticeKey != "" }

// Store keeps incidents.
type Store interface {
	// PutIncident writes an incident, replacing the one with its ID.
	PutIncident(ctx context.Context, inc Incident) error
	// Incident returns one incident, core.ErrNotFound when none has the ID.
	Incident(ctx context.Context, id string) (Incident, error)
	// ClaimIncident makes owner the owner of an open, unclaimed incident and
	// reports whether it did (false: someone claimed it first or it is
	// resolved).
	ClaimIncident(ctx context.Context, id, owner string, at time.Time) (bool, error)
	// Unclaimed lists the open incidents nobody claimed that opened by
	// before and were not escalated yet, oldest first.
	Unclaimed(ctx context.Context, before time.Time) ([]Incident, error)
	// EscalateIncident marks an open, unclaimed, not yet escalated incident
	// escalated and reports whether it did.
	EscalateIncident(ctx context.Context, id string, at time.Time) (bool, error)
	SnoozeStore
	SilenceStore
}

// Config is the oncall section.
type Config struct {
	// EscalateAfter is how long an alert waits for a claim before the
	// admins are called in its thread.
	EscalateAfter time.Duration
	// SnoozeDefault is how long 💤 snoozes an alert or a trip push.
	SnoozeDefault time.Duration
}

// Validate checks the section.
func (c Config) Validate() error {
	if c.EscalateAfter < time.Second {
		return core.Invalid("oncall.escalate_after", "must be at least 1s, got %s", c.EscalateAfter)
	}
	if c.SnoozeDefault < time.Second || c.SnoozeDefault > MaxSnooze {
		return core.Invalid("oncall.snooze_default", "must be between 1s and %s, got %s", core.HumanDuration(MaxSnooze), c.SnoozeDefault)
	}
	return nil
}

// Deps are what the service needs.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Admins are called when an alert waits too long for a claim.
	Admins []string
}

// Service raises, claims and resolves incidents. Every call is meant to
// run in the transaction of the change that caused it.
type Service struct {
	cfg  Config
	deps Deps
}

// NewService builds the on-call service.
func NewService(cfg Config, deps Deps) *Service { return &Service{cfg: cfg, deps: deps} }

// Raise posts the alert n as the notice of incident id, about subject,
// with 👀 on it. An incident already open (an alert that escalated) keeps
// when it opened and who owns it, and its new notice says who does.
func (s *Service) Raise(ctx context.Context, id, kind, subject string, n core.Notice) error {
	now := s.deps.Clock.Now()
	inc, err := s.deps.Store.Incident(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		inc = Incident{ID: id, Subject: subject, OpenedAt: now}
	case err != nil:
		return fmt.Errorf("raise incident %s: %w", id, err)
	}
	held, err := s.holdAlert(ctx, subject, n.Body)
	switch {
	case err != nil:
		return fmt.Errorf("raise incident %s: %w", id, err)
	case held:
		// A silence holds it: the incident is kept, with no notice (or the
		// one posted before the silence began).
		inc.Kind = kind
		if !inc.Posted() {
			inc.Body, inc.RoomID = n.Body, n.RoomID
		}
		return s.deps.Store.PutIncident(ctx, inc)
	}
	inc.NoticeKey, inc.Body, inc.RoomID, inc.Kind = n.Key, n.Body, n.RoomID, kind
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return fmt.Errorf("raise incident %s: %w", id, err)
	}
	n.Body = inc.text()
	for _, m := range []core.Notice{n,
		{Key: n.Key + ":claim", RoomID: n.RoomID, Kind: core.NoticeReaction, Body: ClaimReaction, Target: n.Key},
		{Key: n.Key + ":snooze", RoomID: n.RoomID, Kind: core.NoticeReaction, Body: SnoozeReaction, Target: n.Key}} {
		if err := s.enqueue(ctx, m); err != nil {
			return fmt.Errorf("raise incident %s: %w", id, err)
		}
	}
	return nil
}

// Claim makes who the owner of incident id, if nobody is. It returns the
// incident as it stands and whether who claimed it now; the caller sends
// ClaimEdit then, or tells who that someone else has it.
func (s *Service) Claim(ctx context.Context, id, who string) (Incident, bool, error) {
	now := s.deps.Clock.Now()
	ok, err := s.deps.Store.ClaimIncident(ctx, id, who, now)
	if err != nil {
		return Incident{}, false, fmt.Errorf("claim incident %s: %w", id, err)
	}
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return Incident{}, false, fmt.Errorf("claim incident %s: %w", id, err)
	}
	return inc, ok, nil
}

// ClaimEdit is the edit of a claimed incident's alert naming its owner.
func ClaimEdit(inc Incident) core.Notice {
	return core.Notice{Key: inc.NoticeKey + ":claimed", RoomID: inc.RoomID, Kind: core.NoticeEdit, Body: inc.text(), Target: inc.NoticeKey}
}

// Resolve closes incident id: its alert is edited to say it resolved,
// how long it lasted and who handled it, and one reply in its thread says
// what happened (said, Markdown with untrusted text escaped). It returns
// core.ErrNotFound when no incident has the ID (an alert raised before
// incidents were kept); a resolved incident is left as it is.
func (s *Service) Resolve(ctx context.Context, id, said string) error {
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return fmt.Errorf("resolve incident %s: %w", id, err)
	}
	if !inc.ResolvedAt.IsZero() {
		return nil
	}
	inc.ResolvedAt = s.deps.Clock.Now()
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return fmt.Errorf("resolve incident %s: %w", id, err)
	}
	if err := s.resolved(ctx, "", []string{inc.Subject}, core.EscapeMarkdown(inc.Subject)+"'s alert resolved"); err != nil {
		return fmt.Errorf("resolve incident %s: %w", id, err)
	}
	if !inc.Posted() {
		return nil
	}
	lasted := core.HumanDuration(inc.ResolvedAt.Sub(inc.OpenedAt))
	handled := "nobody claimed it"
	if inc.Owner != "" {
		handled = "handled by " + core.EscapeMarkdown(inc.Owner)
	}
	edit := core.Notice{Key: inc.NoticeKey + ":resolved", RoomID: inc.RoomID, Kind: core.NoticeEdit, Target: inc.NoticeKey,
		Body: fmt.Sprintf("✅ **Resolved** after %s, %s. It was: %s", lasted, handled, strings.TrimSpace(inc.Body))}
	reply := core.Notice{Key: inc.NoticeKey + ":all-clear", RoomID: inc.RoomID, Kind: core.NoticeMessage, Target: inc.NoticeKey, Thread: true,
		Body: fmt.Sprintf("%s All clear: the alert was open %s, %s.", said, lasted, handled)}
	for _, n := range []core.Notice{edit, reply} {
		if err := s.enqueue(ctx, n); err != nil {
			return fmt.Errorf("resolve incident %s: %w", id, err)
		}
	}
	return nil
}

// EscalationKeyPrefix starts the key of an escalation, followed by its
// incident's ID: `mine` replied to it (or written in the alert's thread
// after it) claims the incident.
const EscalationKeyPrefix = "escalated:"

// Escalate calls the admins, once, in the thread of every alert nobody
// claimed within oncall.escalate_after, each in a transaction of its own,
// and returns how many it raised. It writes, so only the lease holder
// runs it.
func (s *Service) Escalate(ctx context.Context) (int, error) {
	due, err := s.deps.Store.Unclaimed(ctx, s.deps.Clock.Now().Add(-s.cfg.EscalateAfter))
	if err != nil {
		return 0, fmt.Errorf("escalate incidents: %w", err)
	}
	raised := 0
	var errs []error
	for _, inc := range due {
		if inc.Snoozed(s.deps.Clock.Now()) || !inc.Posted() {
			continue
		}
		err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			ok, err := s.deps.Store.EscalateIncident(ctx, inc.ID, s.deps.Clock.Now())
			if err != nil || !ok {
				return err
			}
			raised++
			return s.enqueue(ctx, s.escalation(inc))
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("escalate incident %s: %w", inc.ID, err))
		}
	}
	return raised, errors.Join(errs...)
}

// escalation is the reply in an alert's thread that calls the admins.
func (s *Service) escalation(inc Incident) core.Notice {
	var who strings.Builder
	for i, a := range s.deps.Admins {
		if i > 0 {
			who.WriteString(", ")
		}
		who.WriteString(core.EscapeMarkdown(a))
	}
	body := fmt.Sprintf("Nobody has claimed this alert in %s. Tap %s on it or reply `%s` to take it.",
		core.HumanDuration(s.cfg.EscalateAfter), ClaimReaction, ClaimWord)
	if who.Len() > 0 {
		body = who.String() + ": " + body
	}
	return core.Notice{Key: EscalationKeyPrefix + inc.ID, RoomID: inc.RoomID, Kind: core.NoticeMessage, Body: body,
		Mentions: s.deps.Admins, Target: inc.NoticeKey, Thread: true}
}

// text is the alert with who handles it, once someone does, and who
// snoozed it until when, while it is snoozed.
func (inc Incident) text() string {
	var b strings.Builder
	b.WriteString(inc.Body)
	if inc.Owner != "" {
		fmt.Fprintf(&b, "\n\n👀 Handled by %s since %s.", core.EscapeMarkdown(inc.Owner), inc.ClaimedAt.UTC().Format("Jan 2 15:04 MST"))
	}
	if !inc.SnoozedUntil.IsZero() {
		fmt.Fprintf(&b, "\n\n💤 Snoozed by %s until %s.", core.EscapeMarkdown(inc.SnoozedBy), UntilText(inc.SnoozedUntil, inc.SnoozedAt, time.UTC))
	}
	return b.String()
}

// enqueue writes a notice; one already in the outbox was written before.
func (s *Service) enqueue(ctx context.Context, n core.Notice) error {
	if err := s.deps.Outbox.Enqueue(ctx, n); err != nil && !errors.Is(err, core.ErrDuplicate) {
		return err
	}
	return nil
}
