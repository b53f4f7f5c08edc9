package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestPingExitStatusAlertsOnce: a cron job that curls its start and then
// its exit status 1, again and again, is one alert in the room, naming the
// status; its next run's start and exit status 0 resolve the alert with
// one reply; !fleet shows it red while it fails and its grace beside its
// cadence.
func TestPingExitStatusAlertsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: BACKUP\n      cadence: 1h\n      grace: 10m\n", port)})
	room := j.joinRoom(t, alice)
	agents := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "BACKUP")}
	agents.waitUp(t, j)

	curl := func(path string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, agents.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+agents.tokens.agent["BACKUP"])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || strings.Count(string(out), "\n") != 1 {
			t.Fatalf("POST %s: %d %q, want 200 on one line", path, resp.StatusCode, out)
		}
	}
	said := func(text string) func(*event.Event) bool {
		return func(evt *event.Event) bool {
			return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), text)
		}
	}

	for _, path := range []string{"/api/ping/start", "/api/ping/1", "/api/ping/start", "/api/ping/1", "/api/ping/fail"} {
		curl(path)
	}
	if _, err := alice.WaitFor(ctx, waitReply, said("BACKUP failed with exit status 1")); err != nil {
		t.Fatalf("no failure alert: %v", err)
	}
	fleet := tesths.Body(j.ask(t, alice, room, "!fleet"))
	if !strings.Contains(fleet, "mode red") || !strings.Contains(fleet, "expected every 1h, grace 10m") || !strings.Contains(fleet, "reported a failure") {
		t.Errorf("!fleet while BACKUP fails says:\n%s\nwant it red, its last failure, its cadence and grace", fleet)
	}

	curl("/api/ping/start")
	curl("/api/ping/0")
	if _, err := alice.WaitFor(ctx, waitReply, said("BACKUP succeeded again")); err != nil {
		t.Fatalf("no all-clear: %v", err)
	}
	for _, text := range []string{"BACKUP failed with exit status", "BACKUP reported a failure", "BACKUP succeeded again"} {
		want := 1
		if text == "BACKUP reported a failure" {
			want = 0
		}
		if n := len(alice.Events(said(text))); n != want {
			t.Errorf("%q was said %d times, want %d", text, n, want)
		}
	}
}
