package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"maunium.net/go/mautrix/event"
)

// hostile is the insiders' workload TestSoak adds when
// JARVIS_SOAK_HOSTILE is set, every part as fast as Jarvis answers: one
// compromised agent token writing 55 KB journal entries, reading its
// journal back six at a time and asking for approvals; and one person
// (mallory) with four tripwires on a url-fetch that serves a new 300 KB
// value on every read, twenty on an endpoint that never answers, and
// eight backtests at a time. What Jarvis answered is counted by route and
// status.
type hostile struct {
	stop   chan struct{}
	wg     sync.WaitGroup
	mu     sync.Mutex
	codes  map[string]int
	huge   *httptest.Server
	hang   *httptest.Server
	served atomic.Int64
}

// newHostile starts the two endpoints mallory's tripwires read; extra is
// the configuration that lets url-fetch read them.
func newHostile(t *testing.T) (*hostile, string) {
	h := &hostile{stop: make(chan struct{}), codes: map[string]int{}}
	h.huge = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v := strings.Repeat("x", 300<<10) + fmt.Sprint(h.served.Add(1))
		fmt.Fprintf(w, `{"a": %q, "b": %q, "c": %q, "d": %q}`, v, v, v, v)
	}))
	hangStop := make(chan struct{})
	h.hang = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-hangStop:
		}
	}))
	t.Cleanup(func() { close(hangStop); h.hang.Close(); h.huge.Close() })
	extra := fmt.Sprintf("sources:\n  url_fetch:\n    enabled: true\n    allowed_hosts: [%q, %q]\n    max_bytes: 4194304\n",
		h.huge.URL, h.hang.URL)
	return h, extra
}

// start arms mallory's tripwires and starts every part of the workload.
func (h *hostile) start(t *testing.T, l *loaded, mallory *tesths.Person) {
	dm := l.j.directRoom(t, mallory)
	personal := regexp.MustCompile(`jtw_[A-Za-z0-9_-]+`).FindString(tesths.Body(l.j.ask(t, mallory, dm, "!tw token laptop")))
	if personal == "" {
		t.Fatal("mallory got no personal token")
	}
	draft := func(label, param string) map[string]any {
		return map[string]any{"label": label, "rationale": "an insider's load", "cooldown_seconds": 0,
			"source":    map[string]any{"kind": "url-fetch", "param": param},
			"condition": map[string]any{"op": "changed"}, "action": map[string]any{"journal": true, "push": true}}
	}
	var drafts []map[string]any
	for _, path := range []string{"a", "b", "c", "d"} {
		drafts = append(drafts, draft("huge "+path, h.huge.URL+"/status.json "+path))
	}
	for i := range 20 {
		drafts = append(drafts, draft(fmt.Sprintf("slow %d", i), fmt.Sprintf("%s/s/%d.json value", h.hang.URL, i)))
	}
	for _, d := range drafts {
		if code, body := hostileDo(l.api, personal, http.MethodPost, "/api/tripwires", d); code != http.StatusCreated {
			t.Fatalf("arming %s: %d %s", d["label"], code, body)
		}
	}
	agent := l.agents[0]
	token := l.tokens.Agents[agent]
	content := strings.Repeat("a compromised agent's journal ", 55<<10/30)
	sum := sha256.Sum256([]byte(content))
	var n atomic.Int64
	h.loop(1, func() (string, int) {
		i := n.Add(1)
		code, _ := hostileDo(l.api, token, http.MethodPost, "/api/agents/journal", map[string]any{
			"cycle": "flood", "entry_id": fmt.Sprintf("flood-%d", i), "title": "flood", "content": content,
			"content_signature": "sha256:" + hex.EncodeToString(sum[:]), "signal_weight": 0.1,
			"timestamp": time.Now().UTC().Format(time.RFC3339)})
		return "POST /api/agents/journal", code
	})
	h.loop(6, func() (string, int) {
		code, _ := hostileDo(l.api, token, http.MethodGet, "/api/agents/journal?agent="+agent+"&cycle=flood", nil)
		return "GET /api/agents/journal", code
	})
	h.loop(1, func() (string, int) {
		i := n.Add(1)
		code, _ := hostileDo(l.api, token, http.MethodPost, "/api/approvals", map[string]any{
			"action": fmt.Sprintf("drop production database %d", i), "reason": "flood the room"})
		return "POST /api/approvals", code
	})
	h.loop(8, func() (string, int) {
		code, _ := hostileDo(l.api, personal, http.MethodPost, "/api/tripwires/backtest", drafts[0])
		return "POST /api/tripwires/backtest", code
	})
}

