package oncall

import (
	"context"
	"errors"
	"fmt"

	"github.com/jarvis-hmi/jarvis/core"
)

// Track keeps n, an alert a feature posts and edits itself (a halt, an
// approval request), as the notice of incident id about subject. Nothing
// is sent: the feature puts 👀 and 💤 under its notice with its own
// answers, rebuilds its edits through Redraw, and folds the resolution
// into the edits it makes anyway. An incident already kept is left as it
// is.
func (s *Service) Track(ctx context.Context, id, kind, subject string, n core.Notice) error {
	_, err := s.deps.Store.Incident(ctx, id)
	if !errors.Is(err, core.ErrNotFound) {
		return err
	}
	inc := Incident{ID: id, NoticeKey: n.Key, Body: n.Body, RoomID: n.RoomID, Kind: kind, Subject: subject, OpenedAt: s.deps.Clock.Now()}
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return fmt.Errorf("track incident %s: %w", id, err)
	}
	return nil
}

// Redraw keeps body, the text a feature rebuilt its own alert with (a
// halt's status changed), as the text of incident id, and returns it with
// the incident's status lines (who handles it, who snoozed it) for the
// feature's edit to carry: neither that edit nor a claim's or a snooze's
// writes over the other. A resolved incident, or none with the ID, adds
// nothing.
func (s *Service) Redraw(ctx context.Context, id, body string) (string, error) {
	inc, err := s.deps.Store.Incident(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return body, nil
	case err != nil:
		return "", fmt.Errorf("redraw incident %s: %w", id, err)
	case !inc.ResolvedAt.IsZero():
		return body, nil
	}
	inc.Body = body
	if err := s.deps.Store.PutIncident(ctx, inc); err != nil {
		return "", fmt.Errorf("redraw incident %s: %w", id, err)
	}
	return inc.text(), nil
}

// Close resolves incident id and sends nothing: the feature that tracked
// it says Summary in the edit and the reply it sends for what resolved
// it. It returns the incident and whether it closed it now (false when
// none has the ID or it had resolved already).
func (s *Service) Close(ctx context.Context, id string) (Incident, bool, error) {
	inc, err := s.deps.Store.Incident(ctx, id)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return Incident{}, false, nil
	case err != nil:
		return Incident{}, false, fmt.Errorf("close incident %s: %w", id, err)
	case !inc.ResolvedAt.IsZero():
		return inc, false, nil
	}
	if inc, err = s.close(ctx, inc); err != nil {
		return Incident{}, false, fmt.Errorf("close incident %s: %w", id, err)
	}
	return inc, true, nil
}

// Summary says how long a resolved incident was open and who handled it,
// as Markdown: "the alert was open 12m, handled by @bob:x".
func Summary(inc Incident) string {
	return fmt.Sprintf("the alert was open %s, %s", inc.lasted(), inc.handled())
}
