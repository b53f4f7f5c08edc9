package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"
)

// notifySocket is the socket systemd gives a unit of Type=notify, and
// what Jarvis says on it, one message at a time.
type notifySocket struct {
	path string
	conn *net.UnixConn
}

func newNotifySocket(t *testing.T) *notifySocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &notifySocket{path: path, conn: conn}
}

// waitFor reads what Jarvis says until a message starts with want, and
// fails the test if none does within limit.
func (s *notifySocket) waitFor(t *testing.T, want string, limit time.Duration) {
	t.Helper()
	buf := make([]byte, 4096)
	deadline := time.Now().Add(limit)
	for {
		s.conn.SetReadDeadline(deadline)
		n, err := s.conn.Read(buf)
		if err != nil {
			t.Fatalf("systemd heard no %q within %s: %v", want, limit, err)
		}
		if strings.HasPrefix(string(buf[:n]), want) {
			return
		}
	}
}

// TestSystemdFirstStart: a Jarvis started by systemd with the example's
// `pickle_key: generate` writes a fresh key in its place, keeping the
// rest of the file; says READY once it has synced, and WATCHDOG after
// that; logs with times in milliseconds and one component a line; and,
// restarted, keeps the key, reads its encrypted room with it and says
// READY again.
func TestSystemdFirstStart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	notify := newNotifySocket(t)
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, pickleKey: "generate # example",
		env: []string{"NOTIFY_SOCKET=" + notify.path}, extra: fmt.Sprintf("workspace:\n  lease_ttl: 3s\napi:\n  listen: 127.0.0.1:%d\n  metrics_token: %s\n", port, metricsToken)})
	notify.waitFor(t, "READY=1\nSTATUS=Syncing", time.Minute)
	notify.waitFor(t, "WATCHDOG=1", 10*time.Second)

	// The operator's first questions of /metrics: which build, and is it
	// the one acting.
	resp, err := getMetrics(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	scraped, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`jarvis_build_info{commit="unknown",go_version="go`, `",version="dev"} 1`, "\njarvis_lease_held 1\n", "\njarvis_lease_epoch 1\n", "\njarvis_incidents_open 0\n"} {
		if !strings.Contains(string(scraped), want) {
			t.Errorf("/metrics has no %q", want)
		}
	}

	written, err := os.ReadFile(j.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	key := regexp.MustCompile(`(?m)^    pickle_key: "([A-Za-z0-9+/]{43})" # example$`).FindSubmatch(written)
	if key == nil || !bytes.Contains(written, []byte("    # Never change it.\n    pickle_key: \"")) {
		t.Fatalf("the file after the first start, want a fresh key after its comment:\n%s", written)
	}
	if !strings.Contains(j.logs.String(), "Wrote fresh secrets in place of generate") || strings.Contains(j.logs.String(), string(key[1])) {
		t.Errorf("the log, want the generated key said once and never shown:\n%s", j.logs.String())
	}

	// The log is the operator's: times to the millisecond, one component
	// a line.
	stamp := regexp.MustCompile(`"time":"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"`)
	for line := range strings.Lines(j.logs.String()) {
		if strings.HasPrefix(line, "{") && (!stamp.MatchString(line) || strings.Count(line, `"component":`) > 1) {
			t.Errorf("a log line without its time in milliseconds, or with two components: %s", line)
		}
	}

	room := j.joinRoom(t, alice)
	j.Stop()
	j.Start()
	notify.waitFor(t, "READY=1", time.Minute)
	evt, err := alice.Say(ctx, room, "!ping")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := alice.WaitFor(ctx, waitReply, j.replyTo(evt)); err != nil {
		t.Fatalf("no answer in the encrypted room after the restart: %v", err)
	}
	if again, _ := os.ReadFile(j.cfgPath); !bytes.Equal(again, written) {
		t.Errorf("the restart changed the file:\n%s\nwant it as after the first start:\n%s", again, written)
	}
}
