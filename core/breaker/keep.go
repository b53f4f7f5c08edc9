package breaker

import (
	"context"
	"fmt"

	"github.com/jarvis-hmi/jarvis/core"
)

// ActKeep records that a person looked at an open breaker and
// keeps the agent halted. The state stays open; the audit trail and the
// halt notice say who decided so.
const ActKeep Action = "keep"

// Keep records that who keeps the agent of the open event halted: an
// audit row, the halt notice's status line edited, and a threaded reply.
// The breaker stays open. An event that does not hold its breaker open
// (half-open, or over) is an illegal transition and changes nothing.
func (b *Service) Keep(ctx context.Context, eventID, who string) (Status, error) {
	who, err := actor(who)
	if err != nil {
		return Status{}, err
	}
	var st Status
	err = b.write(ctx, func(ctx context.Context) (string, error) {
		ev, rec, err := b.liveEvent(ctx, eventID, ActKeep)
		if err != nil {
			return "", err
		}
		if rec.State != Open {
			return "", fmt.Errorf("breaker of %s is %s, cannot keep it halted: %w", rec.Agent, rec.State, core.ErrIllegalTransition)
		}
		now := b.deps.Clock.Now()
		next := rec
		next.Version++
		// Like a review, keeping compares and bumps the version, so that it
		// cannot interleave with a resume or a reset.
		if err := b.move(ctx, next, rec.Version); err != nil {
			return "", err
		}
		seq, err := b.deps.Store.AddTransition(ctx, Transition{Agent: rec.Agent, EventID: ev.ID, Action: ActKeep,
			From: rec.State, To: rec.State, Actor: who, Why: "kept halted", At: now})
		if err != nil {
			return "", err
		}
		key, agent, by := ev.NoticeKey(), core.EscapeMarkdown(ev.Agent), core.EscapeMarkdown(who)
		status := fmt.Sprintf("⏹️ kept halted by %s at %s; open since %s", by, stamp(now), stamp(rec.Since))
		reply := fmt.Sprintf("⏹️ %s keeps **%s** halted. It stays open until an admin resumes it (%s, or `!breaker resume %s`) "+
			"or resets it (`!breaker reset %s`).", by, agent, ReactResume, ev.ID, ev.ID)
		body, err := b.haltBody(ctx, ev, next, status)
		if err != nil {
			return "", err
		}
		err = b.enqueue(ctx, []core.Notice{
			{Key: fmt.Sprintf("%s:%d:edit", key, seq), RoomID: b.deps.Room, Kind: core.NoticeEdit, Target: key, Body: body},
			{Key: fmt.Sprintf("%s:%d:reply", key, seq), RoomID: b.deps.Room, Kind: core.NoticeMessage, Target: key, Thread: true, Body: reply},
		})
		st = Status{Record: next, Event: &ev}
		return "", err
	})
	if err != nil {
		return Status{}, fmt.Errorf("keep breaker event %s: %w", eventID, err)
	}
	return st, nil
}
