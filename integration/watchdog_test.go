package integration

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestWatchdogPings: a Healthchecks-like receiver on loopback hears the
// real binary's pings while it is healthy; with its homeserver killed and
// a halt notice stuck in the outbox, every ping goes to /fail and says
// which part failed (without an error's text, which names hosts and
// accounts), and no healthy ping comes while it stays stuck.
func TestWatchdogPings(t *testing.T) {
	t.Parallel()
	own := ownHomeserver(t)
	alice := newPersonOn(t, own, "alice")
	pings := make(chan string, 100)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		select {
		case pings <- r.Method + " " + r.URL.Path + " " + string(body):
		default:
		}
	}))
	defer receiver.Close()
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{hs: own, admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n"+
		"watchdog:\n  ping_url: %s/ping/5e1f\n  period: 1s\n  sender_stall: 2s\n", port, receiver.URL)})
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	// Tokens are issued once Jarvis is up, its store upgraded.
	api.waitUp(t, j)
	api.tokens = j.issueTokens(t, "EVE")

	// next is the next ping, within a deadline.
	next := func(within time.Duration) string {
		t.Helper()
		select {
		case p := <-pings:
			return p
		case <-time.After(within):
			t.Fatalf("no ping within %s", within)
			return ""
		}
	}
	if p := next(30 * time.Second); p != "POST /ping/5e1f " {
		t.Fatalf("the first ping is %q, want a healthy one (nothing while starting)", p)
	}
	room := j.joinRoom(t, alice)
	status := tesths.Body(j.ask(t, alice, room, "!sys status"))
	if host := strings.TrimPrefix(receiver.URL, "http://"); !strings.Contains(status, "pinging "+host+" every 1s") ||
		!strings.Contains(status, "healthy; answered 200") || strings.Contains(status, "5e1f") {
		t.Errorf("!sys status shows the watchdog as:\n%s\nwant its host alone, pinged every 1s, healthy", status)
	}

	if err := own.Kill(); err != nil {
		t.Fatal(err)
	}
	if code, body := api.callWith(t, api.tokens.supervisor, http.MethodPost, "/api/breaker/EVE/open", map[string]any{
		"severity": "safety", "reason": "drifted"}); code != http.StatusCreated {
		t.Fatalf("open EVE's breaker: %d %v", code, body)
	}
	var fail string
	for fail == "" {
		switch p := next(30 * time.Second); {
		case strings.HasPrefix(p, "POST /ping/5e1f/fail "):
			fail = p
		case p != "POST /ping/5e1f ":
			t.Fatalf("unexpected ping %q", p)
		}
	}
	if !strings.Contains(fail, "sender: a notice has waited") && !strings.Contains(fail, "sync:") {
		t.Errorf("the /fail ping %q does not say what is wrong", fail)
	}
	if strings.Contains(fail, "127.0.0.1") || strings.Contains(fail, j.UserID.String()) {
		t.Errorf("the /fail ping %q shows the receiver an address or an account", fail)
	}
	t.Logf("the receiver heard %q", fail)
	for range 3 {
		if p := next(10 * time.Second); !strings.HasPrefix(p, "POST /ping/5e1f/fail ") {
			t.Errorf("a ping while the homeserver is down: %q, want /fail", p)
		}
	}
}
