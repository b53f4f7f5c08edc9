package integration

import (
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTokenRotatesWhileRunning: the operator issues EVE a new token and
// revokes the old one with the CLI while Jarvis runs; the new token works
// at once and the old one stops working within seconds, without a restart
// or a signal.
func TestTokenRotatesWhileRunning(t *testing.T) {
	t.Parallel()
	port := freeLoopbackPort(t)
	j := newJarvis(t, options{extra: fmt.Sprintf("api:\n  listen: 127.0.0.1:%d\nfleet:\n  agents:\n    - name: EVE\n", port)})
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	(agentAPI{base: base}).waitUp(t, j)
	oldToken := j.issueToken(t, "agent", "EVE")

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
		t.Fatalf("heartbeat with the issued token: %d", code)
	}

	newToken := j.issueToken(t, "agent", "EVE")
	if code := heartbeat(newToken); code != http.StatusOK {
		t.Errorf("the new token gets %d, want 200", code)
	}
	list, err := exec.Command(jarvisBin, "token", "list", "--config", j.cfgPath).CombinedOutput()
	if err != nil {
		t.Fatalf("token list: %v\n%s", err, list)
	}
	if strings.Contains(string(list), oldToken) || strings.Contains(string(list), newToken) {
		t.Fatalf("token list shows a secret:\n%s", list)
	}
	// The first agent row is the old token (oldest first); revoke it.
	var oldID string
	for _, line := range strings.Split(string(list), "\n") {
		if f := strings.Fields(line); len(f) > 2 && f[1] == "agent" && f[2] == "EVE" {
			oldID = f[0]
			break
		}
	}
	if out, err := exec.Command(jarvisBin, "token", "revoke", "--config", j.cfgPath, oldID).CombinedOutput(); err != nil {
		t.Fatalf("token revoke %s: %v\n%s", oldID, err, out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for heartbeat(oldToken) != http.StatusUnauthorized {
		if time.Now().After(deadline) {
			t.Fatalf("the revoked token was still accepted 10 s later\n%s", j.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := heartbeat(newToken); code != http.StatusOK {
		t.Errorf("the new token gets %d after the revocation, want 200", code)
	}
}
