package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
)

// TestOneLineHeartbeat: what `curl -fsS -X POST -H "Authorization: Bearer
// $TOKEN" …` sends, with no body, is a heartbeat on both
// /api/agents/heartbeat and /api/ping, answered on one line, and !fleet
// shows both agents reported with the defaults; a heartbeat with three bad
// fields gets one problem naming all three and changes nothing; a path
// with no route is a problem too.
func TestOneLineHeartbeat(t *testing.T) {
	t.Parallel()
	alice := newPerson(t, "alice")
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{admins: []id.UserID{alice.UserID}, extra: fmt.Sprintf(
		"api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n      cadence: 1h\n    - name: BACKUP\n      cadence: 1h\n", port)})
	room := j.joinRoom(t, alice)
	agents := agentAPI{base: fmt.Sprintf("http://127.0.0.1:%d", port), tokens: j.issueTokens(t, "EVE", "BACKUP")}
	agents.waitUp(t, j)

	curl := func(agent, path, body string) (int, string, string) {
		t.Helper()
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequest(http.MethodPost, agents.base+path, rd)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+agents.tokens.agent[agent])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Content-Type"), string(out)
	}
	before := time.Now().UTC().Format(time.DateOnly)
	for _, c := range []struct{ agent, path string }{{"EVE", "/api/agents/heartbeat"}, {"BACKUP", "/api/ping"}} {
		code, _, out := curl(c.agent, c.path, "")
		if code != http.StatusOK || strings.Count(out, "\n") != 1 || !strings.Contains(out, `"breaker_state":"closed"`) {
			t.Fatalf("%s POST %s without a body: %d %q, want 200 on one line", c.agent, c.path, code, out)
		}
	}

	code, contentType, out := curl("EVE", "/api/agents/heartbeat", `{"mii": "high", "mode_self_report": "blue", "notes": 7}`)
	var problem struct {
		Type   string `json:"type"`
		Errors []struct {
			Field string `json:"field"`
		} `json:"errors"`
	}
	_ = json.Unmarshal([]byte(out), &problem)
	if code != http.StatusBadRequest || contentType != "application/problem+json" || problem.Type != "urn:jarvis:problem:validation" ||
		len(problem.Errors) != 3 || problem.Errors[0].Field != "mii" || problem.Errors[1].Field != "mode_self_report" || problem.Errors[2].Field != "notes" {
		t.Errorf("three bad fields: %d %s %s, want one validation problem naming mii, mode_self_report and notes", code, contentType, out)
	}
	if code, contentType, out := curl("EVE", "/api/agent/heartbeat", ""); code != http.StatusNotFound || contentType != "application/problem+json" {
		t.Errorf("no such route: %d %s %s, want a 404 problem", code, contentType, out)
	}

	fleet := tesths.Body(j.ask(t, alice, room, "!fleet"))
	after := time.Now().UTC().Format(time.DateOnly)
	for _, agent := range []string{"EVE", "BACKUP"} {
		row := ""
		for _, line := range strings.Split(fleet, "\n") {
			if strings.Contains(line, agent+" ") {
				row = line
			}
		}
		if !strings.Contains(row, agent+" online") || !strings.Contains(row, "MII 1.00 · mode green") ||
			!strings.Contains(row, "("+before+")") && !strings.Contains(row, "("+after+")") {
			t.Errorf("!fleet shows %s as %q, want online with the defaults (MII 1.00, mode green, cycle %s)\n%s", agent, row, after, fleet)
		}
	}
}
