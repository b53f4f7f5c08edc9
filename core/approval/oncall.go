package approval

import (
	"context"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/oncall"
)

// A request waiting is an on-call incident: its relay carries 👀 and 💤,
// and whoever taps 👀 (or replies `mine`) owns it; that lets them decide
// nothing they could not decide before. The relay is not rebuilt while
// the request waits, so the claim's and the snooze's edits keep its text;
// the decision, or the deadline, resolves it in the relay's own outcome
// edit.

// trackRequest keeps the relay of a as its incident and puts 👀 and 💤
// under it.
func (s *Service) trackRequest(ctx context.Context, a Approval, relay core.Notice) error {
	if s.deps.Incidents == nil {
		return nil
	}
	if err := s.deps.Incidents.Track(ctx, a.NoticeKey(), "approval", a.Agent, relay); err != nil {
		return err
	}
	for _, r := range []struct{ name, emoji string }{{"claim", oncall.ClaimReaction}, {"snooze", oncall.SnoozeReaction}} {
		if err := s.deps.Outbox.Enqueue(ctx, core.Notice{Key: a.NoticeKey() + ":" + r.name, RoomID: s.deps.Room, Kind: core.NoticeReaction,
			Body: r.emoji, Target: a.NoticeKey()}); err != nil {
			return err
		}
	}
	return nil
}

// resolveRequest resolves the incident of a, just decided, and returns
// how long it waited and who handled it (oncall.Summary); "" for a
// request relayed before incidents were kept.
func (s *Service) resolveRequest(ctx context.Context, a Approval) (string, error) {
	if s.deps.Incidents == nil {
		return "", nil
	}
	inc, closed, err := s.deps.Incidents.Close(ctx, a.NoticeKey())
	if err != nil || !closed {
		return "", err
	}
	return oncall.Summary(inc), nil
}
