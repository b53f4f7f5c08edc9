// Package oncall keeps the incidents behind the alerts Jarvis posts to its
// room: who claimed each (👀 or a reply `mine`), since when, and when what
// it reported resolved.
package oncall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
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
	// Tier is how many escalation tiers were called because nobody had
	// claimed it (the admins first, then oncall.escalation in order), and
	// EscalatedAt when the last was, or when its alert was posted as the
	// silence that held it ended: the wait for the next tier counts from
	// then.
	Tier        int
	EscalatedAt time.Time
	// SnoozedBy snoozed it at SnoozedAt until SnoozedUntil (zero when it
	// is not snoozed): nobody is called to it before then.
	SnoozedBy    string
	SnoozedAt    time.Time
	SnoozedUntil time.Time
	// RemindedAt is when its owner was last reminded that it is still
	// open.
	RemindedAt time.Time
	// Parent, when set, is the incident whose alert stands for this one
	// (it was folded or grouped into it): it has no alert of its own, and
	// a claim of it claims the parent.
	Parent string
	// HeldKey and HeldMentions are the key and the mentions of the alert
	// a silence holds from the room (Body is its text), posted when the
	// silence ends with the incident still open; "" when none is held.
	HeldKey      string
	HeldMentions []string
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
	// Unclaimed lists the open incidents nobody claimed that called fewer
	// than tiers tiers and opened, and called the last, by before; oldest
	// first.
	Unclaimed(ctx context.Context, before time.Time, tiers int) ([]Incident, error)
	// EscalateIncident records that an open, unclaimed incident that had
	// called tier tiers called the next at at, and reports whether it did
	// (false: it was claimed, resolved or escalated meanwhile).
	EscalateIncident(ctx context.Context, id string, tier int, at time.Time) (bool, error)
	// Unreminded lists the open, claimed incidents whose owner claimed it,
	// and was last reminded, by before; oldest claim first.
	Unreminded(ctx context.Context, before time.Time) ([]Incident, error)
	// RemindIncident records that the owner of an open incident last
	// reminded at last was reminded again at at, and reports whether it did.
	RemindIncident(ctx context.Context, id string, last, at time.Time) (bool, error)
	// Members lists the incidents whose parent is id, oldest first.
	Members(ctx context.Context, id string) ([]Incident, error)
	// OpenIncidents lists the open incidents of a kind, oldest first.
	OpenIncidents(ctx context.Context, kind string) ([]Incident, error)
	// OpenIncidentOf returns the oldest open incident of kind about
	// subject that has no parent, core.ErrNotFound when there is none.
	OpenIncidentOf(ctx context.Context, kind, subject string) (Incident, error)
	// OpenSince lists the open incidents of kind that have no parent and
	// opened at since or later, oldest first.
	OpenSince(ctx context.Context, kind string, since time.Time) ([]Incident, error)
	// HeldIncidents lists the open incidents with no parent whose alert a
	// silence holds, oldest first.
	HeldIncidents(ctx context.Context) ([]Incident, error)
	SnoozeStore
	SilenceStore
	ClaimStore
}

// Deps are what the service needs.
type Deps struct {
	Store  Store
	Tx     core.Transactor
	Outbox core.Outbox
	Clock  core.Clock
	// Admins are called when an alert waits too long for a claim.
	Admins []string
	// Room is the dedicated room, where the silences of mute timings are
	// told.
	Room string
}

// Service raises, claims and resolves incidents. Every call is meant to
// run in the transaction of the change that caused it.
type Service struct {
	cfg  Config
	deps Deps
	// opened are the mute timings' windows whose silences this process
	// opened (Mute).
	mu     sync.Mutex
	opened map[string]bool
}

// NewService builds the on-call service.
func NewService(cfg Config, deps Deps) *Service { return &Service{cfg: cfg, deps: deps} }

// Raise posts the alert n as the notice of incident id, about subject,
// with 👀 on it. An incident already open (an alert that escalated) keeps
// when it opened and who owns it, and its new notice says who does.
func (s *Service) Raise(ctx context.Context, id, kind, subject string, n core.Notice) error {
	return s.RaiseNamed(ctx, id, kind, subject, nil, n)
}

