package integration

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestTripwireAttacks makes two attacks of one person's tripwires on
// everyone else's against the real binary, over the API on loopback and
// in chat: arming tripwires past tripwires.max_per_person is refused (429
// over the API, one reply in chat, both naming the key) and arms nothing;
// and 24 tripwires fetching an endpoint that never answers delay neither
// another person's push when an agent halts, nor anything beyond their
// own fetch budget.
func TestTripwireAttacks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// hang never answers: each request waits until the fetch gives up.
	var inFlight, hanging atomic.Int32
	stop := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hanging.Add(1)
		inFlight.Add(1)
		defer inFlight.Add(-1)
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); hang.Close() })

	const perPerson, workers = 24, 2
	alice := newPerson(t, "alice")
	mallory := newPerson(t, "mallory")
	bob := newPerson(t, "bob")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(`api:
  listen: 127.0.0.1:%d
fleet:
  agents:
    - name: EVE
sources:
  url_fetch:
    enabled: true
    allowed_hosts: [%q]
tripwires:
  tick: 1s
  max_per_person: %d
  fetch_budget:
    time: 15s
    workers: %d
`, port, hang.URL, perPerson, workers)})
	j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE")}
	api.waitUp(t, j)
	malloryDM := j.directRoom(t, mallory)
	bobDM := j.directRoom(t, bob)
	token := regexp.MustCompile(`jtw_[A-Za-z0-9_-]+`).FindString(tesths.Body(j.ask(t, mallory, malloryDM, "!tw token laptop")))
	if token == "" {
		t.Fatal("mallory got no personal token")
	}
	slowDraft := func(i int) map[string]any {
		return map[string]any{"label": fmt.Sprintf("slow %d", i), "rationale": "hold the evaluator",
			"source":    map[string]any{"kind": "url-fetch", "param": fmt.Sprintf("%s/s/%d.json value", hang.URL, i)},
			"condition": map[string]any{"op": "changed"}}
	}
	for i := range perPerson {
		if code, body := api.callWith(t, token, http.MethodPost, "/api/tripwires", slowDraft(i)); code != http.StatusCreated {
			t.Fatalf("arming slow %d: %d %v", i, code, body)
		}
	}
	count := func() int {
		t.Helper()
		code, body := api.callWith(t, token, http.MethodGet, "/api/tripwires", nil)
		list, _ := body["tripwires"].([]any)
		if code != http.StatusOK {
			t.Fatalf("GET /api/tripwires: %d %v", code, body)
		}
		return len(list)
	}

	t.Run("tripwires past max_per_person are refused", func(t *testing.T) {
		code, body := api.callWith(t, token, http.MethodPost, "/api/tripwires", slowDraft(perPerson))
		if msg, _ := body["error"].(string); code != http.StatusTooManyRequests || !strings.Contains(msg, "tripwires.max_per_person") {
			t.Errorf("tripwire %d over the API: %d %v, want 429 naming tripwires.max_per_person", perPerson+1, code, body)
		}
		reply := tesths.Body(j.ask(t, mallory, malloryDM, `!tw arm agent.status eq offline --param EVE --because "one more"`))
		if !strings.HasPrefix(reply, "Not armed") || !strings.Contains(reply, "tripwires.max_per_person") {
			t.Errorf("tripwire %d in chat got %q, want a refusal naming tripwires.max_per_person", perPerson+1, reply)
		}
		if n := count(); n != perPerson {
			t.Errorf("mallory has %d tripwires after the refusals, want %d", n, perPerson)
		}
	})

	t.Run("a halt push does not wait for another person's hanging sources", func(t *testing.T) {
		if body := tesths.Body(j.ask(t, bob, bobDM, `!tw arm breaker.state eq open --param EVE --label "EVE halted" --because "EVE runs the nightly build" --push`)); !strings.HasPrefix(body, "Armed") {
			t.Fatalf("bob's arming got %q", body)
		}
		// Mallory's fetches hang: the evaluator is in the middle of a pass.
		deadline := time.Now().Add(waitReply)
		for hanging.Load() < workers && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if hanging.Load() < workers {
			t.Fatalf("only %d of mallory's fetches reached the endpoint", hanging.Load())
		}
		opened := time.Now()
		if code, body := api.callWith(t, api.tokens.supervisor, http.MethodPost, "/api/breaker/EVE/open", map[string]any{
			"severity": "safety", "reason": "tried to delete the workspace"}); code != http.StatusCreated {
			t.Fatalf("open EVE's breaker: %d %v", code, body)
		}
		if _, err := bob.WaitFor(ctx, waitReply, tripped(j, "EVE halted")); err != nil {
			t.Fatalf("bob's push never came: %v", err)
		}
		took := time.Since(opened)
		t.Logf("bob's push came %s after the breaker opened, %d of mallory's fetches hanging", took.Round(time.Millisecond), inFlight.Load())
		// A fetch gives up after 10 s: a push that waited for one would take
		// that long.
		if took > 5*time.Second {
			t.Errorf("bob's push took %s behind mallory's hanging fetches", took)
		}
	})

	t.Run("another person's skip log is not found", func(t *testing.T) {
		armed := tesths.Body(j.ask(t, bob, bobDM, `!tw arm agent.status eq offline --param EVE --label "EVE gone" --because "EVE runs the nightly build"`))
		bobs := tripwireIDs.FindString(armed)
		if bobs == "" {
			t.Fatalf("bob's arming got %q", armed)
		}
		if code, body := api.callWith(t, token, http.MethodGet, "/api/tripwires/"+bobs+"/skips", nil); code != http.StatusNotFound || body["counts"] != nil {
			t.Errorf("mallory reading bob's skip log: %d %v, want 404 and nothing of it", code, body)
		}
	})
}

