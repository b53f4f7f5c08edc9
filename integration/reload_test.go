package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentTokenRotatesOnHangup: the operator changes api.agent_token in
// the file and sends SIGHUP; the old token stops working and the new one
// works, without a restart.
func TestAgentTokenRotatesOnHangup(t *testing.T) {
	const oldToken, newToken = "agent-token-before-rotation", "agent-token-after-rotation"
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\n  agent_token: %s\nfleet:\n  agents:\n    - name: EVE\n", port, oldToken)})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	(agentAPI{base: base}).waitUp(t, j)

	heartbeat := func(token string) int {
		t.Helper()
		body := fmt.Sprintf(`{"agent":"EVE","cycle":"C-1","timestamp":%q,"mii":0.9,"mode_self_report":"green"}`, time.Now().UTC().Format(time.RFC3339))
		req, _ := http.NewRequest(http.MethodPost, base+"/api/agents/heartbeat", bytes.NewBufferString(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := heartbeat(oldToken); code != http.StatusOK {
		t.Fatalf("heartbeat with the configured token: %d", code)
	}

	cfg, err := os.ReadFile(j.cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(j.cfgPath, []byte(strings.Replace(string(cfg), oldToken, newToken, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := j.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for heartbeat(newToken) != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatalf("the new token was never accepted\n%s", j.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := heartbeat(oldToken); code != http.StatusUnauthorized {
		t.Errorf("the old token still gets %d after the rotation, want 401", code)
	}
}
