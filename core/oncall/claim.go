package oncall

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// A claim holds for oncall.claim_hold from when it was made or last
// renewed (its owner claiming it again): a claim nobody renews lapses,
// and the alert is escalated again, so that a 👀 and silence cannot stop
// the paging for good. An admin may take over a claim.

// ClaimStore keeps who holds the claims.
type ClaimStore interface {
	// ReclaimIncident makes to the owner of an open incident owned by from,
	// claimed now at at, and reports whether it did (false: it resolved, or
	// from no longer owns it). from == to renews the claim.
	ReclaimIncident(ctx context.Context, id, from, to string, at time.Time) (bool, error)
	// ClaimedBefore lists the open incidents with no parent claimed (or
	// last renewed) by before, the oldest claim first.
	ClaimedBefore(ctx context.Context, before time.Time) ([]Incident, error)
	// LapseClaim ends the claim owner made at claimedAt on an open
	// incident, so that it waits for a claim again with its next tier due
	// escalate_after after escalateAt (the admins' tier counts as called),
	// and reports whether it did (false: it was renewed, taken over or
	// resolved meanwhile).
	LapseClaim(ctx context.Context, id, owner string, claimedAt, escalateAt time.Time) (bool, error)
}

// ClaimHold is how long a claim holds without its owner renewing it.
func (s *Service) ClaimHold() time.Duration { return s.cfg.ClaimHold }

// Reclaim makes to the owner of incident id, which from owns, as of now:
// from == to renews from's claim, another is a takeover (the caller
// checks that to is an admin). It returns the incident as it stands and
// whether it changed hands or was renewed; the caller sends TakeOverEdit
// after a takeover.
func (s *Service) Reclaim(ctx context.Context, id, from, to string) (Incident, bool, error) {
	ok, err := s.deps.Store.ReclaimIncident(ctx, id, from, to, s.deps.Clock.Now())
	if err != nil {
		return Incident{}, false, fmt.Errorf("reclaim incident %s: %w", id, err)
	}
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return Incident{}, false, fmt.Errorf("reclaim incident %s: %w", id, err)
	}
	return inc, ok, nil
}

// TakeOverEdit is the edit of an alert whose claim an admin took over,
// naming its new owner.
func TakeOverEdit(inc Incident) core.Notice {
	return core.Notice{Key: fmt.Sprintf("%s:taken:%d", inc.NoticeKey, inc.ClaimedAt.UnixMilli()), RoomID: inc.RoomID,
		Kind: core.NoticeEdit, Body: inc.text(), Target: inc.NoticeKey}
}

// Lapse ends the claims nobody renewed within oncall.claim_hold on the
// alerts still open and not snoozed, each in a transaction of its own:
// the alert is edited to drop its owner, one reply in its thread calls
// the admins and says whose claim lapsed, and escalation goes on to the
// next tier after oncall.escalate_after. It returns how many lapsed. It
// writes, so only the lease holder runs it.
func (s *Service) Lapse(ctx context.Context) (int, error) {
	now := s.deps.Clock.Now()
	due, err := s.deps.Store.ClaimedBefore(ctx, now.Add(-s.cfg.ClaimHold))
	if err != nil {
		return 0, fmt.Errorf("lapse claims: %w", err)
	}
	lapsed := 0
	var errs []error
	for _, inc := range due {
		if inc.Snoozed(now) || !inc.Posted() {
			continue
		}
		err := s.deps.Tx.InTx(ctx, func(ctx context.Context) error {
			ok, err := s.deps.Store.LapseClaim(ctx, inc.ID, inc.Owner, inc.ClaimedAt, now)
			if err != nil || !ok {
				return err
			}
			lapsed++
			return s.lapsed(ctx, inc)
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("lapse the claim on incident %s: %w", inc.ID, err))
		}
	}
	return lapsed, errors.Join(errs...)
}

// lapsed tells the room that inc's claim lapsed: the alert loses its
// owner line, and the admins are called in its thread.
func (s *Service) lapsed(ctx context.Context, inc Incident) error {
	owner := core.EscapeMarkdown(inc.Owner)
	open := inc
	open.Owner, open.ClaimedAt = "", time.Time{}
	body := fmt.Sprintf("%s claimed this at %s and did not renew the claim within %s, and it is still open: the claim lapsed. "+
		"Tap %s on it or reply `%s` to take it.", owner, stamp(inc.ClaimedAt), core.HumanDuration(s.cfg.ClaimHold), ClaimReaction, ClaimWord)
	var names []string
	for _, a := range s.deps.Admins {
		names = append(names, core.EscapeMarkdown(a))
	}
	if len(names) > 0 {
		body = strings.Join(names, ", ") + ": " + body
	}
	at := inc.ClaimedAt.UnixMilli()
	for _, n := range []core.Notice{
		{Key: fmt.Sprintf("%s:lapsed:%d", inc.NoticeKey, at), RoomID: inc.RoomID, Kind: core.NoticeEdit, Body: open.text(), Target: inc.NoticeKey},
		{Key: fmt.Sprintf("%s%d:%s", LapsedKeyPrefix, at, inc.ID), RoomID: inc.RoomID, Kind: core.NoticeMessage, Body: body,
			Mentions: s.deps.Admins, Target: inc.NoticeKey, Thread: true},
	} {
		if err := s.enqueue(ctx, n); err != nil {
			return err
		}
	}
	return nil
}

// LapsedKeyPrefix starts the key of the reply that says a claim lapsed,
// followed by when it was made (Unix milliseconds) and the incident's ID:
// an answer to it is an answer to the incident.
const LapsedKeyPrefix = "lapsed:"

// IncidentOfLapse names the incident a "the claim lapsed" reply is about,
// from the reply's key.
func IncidentOfLapse(key string) (string, bool) {
	return incidentOfStamped(key, LapsedKeyPrefix)
}