// RaiseNamed is Raise for an alert that a silence may also hold by one of
// names (an Alertmanager alert group's labels, "severity=critical").
func (s *Service) RaiseNamed(ctx context.Context, id, kind, subject string, names []string, n core.Notice) error {
	now := s.deps.Clock.Now()
	inc, err := s.deps.Store.Incident(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		inc = Incident{ID: id, Subject: subject, OpenedAt: now}
	case err != nil:
		return fmt.Errorf("raise incident %s: %w", id, err)
	}
	held, err := s.holdAlert(ctx, append(alertTargets(kind, subject), names...), n.Body)
	switch {
	case err != nil:
		return fmt.Errorf("raise incident %s: %w", id, err)
	case held:
		// A silence holds it: the incident is kept, with no notice (or the
		// one posted before the silence began), and the alert to post if
		// it is still open when the silence ends.
		inc.Kind = kind
		if !inc.Posted() {
			inc.Body, inc.RoomID, inc.HeldKey, inc.HeldMentions = n.Body, n.RoomID, n.Key, n.Mentions
		}
		return s.deps.Store.PutIncident(ctx, inc)
	}
	inc.NoticeKey, inc.Body, inc.RoomID, inc.Kind = n.Key, n.Body, n.RoomID, kind
	if err := s.post(ctx, inc, n); err != nil {
		return fmt.Errorf("raise incident %s: %w", id, err)
	}
	return nil
}

// post writes inc, whose alert n is now, and posts n with inc's text and
// 👀 and 💤 under it.
func (s *Service) post(ctx context.Context, inc Incident, n core.Notice) error {
	inc.HeldKey, inc.HeldMentions = "", nil
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return err
	}
	n.Body = inc.text()
	for _, m := range []core.Notice{n,
		{Key: n.Key + ":claim", RoomID: n.RoomID, Kind: core.NoticeReaction, Body: ClaimReaction, Target: n.Key},
		{Key: n.Key + ":snooze", RoomID: n.RoomID, Kind: core.NoticeReaction, Body: SnoozeReaction, Target: n.Key}} {
		if err := s.enqueue(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// Incident returns incident id, core.ErrNotFound when none has it.
func (s *Service) Incident(ctx context.Context, id string) (Incident, error) {
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return Incident{}, fmt.Errorf("incident %s: %w", id, err)
	}
	return inc, nil
}

// OpenIncident returns the ID of the open incident of kind about subject
// that has an alert of its own, if there is one.
func (s *Service) OpenIncident(ctx context.Context, kind, subject string) (string, bool, error) {
	inc, err := s.deps.Store.OpenIncidentOf(ctx, kind, subject)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", false, fmt.Errorf("open %s incident of %s: %w", kind, subject, err)
	}
	return inc.ID, true, nil
}

// Claim makes who the owner of incident id, if nobody is; an incident
// folded or grouped into another claims that one. It returns the incident
// claimed as it stands and whether who claimed it now; the caller sends
// ClaimEdit then, or tells who that someone else has it.
func (s *Service) Claim(ctx context.Context, id, who string) (Incident, bool, error) {
	now := s.deps.Clock.Now()
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return Incident{}, false, fmt.Errorf("claim incident %s: %w", id, err)
	}
	if inc.Parent != "" {
		id = inc.Parent
	}
	ok, err := s.deps.Store.ClaimIncident(ctx, id, who, now)
	if err != nil {
		return Incident{}, false, fmt.Errorf("claim incident %s: %w", id, err)
	}
	if inc, err = s.deps.Store.Incident(ctx, id); err != nil {
		return Incident{}, false, fmt.Errorf("claim incident %s: %w", id, err)
	}
	return inc, ok, nil
}

// HeldBy says who has a claimed incident: "@bob:x has had this since
// Dec 1 09:10 UTC.", as Markdown.
func HeldBy(inc Incident) string {
	return fmt.Sprintf("%s has had this since %s.", core.EscapeMarkdown(inc.Owner), stamp(inc.ClaimedAt))
}

