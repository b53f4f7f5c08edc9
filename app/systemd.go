package app

import (
	"sync"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
)

// notifier speaks systemd's notify protocol (sd_notify) for a unit of
// Type=notify: READY=1 once Jarvis is up, which is when its first sync is
// handled, or, for a standby that never syncs, when the lease's loop finds
// the lease held by another Jarvis; and WATCHDOG=1 at the end of every
// round of the lease's loop, the loop every Jarvis runs for as long as it
// lives. Where systemd did not start Jarvis (no NOTIFY_SOCKET), each is
// nothing.
type notifier struct {
	log   zerolog.Logger
	ready sync.Once
}

// up says READY once, with status as what `systemctl status` shows.
func (n *notifier) up(status string) {
	n.ready.Do(func() { n.notify(daemon.SdNotifyReady + "\nSTATUS=" + status) })
}

// alive pets the watchdog.
func (n *notifier) alive() { n.notify(daemon.SdNotifyWatchdog) }

// synced hears every sync Jarvis handled.
func (n *notifier) synced() { n.up("Syncing, holding the workspace lease") }

// leaseRound hears the end of every round of the lease's loop.
func (n *notifier) leaseRound(held bool) {
	if !held {
		n.up("Standby: another Jarvis holds the workspace lease")
	}
	n.alive()
}

func (n *notifier) notify(state string) {
	// The environment stays: `!sys restart` re-executes the same process,
	// which says READY again.
	if _, err := daemon.SdNotify(false, state); err != nil {
		n.log.Err(err).Msg("Failed to notify systemd")
	}
}

// fitsWatchdog refuses a lease whose loop, which pets systemd's watchdog,
// runs less often than twice within the unit's WatchdogSec: systemd would
// kill a Jarvis that is well.
func fitsWatchdog(leaseTTL time.Duration) error {
	every, err := daemon.SdWatchdogEnabled(false)
	if err != nil || every == 0 || leaseTTL/3 <= every/2 {
		return nil
	}
	return core.Invalid("workspace.lease_ttl", "is %s: its loop, which tells systemd Jarvis is alive, runs every %s, "+
		"more than half of the unit's WatchdogSec=%s; raise WatchdogSec or shorten the lease", leaseTTL, leaseTTL/3, every)
}
