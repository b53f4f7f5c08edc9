package core

import (
	"context"
	"fmt"
	"strings"
)

// BreakerActKeep records that a person looked at an open breaker and
// keeps the agent halted. The state stays open; the audit trail and the
// halt notice say who decided so.
const BreakerActKeep BreakerAction = "keep"

// Keep records that who keeps the agent of the open event halted: an
// audit row, the halt notice's status line edited, and a threaded reply.
// The breaker stays open. An event that does not hold its breaker open
// (half-open, or over) is an illegal transition and changes nothing.
func (b *Breakers) Keep(ctx context.Context, eventID, who string) (BreakerStatus, error) {
	who = strings.TrimSpace(who)
	if who == "" {
		return BreakerStatus{}, Invalid("who", "is required")
	}
	var st BreakerStatus
	err := b.write(ctx, func(ctx context.Context) (string, error) {
		ev, err := b.store.Event(ctx, eventID)
		if err != nil {
			return "", err
		}
		rec, err := b.store.Get(ctx, ev.Agent)
		if err != nil {
			return "", err
		}
		switch {
		case rec.EventID != eventID || rec.State == BreakerClosed:
			return "", fmt.Errorf("breaker of %s is %s and event %s is over, cannot keep it halted: %w",
				rec.Agent, rec.State, eventID, ErrIllegalTransition)
		case rec.State != BreakerOpen:
			return "", fmt.Errorf("breaker of %s is %s, cannot keep it halted: %w", rec.Agent, rec.State, ErrIllegalTransition)
		}
		now := b.clock.Now()
		next := rec
		next.Version++
		// Like a review, keeping compares and bumps the version, so that it
		// cannot interleave with a resume or a reset.
		if err := b.move(ctx, next, rec.Version); err != nil {
			return "", err
		}
		seq, err := b.store.AddTransition(ctx, BreakerTransition{Agent: rec.Agent, EventID: ev.ID, Action: BreakerActKeep,
			From: rec.State, To: rec.State, Actor: who, Why: "kept halted", At: now})
		if err != nil {
			return "", err
		}
		key, agent, by := ev.NoticeKey(), EscapeMarkdown(ev.Agent), EscapeMarkdown(who)
		status := fmt.Sprintf("⏹️ kept halted by %s at %s; open since %s", by, breakerTime(now), breakerTime(rec.Since))
		reply := fmt.Sprintf("⏹️ %s keeps **%s** halted. It stays open until an admin resumes it (%s, or `!breaker resume %s`) "+
			"or resets it (`!breaker reset %s`).", by, agent, BreakerReactResume, ev.ID, ev.ID)
		err = b.enqueue(ctx, []Notice{
			{Key: fmt.Sprintf("%s:%d:edit", key, seq), RoomID: b.Room, Kind: NoticeEdit, Target: key,
				Body: breakerNoticeBody(ev, next, b.Admins, b.cfg.HalfOpenTimeout, status)},
			{Key: fmt.Sprintf("%s:%d:reply", key, seq), RoomID: b.Room, Kind: NoticeMessage, Target: key, Thread: true, Body: reply},
		})
		st = BreakerStatus{BreakerRecord: next, Event: &ev}
		return "", err
	})
	if err != nil {
		return BreakerStatus{}, fmt.Errorf("keep breaker event %s: %w", eventID, err)
	}
	return st, nil
}
