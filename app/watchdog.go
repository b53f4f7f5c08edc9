package app

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/watchdog"
)

// syncPoll is the long-poll a sync request waits on top of
// homeserver.request_timeout.
const syncPoll = 30 * time.Second

// initWatchdog builds the dead-man's switch on the self-check.
func (a *App) initWatchdog() {
	a.watchdog = watchdog.New(a.cfg.Watchdog, a.selfCheck, a.clock)
}

// selfCheck says whether Jarvis is alive in each of its parts: the store
// answers, the last sync is recent (two sync requests' time; before the
// first, Jarvis is starting and pings nothing), and no
// notice has waited in the outbox past watchdog.sender_stall while this
// Jarvis holds the lease and so sends.
func (a *App) selfCheck(ctx context.Context) error {
	oldest, err := a.outbox.OldestWaiting(ctx)
	if err != nil {
		return fmt.Errorf("store: %w", err)
	}
	if a.bot != nil {
		h := a.bot.Health()
		stale := 2 * (a.cfg.Homeserver.RequestTimeout + syncPoll)
		switch {
		case h.LastSync.IsZero():
			return watchdog.ErrStarting
		case a.clock.Now().Sub(h.LastSync) > stale:
			reason := fmt.Sprintf("sync: the last sync with the homeserver was %s ago", a.clock.Now().Sub(h.LastSync).Round(time.Second))
			if h.SyncError != "" {
				reason += ": " + h.SyncError
			}
			return fmt.Errorf("%s", reason)
		}
	}
	if a.leader() && !oldest.IsZero() {
		if waited := a.clock.Now().Sub(oldest); waited > a.cfg.Watchdog.SenderStall {
			last, _ := a.outbox.LastError(ctx)
			reason := fmt.Sprintf("sender: a notice has waited %s in the outbox", waited.Round(time.Second))
			if last != "" {
				reason += "; last send error: " + last
			}
			return fmt.Errorf("%s", reason)
		}
	}
	return nil
}

// watchdogStatus is the dead-man's switch as `!sys status` shows it.
func (a *App) watchdogStatus() commands.WatchdogStatus {
	s := commands.WatchdogStatus{Period: a.cfg.Watchdog.Period}
	if a.cfg.Watchdog.PingURL == "" {
		return s
	}
	if u, err := url.Parse(a.cfg.Watchdog.PingURL); err == nil {
		s.Host = u.Host
	}
	last := a.watchdog.Last()
	s.At, s.Healthy, s.Reason, s.Status, s.Err = last.At, last.Healthy, last.Reason, last.Status, last.Err
	return s
}