// TestHugeSourceValues makes the attack of a url-fetch serving 300 KB
// values that change every other pass, watched by four tripwires of one
// person that push every change, against the real binary: what Jarvis
// keeps of each value (history, trips, notices), read from its database,
// is at most sources.max_value_bytes and a notice stays short, while the
// changes still reach the person.
func TestHugeSourceValues(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const huge = 300 << 10
	var served atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		v := strings.Repeat("x", huge) + fmt.Sprint(n/2)
		fmt.Fprintf(w, `{"a": %q, "b": %q, "c": %q, "d": %q}`, v, v, v, v)
	}))
	t.Cleanup(srv.Close)
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(`api:
  listen: 127.0.0.1:%d
sources:
  url_fetch:
    enabled: true
    allowed_hosts: [%q]
    max_bytes: 4194304
tripwires:
  tick: 1s
`, port, srv.URL)})
	j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	api.waitUp(t, j)
	dm := j.directRoom(t, alice)
	token := regexp.MustCompile(`jtw_[A-Za-z0-9_-]+`).FindString(tesths.Body(j.ask(t, alice, dm, "!tw token laptop")))
	if token == "" {
		t.Fatal("alice got no personal token")
	}
	for _, path := range []string{"a", "b", "c", "d"} {
		if code, body := api.callWith(t, token, http.MethodPost, "/api/tripwires", map[string]any{
			"label": "huge " + path, "rationale": "fill the disk", "cooldown_seconds": 0,
			"source":    map[string]any{"kind": "url-fetch", "param": srv.URL + "/status.json " + path},
			"condition": map[string]any{"op": "changed"}, "action": map[string]any{"journal": true, "push": true},
		}); code != http.StatusCreated {
			t.Fatalf("arming huge %s: %d %v", path, code, body)
		}
	}
	// Two changes reach alice: four pushes each.
	seen := map[id.EventID]bool{}
	if _, err := alice.WaitFor(ctx, 2*waitReply, func(evt *event.Event) bool {
		if tripped(j, "huge")(evt) {
			seen[evt.ID] = true
		}
		return len(seen) >= 8
	}); err != nil {
		t.Fatalf("%d trip pushes reached alice, want 8: %v", len(seen), err)
	}
	for _, evt := range alice.Events(tripped(j, "huge")) {
		if n := len(tesths.Body(evt)); n > 2048 {
			t.Errorf("a trip push of %d bytes reached alice", n)
		}
	}
	st := j.openStore(t)
	for _, q := range []struct{ what, query string }{
		{"a reading in the history", `SELECT COALESCE(MAX(LENGTH(val)), 0) FROM source_reading`},
		{"a trip's value", `SELECT COALESCE(MAX(LENGTH(observed_value)), 0) FROM tripwire_history`},
		{"a journal entry's value", `SELECT COALESCE(MAX(LENGTH(observed_value)), 0) FROM tripwire_journal`},
		{"the last observation", `SELECT COALESCE(MAX(LENGTH(last_observed)), 0) FROM tripwire_state`},
		{"a notice", `SELECT COALESCE(MAX(LENGTH(body)), 0) FROM outbox`},
	} {
		var longest int
		if err := st.DB.QueryRow(ctx, q.query).Scan(&longest); err != nil {
			t.Fatalf("%s: %v", q.query, err)
		}
		// A value is at most the cap (512), quoted as JSON; a notice
		// holds it once with the rule and the reason it was armed.
		if longest > 2048 {
			t.Errorf("the longest %s Jarvis keeps is %d bytes", q.what, longest)
		}
	}
}
