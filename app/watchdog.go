package app

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/jarvis-hmi/jarvis/commands"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/watchdog"
)

// syncPoll is the long-poll a sync request waits on top of
// homeserver.request_timeout.
const syncPoll = 30 * time.Second

// statusWindow is how far back `!sys status` counts Jarvis's restarts.
const statusWindow = 24 * time.Hour

// stopMarkTimeout bounds writing a clean stop once Run's context ended.
const stopMarkTimeout = 5 * time.Second

// initWatchdog builds the dead-man's switch on the self-check and records
// this start of Jarvis with a boot id of its own.
func (a *App) initWatchdog(ctx context.Context) error {
	a.watchdog = watchdog.New(a.cfg.Watchdog, a.selfCheck, a.clock)
	var id [8]byte
	_, _ = rand.Read(id[:])
	a.boot = watchdog.Boot{ID: hex.EncodeToString(id[:]), Host: holderName(), Version: a.version, StartedAt: a.clock.Now()}
	return a.store.RecordBoot(core.Unfenced(ctx), a.boot)
}

// markStopped records that this boot stopped cleanly: a stop asked for
// (a signal, `!sys restart`) is no crash.
func (a *App) markStopped() {
	ctx, cancel := context.WithTimeout(context.Background(), stopMarkTimeout)
	defer cancel()
	if err := a.store.MarkStopped(core.Unfenced(ctx), a.boot.ID, a.clock.Now()); err != nil {
		a.log.Err(err).Msg("Failed to record the clean stop")
	}
}

// announceCrashLoop says once in the room, when Jarvis holds the lease
// again, that it is back from a crash loop: watchdog.crash_loop.restarts
// boots or more within the window before this one ended without a clean
// stop.
func (a *App) announceCrashLoop(ctx context.Context) error {
	loop := a.cfg.Watchdog.CrashLoop
	if loop.Restarts == 0 {
		return nil
	}
	boots, err := a.store.BootsSince(ctx, a.boot.StartedAt.Add(-loop.Window))
	if err != nil {
		return err
	}
	crashes := watchdog.Crashes(boots, a.boot, loop.Window)
	if len(crashes) < loop.Restarts {
		return nil
	}
	times := make([]string, len(crashes))
	for i, b := range crashes {
		times[len(crashes)-1-i] = b.StartedAt.UTC().Format("15:04:05")
	}
	err = a.outbox.Enqueue(ctx, core.Notice{Key: "jarvis-crash-loop:" + a.boot.ID, RoomID: a.room, Kind: core.NoticeMessage,
		Body: fmt.Sprintf("⚠️ Jarvis was in a crash loop: it started %s within %s and each time stopped without a clean stop "+
			"(started at %s UTC, on %s). It is up again now as %s; `!sys logs` shows what it logged since.",
			core.Plural(len(crashes), "time", "times"), loop.Window, strings.Join(times, ", "), core.CodeSpan(a.boot.Host), a.version)})
	if errors.Is(err, core.ErrDuplicate) {
		return nil
	}
	return err
}

// selfCheck says whether Jarvis is alive in each of its parts: the store
// answers, the last sync is recent (two sync requests' time; before the
// first, Jarvis is starting and pings nothing), and no
// notice has waited in the outbox past watchdog.sender_stall while this
// Jarvis holds the lease and so sends.
func (a *App) selfCheck(ctx context.Context) error {
	// The reasons go to a receiver outside Jarvis (often a hosted
	// service): they say which part failed, never the error's text, which
	// can name rooms, users and hosts. The log has it.
	oldest, err := a.outbox.OldestWaiting(ctx)
	if err != nil {
		a.log.Err(err).Msg("Self-check: failed to read the outbox")
		return errors.New("store: the outbox could not be read")
	}
	if a.bot != nil {
		h := a.bot.Health()
		stale := 2 * (a.cfg.Homeserver.RequestTimeout + syncPoll)
		switch {
		case h.LastSync.IsZero():
			return watchdog.ErrStarting
		case a.clock.Now().Sub(h.LastSync) > stale:
			return fmt.Errorf("sync: the last sync with the homeserver was %s ago", a.clock.Now().Sub(h.LastSync).Round(time.Second))
		}
	}
	if a.leader() && !oldest.IsZero() {
		if waited := a.clock.Now().Sub(oldest); waited > a.cfg.Watchdog.SenderStall {
			return fmt.Errorf("sender: a notice has waited %s in the outbox", waited.Round(time.Second))
		}
	}
	return nil
}

// watchdogStatus is the dead-man's switch and Jarvis's restarts as
// `!sys status` shows them.
func (a *App) watchdogStatus(ctx context.Context) (commands.WatchdogStatus, error) {
	s := commands.WatchdogStatus{Period: a.cfg.Watchdog.Period, Up: a.boot.StartedAt}
	boots, err := a.store.BootsSince(ctx, a.clock.Now().Add(-statusWindow))
	if err != nil {
		return s, err
	}
	s.Boots, s.Crashes = len(boots), len(watchdog.Crashes(boots, a.boot, statusWindow))
	if a.cfg.Watchdog.PingURL == "" {
		return s, nil
	}
	if u, err := url.Parse(a.cfg.Watchdog.PingURL); err == nil {
		s.Host = u.Host
	}
	last := a.watchdog.Last()
	s.At, s.Healthy, s.Reason, s.Status, s.Err = last.At, last.Healthy, last.Reason, last.Status, last.Err
	return s, nil
}
