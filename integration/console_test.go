package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/store"
)

// terminal is `jarvis console` in a pseudo-terminal, read as a person
// reads it: the text it printed, without the terminal's escape sequences.
type terminal struct {
	t      *testing.T
	pty    *os.File
	mu     sync.Mutex
	raw    bytes.Buffer
	exited chan struct{}
	cmd    *exec.Cmd
}

// escapes are the terminal's control sequences: CSI, OSC, and the
// two-character ones (save and restore the cursor).
var escapes = regexp.MustCompile(`\x1b(\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[0-9A-Za-z=>])|\r`)

// openConsole starts `jarvis console` on the configuration in a terminal
// of 40 rows by 200 columns, its history in a fresh directory.
func openConsole(t *testing.T, cfgPath string) *terminal {
	t.Helper()
	cmd := exec.Command(jarvisBin, "console", "--config", cfgPath)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 200})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, pty: f, exited: make(chan struct{}), cmd: cmd}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.raw.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	go func() {
		_ = cmd.Wait()
		close(term.exited)
	}()
	t.Cleanup(func() {
		term.leave()
		f.Close()
		if t.Failed() {
			t.Logf("console screen:\n%s", term.screen())
		}
	})
	term.waitFor("Ctrl-D leaves")
	return term
}

// screen is everything the console printed, as text.
func (c *terminal) screen() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return escapes.ReplaceAllString(c.raw.String(), "")
}

// typeLine types a line and Enter.
func (c *terminal) typeLine(line string) {
	c.t.Helper()
	if _, err := c.pty.Write([]byte(line + "\r")); err != nil {
		c.t.Fatal(err)
	}
}

