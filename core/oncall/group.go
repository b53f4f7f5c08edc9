package oncall

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
)

// GroupPrefix starts the ID of an incident that stands for a group of
// alerts of one kind raised within a short window, followed by the ID of
// the incident whose alert became the group's.
const GroupPrefix = "group:"

// Join opens incident id, or updates it (an alert that escalated), as a
// member of parent: it gets no alert of its own; the caller edits the
// parent's alert to name it (Edit). body is what its own alert would
// have said.
func (s *Service) Join(ctx context.Context, id, kind, subject, parent, body string) error {
	inc, err := s.deps.Store.Incident(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		inc = Incident{ID: id, Subject: subject, OpenedAt: s.deps.Clock.Now()}
	case err != nil:
		return fmt.Errorf("join incident %s to %s: %w", id, parent, err)
	}
	inc.Kind, inc.Body, inc.Parent = kind, body, parent
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return fmt.Errorf("join incident %s to %s: %w", id, parent, err)
	}
	return nil
}

// Group turns the open incident leader into the first member of a new
// group incident, GroupPrefix + leader, that takes over its alert, owner
// and escalation, and returns the group.
func (s *Service) Group(ctx context.Context, leader string) (Incident, error) {
	inc, err := s.deps.Store.Incident(ctx, leader)
	if err != nil {
		return Incident{}, fmt.Errorf("group incident %s: %w", leader, err)
	}
	g := inc
	g.ID, g.Subject, g.Parent = GroupPrefix+leader, "", ""
	inc.Parent = g.ID
	for _, i := range []Incident{g, inc} {
		if err := s.deps.Store.PutIncident(ctx, i); err != nil {
			return Incident{}, fmt.Errorf("group incident %s: %w", leader, err)
		}
	}
	return g, nil
}

// Members lists the incidents folded or grouped into incident id, oldest
// first.
func (s *Service) Members(ctx context.Context, id string) ([]Incident, error) {
	m, err := s.deps.Store.Members(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("members of incident %s: %w", id, err)
	}
	return m, nil
}

// Open lists the open incidents of a kind, oldest first.
func (s *Service) Open(ctx context.Context, kind string) ([]Incident, error) {
	open, err := s.deps.Store.OpenIncidents(ctx, kind)
	if err != nil {
		return nil, fmt.Errorf("open %s incidents: %w", kind, err)
	}
	return open, nil
}

// Recent lists the open incidents of a kind that have no parent and
// opened at since or later, oldest first: those a new alert of the kind
// may be grouped with.
func (s *Service) Recent(ctx context.Context, kind string, since time.Time) ([]Incident, error) {
	open, err := s.deps.Store.OpenSince(ctx, kind, since)
	if err != nil {
		return nil, fmt.Errorf("open %s incidents since %s: %w", kind, since.UTC().Format(time.RFC3339), err)
	}
	return open, nil
}

// Edit replaces the text of open incident id's alert with body (Markdown,
// untrusted text escaped), keeping who handles it. The same text twice is
// one edit; the alert a silence holds is posted with the text as it
// stands when the silence ends.
func (s *Service) Edit(ctx context.Context, id, body string) error {
	inc, err := s.deps.Store.Incident(ctx, id)
	if err != nil {
		return fmt.Errorf("edit incident %s: %w", id, err)
	}
	if !inc.ResolvedAt.IsZero() || inc.Parent != "" || inc.Body == body {
		return nil
	}
	inc.Body = body
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return fmt.Errorf("edit incident %s: %w", id, err)
	}
	if !inc.Posted() {
		return nil
	}
	sum := sha256.Sum256([]byte(body))
	n := core.Notice{Key: inc.NoticeKey + ":edit:" + hex.EncodeToString(sum[:8]), RoomID: inc.RoomID, Kind: core.NoticeEdit,
		Body: inc.text(), Target: inc.NoticeKey}
	if err := s.enqueue(ctx, n); err != nil {
		return fmt.Errorf("edit incident %s: %w", id, err)
	}
	return nil
}

// closeMembers marks the open members of a resolved incident resolved
// with it.
func (s *Service) closeMembers(ctx context.Context, inc Incident) error {
	members, err := s.deps.Store.Members(ctx, inc.ID)
	if err != nil {
		return err
	}
	for _, m := range members {
		if m.ResolvedAt.IsZero() {
			m.ResolvedAt = inc.ResolvedAt
			if err := s.deps.Store.PutIncident(ctx, m); err != nil {
				return err
			}
		}
	}
	return nil
}
