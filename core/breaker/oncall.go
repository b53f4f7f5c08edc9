package breaker

import (
	"context"
	"errors"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// A halt is an on-call incident like any alert in the room: 👀 (the
// review) claims it, 💤 snoozes it, and resuming the agent or overruling
// the breaker resolves it. The halt notice's own edits carry the
// incident's status lines and say when it resolved; on-call sends only
// the edits of a snooze.

// haltBody is the halt notice of ev (rec its breaker) with status as its
// status line and, while its incident is open, who handles it and who
// snoozed it: every edit of the notice is made of it.
func (b *Service) haltBody(ctx context.Context, ev Event, rec Record, status string) (string, error) {
	body := noticeBody(ev, rec, b.deps.Admins, b.cfg.HalfOpenTimeout, status)
	if b.deps.Incidents == nil {
		return body, nil
	}
	return b.deps.Incidents.Redraw(ctx, ev.NoticeKey(), body)
}

// trackHalt keeps the halt notice n of ev as its incident.
func (b *Service) trackHalt(ctx context.Context, ev Event, n core.Notice) error {
	if b.deps.Incidents == nil {
		return nil
	}
	return b.deps.Incidents.Track(ctx, ev.NoticeKey(), "halt", ev.Agent, n)
}

// claimHalt makes who the owner of ev's incident as they take the review.
// Someone else's claim refuses the review with ErrForbidden, naming them.
func (b *Service) claimHalt(ctx context.Context, ev Event, who string) error {
	if b.deps.Incidents == nil {
		return nil
	}
	inc, _, err := b.deps.Incidents.Claim(ctx, ev.NoticeKey(), who)
	switch {
	case errors.Is(err, core.ErrNotFound): // a halt from before incidents were kept
		return nil
	case err != nil:
		return err
	case inc.Owner != "" && inc.Owner != who:
		return core.Refuse(core.ErrForbidden, "%s", oncall.HeldBy(inc))
	}
	return nil
}

// resolveHalt resolves ev's incident when act ends the halt (a resume
// into the trial, an overrule) and returns what the halt notice's status
// line and its reply add; nothing when the incident was resolved already.
func (b *Service) resolveHalt(ctx context.Context, ev Event, act Action) (status, reply string, err error) {
	if b.deps.Incidents == nil || act != ActResume && act != ActOverrule {
		return "", "", nil
	}
	inc, closed, err := b.deps.Incidents.Close(ctx, ev.NoticeKey())
	if err != nil || !closed {
		return "", "", err
	}
	summary := oncall.Summary(inc)
	return "\n- **On call:** ✅ resolved: " + summary, " All clear: " + summary + ".", nil
}