// waitFor waits until text shows after what was on the screen when the
// previous wait ended... anywhere on it, and returns the screen.
func (c *terminal) waitFor(text string) string {
	c.t.Helper()
	deadline := time.Now().Add(waitReply)
	for time.Now().Before(deadline) {
		if s := c.screen(); strings.Contains(s, text) {
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	c.t.Fatalf("the console never showed %q", text)
	return ""
}

// leave presses Ctrl-D and waits for the console to end; it kills a
// console that did not, and says so.
func (c *terminal) leave() (left bool) {
	select {
	case <-c.exited:
		return true
	default:
	}
	_, _ = c.pty.Write([]byte{4})
	select {
	case <-c.exited:
		return true
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.exited
		return false
	}
}

// consoleUser is who the console names the person at the terminal.
func consoleUser(t *testing.T) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	return "console:" + u.Username
}

// TestConsole talks to Jarvis in a terminal with no homeserver at all:
// the console holds the workspace lease and serves the agents' API. A
// person types !ping, proposes a tripwire in a sentence and arms it with
// y, asks !fleet, resumes a breaker an agent's supervisor opened over the
// API, and answers a worker's question by its option number; then -c runs
// one command for a script, with its exit status.
func TestConsole(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	addr := cardAPIListen(t)
	db := testdb.NewConfig(t, store.SQLite)
	cfgPath := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf("homeserver:\n  url: \"\"\nstore:\n  uri: %s\napi:\n  listen: %s\nfleet:\n  agents:\n    - name: %s\n      cadence: 1h\n",
		db.URI, addr, worker)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	j := &jarvis{t: t, cfgPath: cfgPath, Store: db}
	api := cardAPI{t: t, base: "http://" + addr, tokens: j.issueTokens(t, worker)}
	me := consoleUser(t)

	c := openConsole(t, cfgPath)
	api.waitUp()
	c.waitFor("lease: this console")

	// Ctrl-C cancels the line being typed: nothing of it reaches Jarvis.
	if _, err := c.pty.Write([]byte("!nosuch\x03")); err != nil {
		t.Fatal(err)
	}
	c.typeLine("!ping")
	c.waitFor("pong (your message took")
	if strings.Contains(c.screen(), "Unknown command") {
		t.Errorf("a line cancelled with Ctrl-C was handed to Jarvis:\n%s", c.screen())
	}

	c.typeLine("let me know if EVE goes offline")
	c.waitFor("Shall I watch this for you?")
	c.waitFor("Confirm? [y/N]")
	c.typeLine("y")
	c.waitFor("↳ Armed")
	c.typeLine("!tw list")
	c.waitFor("EVE")

	c.typeLine("!fleet")
	c.waitFor("never reported")

	var halt struct {
		Event struct {
			ID string `json:"id"`
		} `json:"event"`
	}
	api.call(http.MethodPost, "/api/breaker/eve/open", nil, map[string]any{
		"severity": "safety", "reason": "tried to delete the workspace", "evidence": []string{"rm -rf /srv"},
	}, http.StatusCreated, &halt)
	c.waitFor("tried to delete the workspace")
	c.waitFor("open breakers: EVE")
	c.typeLine("!breaker resume " + halt.Event.ID)
	c.waitFor("Resumed EVE into a half-open trial")
	if s := c.screen(); !strings.Contains(s, "↳") || !strings.Contains(s, me) {
		t.Errorf("the halt notice's edit does not name %s as who resumed it", me)
	}

	var set struct {
		Cards []struct {
			ID string `json:"id"`
		} `json:"cards"`
	}
	api.call(http.MethodPost, "/api/cardsets", map[string]string{"Idempotency-Key": "console-set"}, map[string]any{
		"cards": []map[string]any{{"ref": "db", "goal": "Pick the report store", "acceptance": []string{"a store is chosen"}, "priority": "P2"}},
	}, http.StatusOK, &set)
	cardID := set.Cards[0].ID
	api.call(http.MethodPost, "/api/cards/"+cardID+"/state", nil, map[string]string{"state": "claimed"}, http.StatusOK, nil)
	api.call(http.MethodPost, "/api/cards/"+cardID+"/needs-decision", nil, map[string]any{
		"question": "Which store for the reports?", "options": []string{"Keep SQLite", "Use Postgres"},
		"checkpoint": map[string]string{"branch": "feat/db", "note": "groundwork pushed"},
	}, http.StatusCreated, nil)
	c.waitFor("Which store for the reports?")
	c.waitFor("Option number")
	c.waitFor("questions waiting: 1")
	c.typeLine("2")
	c.waitFor("Answered by " + me)
	var got apiCard
	api.call(http.MethodGet, "/api/cards/"+cardID, nil, nil, http.StatusOK, &got)
	if n := len(got.Amendments); n == 0 || got.Amendments[n-1].Option != 2 || got.Amendments[n-1].Author != me {
		t.Errorf("the worker reads the answer as %+v, want option 2 by %s", got.Amendments, me)
	}

	// One command for a script, while the open console holds the lease.
	run := func(line string) (string, int) {
		out, err := exec.Command(jarvisBin, "console", "--config", cfgPath, "-x", line).CombinedOutput()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	if out, code := run("!fleet"); code != 0 || !strings.Contains(out, "EVE") {
		t.Errorf("-x '!fleet': exit %d, %q; want 0 and the fleet", code, out)
	}
	if out, code := run("!nosuch"); code != 1 || !strings.Contains(out, "Unknown command") {
		t.Errorf("-x '!nosuch': exit %d, %q; want 1 and the refusal", code, out)
	}
	// The console has no Matrix connection of its own: its status says so,
	// and gives every other section.
	if out, code := run("!sys status"); code != 0 || !strings.Contains(out, "this workspace is used from the console alone") ||
		!strings.Contains(out, "Outbox") {
		t.Errorf("-x '!sys status': exit %d, %q; want 0 and the status", code, out)
	}
	if !c.leave() {
		t.Error("Ctrl-D did not end the console")
	}
}

// TestConsoleBesideJarvis runs the console while `jarvis run` holds the
// workspace lease: the console takes nothing over, what is typed in it
// is acted on by the running Jarvis, and a halt shows in the room and in
// the console, once each.
func TestConsoleBesideJarvis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID},
		extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: eve\n    - name: hal\n", port)})
	room := j.joinRoom(t, alice)
	api := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t)}
	api.waitUp(t, j)

	c := openConsole(t, j.cfgPath)
	c.waitFor("lease: ")
	if strings.Contains(c.screen(), "lease: this console") || strings.Contains(c.screen(), "lease: no Jarvis runs") {
		t.Fatalf("the console took the lease from the running Jarvis:\n%s", c.screen())
	}
	c.typeLine("!ping")
	c.waitFor("pong (your message took")

	code, out := api.call(t, http.MethodPost, "/api/breaker/eve/open", map[string]any{
		"severity": "safety", "reason": "tried to delete the workspace", "evidence": []string{"rm -rf /srv"},
	})
	if code != http.StatusCreated {
		t.Fatalf("open: %d %v", code, out)
	}
	eventID, _ := out["event"].(map[string]any)["id"].(string)
	isHalt := func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && evt.Content.AsMessage().RelatesTo.GetReplaceID() == "" &&
			strings.Contains(tesths.Body(evt), "tried to delete the workspace")
	}
	if _, err := alice.WaitFor(ctx, waitReply, isHalt); err != nil {
		t.Fatalf("the halt never reached the room: %v", err)
	}
	c.waitFor("circuit breaker open for agent eve")
	// Both had time to show it twice, were they to.
	time.Sleep(3 * time.Second)
	if n := len(alice.Events(isHalt)); n != 1 {
		t.Errorf("the room got the halt %d times, want once", n)
	}
	if n := strings.Count(c.screen(), "circuit breaker open for agent eve"); n != 1 {
		t.Errorf("the console showed the halt %d times, want once", n)
	}
	if !strings.Contains(c.screen(), eventID) {
		t.Errorf("the console's halt does not name its event %s", eventID)
	}

	// Closed and reopened, the console shows what arrived meanwhile,
	// marked, and not again what it showed before.
	c.leave()
	code, out = api.call(t, http.MethodPost, "/api/breaker/hal/open", map[string]any{
		"severity": "safety", "reason": "pushed to main unreviewed", "evidence": []string{"git push"},
	})
	if code != http.StatusCreated {
		t.Fatalf("open: %d %v", code, out)
	}
	if _, err := alice.WaitFor(ctx, waitReply, func(evt *event.Event) bool {
		return tesths.MessageFrom(room, j.UserID)(evt) && strings.Contains(tesths.Body(evt), "pushed to main unreviewed")
	}); err != nil {
		t.Fatalf("the second halt never reached the room: %v", err)
	}
	again := openConsole(t, j.cfgPath)
	s := again.waitFor("Up to now")
	if !strings.Contains(s, "While the console was closed: 1 notice") || !strings.Contains(s, "pushed to main unreviewed") {
		t.Errorf("the reopened console does not show, marked, the halt that came while it was closed:\n%s", s)
	}
	if strings.Contains(s, "tried to delete the workspace") {
		t.Errorf("the reopened console shows again what it showed before:\n%s", s)
	}
}