// loop runs n goroutines, each calling call until stop and counting what
// it answers.
func (h *hostile) loop(n int, call func() (route string, code int)) {
	for range n {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			for {
				select {
				case <-h.stop:
					return
				default:
				}
				route, code := call()
				h.mu.Lock()
				h.codes[fmt.Sprintf("%s %d", route, code)]++
				h.mu.Unlock()
				if code == 0 || code == http.StatusTooManyRequests {
					// Refused or unanswered: the next try comes a little later,
					// as a client that reads Retry-After would.
					select {
					case <-h.stop:
					case <-time.After(50 * time.Millisecond):
					}
				}
			}
		}()
	}
}

// halt stops the workload and returns what Jarvis answered, by route and
// status.
func (h *hostile) halt() map[string]int {
	close(h.stop)
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.codes
}

// requests numbers the requests hostile sends.
var requests atomic.Int64

// hostileDo sends one request and returns its status (0 when it got no answer)
// and the start of its body.
func hostileDo(base, token, method, path string, body any) (int, string) {
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return 0, err.Error()
		}
		reader = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, base+path, reader)
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	// Every request is a new one: an approval request needs its key.
	req.Header.Set("Idempotency-Key", fmt.Sprintf("hostile-%d", requests.Add(1)))
	client := http.Client{Timeout: 30 * time.Second}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, string(head)
}

// hostileDatabaseMiB is the most the database (file and write-ahead log)
// may hold while the insiders' workload runs beside the soak's.
const hostileDatabaseMiB = 256

// checkHostileBounds checks every sample against the insiders' bounds:
// resident memory under 200 MiB, the database under hostileDatabaseMiB.
func checkHostileBounds(t *testing.T, samples [][]float64) {
	t.Helper()
	var rss, db float64
	for _, s := range samples {
		rss, db = max(rss, s[0]), max(db, s[3])
	}
	t.Logf("under the insiders' load: RSS at most %.1f MiB, the database at most %.1f MiB", rss, db)
	if rss >= 200 {
		t.Errorf("Jarvis's resident memory reached %.1f MiB, want under 200", rss)
	}
	if db >= hostileDatabaseMiB {
		t.Errorf("the database reached %.1f MiB, want under %d", db, hostileDatabaseMiB)
	}
}

// haltUnderLoad opens agent's breaker with the supervisor's token and
// returns how long after the request its halt notice was made in the
// room (the event's own timestamp, so the admin's sync does not count).
func haltUnderLoad(t *testing.T, l *loaded, agent string) time.Duration {
	t.Helper()
	sent := time.Now()
	code, body := hostileDo(l.api, l.tokens.Supervisor, http.MethodPost, "/api/breaker/"+agent+"/open",
		map[string]any{"severity": "safety", "reason": "halted in the middle of the insiders' load"})
	if code != http.StatusCreated {
		t.Fatalf("open %s's breaker: %d %s", agent, code, body)
	}
	notice, err := l.admin.WaitFor(context.Background(), waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(l.room, l.j.UserID)(evt) && strings.Contains(tesths.Body(evt), "halted in the middle of the insiders' load")
	})
	if err != nil {
		t.Fatalf("no halt notice for %s: %v", agent, err)
	}
	return time.UnixMilli(notice.Timestamp).Sub(sent).Round(time.Millisecond)
}