// ClaimEdit is the edit of a claimed incident's alert naming its owner.
func ClaimEdit(inc Incident) core.Notice {
	return core.Notice{Key: inc.NoticeKey + ":claimed", RoomID: inc.RoomID, Kind: core.NoticeEdit, Body: inc.text(), Target: inc.NoticeKey}
}

// Resolve closes incident id: its alert is edited to say it resolved,
// how long it lasted and who handled it, and one reply in its thread says
// what happened (said, Markdown with untrusted text escaped); the
// incidents folded into it close with it. An incident with a parent has
// no alert to edit: it is only marked resolved, and the caller edits the
// parent's alert (Edit) or resolves the parent. It returns
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
	if inc, err = s.close(ctx, inc); err != nil {
		return fmt.Errorf("resolve incident %s: %w", id, err)
	}
	if err := s.resolved(ctx, "", []string{inc.Subject}, core.EscapeMarkdown(inc.Subject)+"'s alert resolved"); err != nil {
		return fmt.Errorf("resolve incident %s: %w", id, err)
	}
	if inc.Parent != "" {
		return nil
	}
	if err := s.closeMembers(ctx, inc); err != nil {
		return fmt.Errorf("resolve incident %s: %w", id, err)
	}
	if !inc.Posted() {
		return nil
	}
	edit := core.Notice{Key: inc.NoticeKey + ":resolved", RoomID: inc.RoomID, Kind: core.NoticeEdit, Target: inc.NoticeKey,
		Body: fmt.Sprintf("✅ **Resolved** after %s, %s. It was: %s", inc.lasted(), inc.handled(), strings.TrimSpace(inc.Body))}
	reply := core.Notice{Key: inc.NoticeKey + ":all-clear", RoomID: inc.RoomID, Kind: core.NoticeMessage, Target: inc.NoticeKey, Thread: true,
		Body: fmt.Sprintf("%s All clear: %s.", said, Summary(inc))}
	for _, n := range []core.Notice{edit, reply} {
		if err := s.enqueue(ctx, n); err != nil {
			return fmt.Errorf("resolve incident %s: %w", id, err)
		}
	}
	return nil
}

// close marks an open incident resolved now.
func (s *Service) close(ctx context.Context, inc Incident) (Incident, error) {
	inc.ResolvedAt = s.deps.Clock.Now()
	return inc, s.deps.Store.PutIncident(ctx, inc)
}

// lasted is how long a resolved incident was open.
func (inc Incident) lasted() string { return core.HumanDuration(inc.ResolvedAt.Sub(inc.OpenedAt)) }

// handled says who handled an incident, as Markdown.
func (inc Incident) handled() string {
	if inc.Owner == "" {
		return "nobody claimed it"
	}
	return "handled by " + core.EscapeMarkdown(inc.Owner)
}

// text is the alert with its status lines.
func (inc Incident) text() string { return inc.Body + inc.status() }

// status is what an alert says under its own text: who handles it, once
// someone does, and who snoozed it until when, while it is snoozed; each
// after a blank line, "" for neither. Every edit of the alert carries it,
// a feature's edits of its own notice too (Redraw).
func (inc Incident) status() string {
	var b strings.Builder
	if inc.Owner != "" {
		fmt.Fprintf(&b, "\n\n👀 Handled by %s since %s.", core.EscapeMarkdown(inc.Owner), stamp(inc.ClaimedAt))
	}
	if !inc.SnoozedUntil.IsZero() {
		fmt.Fprintf(&b, "\n\n💤 Snoozed by %s until %s.", core.EscapeMarkdown(inc.SnoozedBy), UntilText(inc.SnoozedUntil, inc.SnoozedAt, time.UTC))
	}
	return b.String()
}

// stamp shows a time in notices.
func stamp(t time.Time) string { return core.TimeText(t) }

// enqueue writes a notice; one already in the outbox was written before.
func (s *Service) enqueue(ctx context.Context, n core.Notice) error {
	if err := s.deps.Outbox.Enqueue(ctx, n); err != nil && !errors.Is(err, core.ErrDuplicate) {
		return err
	}
	return nil
}
