package app

import (
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// listenNotify is a notify socket as systemd has one for a unit of
// Type=notify, and what it hears, message by message.
func listenNotify(t *testing.T) func() []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return func() []string {
		var got []string
		buf := make([]byte, 4096)
		for {
			// Every message is in the socket's queue before this reads it.
			conn.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
			n, err := conn.Read(buf)
			if err != nil {
				return got
			}
			got = append(got, string(buf[:n]))
		}
	}
}

// TestSystemdNotify: systemd hears READY once, when the first sync is
// handled, and WATCHDOG after every round of the lease's loop; a standby,
// which never syncs, is ready when its lease's loop finds another holder.
func TestSystemdNotify(t *testing.T) {
	for _, tt := range []struct {
		name  string
		steps func(n *notifier)
		want  []string
	}{
		{"holder", func(n *notifier) { n.leaseRound(true); n.synced(); n.synced(); n.leaseRound(true) },
			[]string{"WATCHDOG=1", "READY=1\nSTATUS=Syncing, holding the workspace lease", "WATCHDOG=1"}},
		{"standby", func(n *notifier) { n.leaseRound(false); n.leaseRound(false) },
			[]string{"READY=1\nSTATUS=Standby: another Jarvis holds the workspace lease", "WATCHDOG=1", "WATCHDOG=1"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			heard := listenNotify(t)
			tt.steps(&notifier{log: zerolog.Nop()})
			if got := heard(); !slices.Equal(got, tt.want) {
				t.Errorf("systemd heard %q, want %q", got, tt.want)
			}
		})
	}
}

// TestFitsWatchdog: a lease whose loop would not pet systemd's watchdog
// twice within WatchdogSec is a configuration error naming the key.
func TestFitsWatchdog(t *testing.T) {
	t.Setenv("WATCHDOG_PID", "")
	t.Setenv("WATCHDOG_USEC", "60000000")
	if err := fitsWatchdog(30 * time.Second); err != nil {
		t.Errorf("a 30s lease under WatchdogSec=60s: %v", err)
	}
	err := fitsWatchdog(2 * time.Minute)
	if err == nil || !strings.Contains(err.Error(), "workspace.lease_ttl: is 2m0s") || !strings.Contains(err.Error(), "WatchdogSec=1m0s") {
		t.Errorf("a 2m lease under WatchdogSec=60s: %v, want a refusal naming workspace.lease_ttl and WatchdogSec", err)
	}
}
