package integration

import (
	"os/exec"
	"strings"
	"testing"
)

// worker is the agent that claims and works cards in the tests.
const worker = "EVE"

// issueToken issues an API token with the real `jarvis token issue`, on the
// test Jarvis's configuration, and returns it: the last word of the
// command's output. agent is "" for the supervisor and orchestrator roles.
func (j *jarvis) issueToken(t testing.TB, role, agent string) string {
	t.Helper()
	args := []string{"token", "issue", "--config", j.cfgPath, "--role", role}
	if agent != "" {
		args = append(args, "--agent", agent)
	}
	out, err := exec.Command(jarvisBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("jarvis %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	words := strings.Fields(string(out))
	if len(words) == 0 || !strings.HasPrefix(words[len(words)-1], "jat_") {
		t.Fatalf("jarvis %s printed no token:\n%s", strings.Join(args, " "), out)
	}
	return words[len(words)-1]
}

// roleTokens are a test's API tokens: one per agent, a supervisor's and an
// orchestrator's.
type roleTokens struct {
	agent        map[string]string
	supervisor   string
	orchestrator string
}

// issueTokens issues the tokens of agents (configured in fleet.agents) and
// of the supervisor and the orchestrator.
func (j *jarvis) issueTokens(t testing.TB, agents ...string) roleTokens {
	t.Helper()
	tk := roleTokens{agent: map[string]string{}, supervisor: j.issueToken(t, "supervisor", ""),
		orchestrator: j.issueToken(t, "orchestrator", "")}
	for _, a := range agents {
		tk.agent[a] = j.issueToken(t, "agent", a)
	}
	return tk
}

// forRoute is the token of whoever sends body to path: the agent the body
// names for its reports, the worker for card moves and questions, the
// supervisor for breaker changes, the orchestrator for the rest.
func (tk roleTokens) forRoute(method, path string, body any) string {
	agent := ""
	if m, ok := body.(map[string]any); ok {
		agent, _ = m["agent"].(string)
	}
	switch {
	case strings.HasPrefix(path, "/api/agents/") && method == "POST",
		path == "/api/attestations", path == "/api/vault/seal/attest",
		strings.HasSuffix(path, "/state"), strings.HasSuffix(path, "/needs-decision"), path == "/api/approvals", strings.HasSuffix(path, "/signoffs"):
		if agent == "" {
			agent = worker
		}
		return tk.agent[agent]
	case strings.HasPrefix(path, "/api/breaker/") && method == "POST":
		return tk.supervisor
	}
	return tk.orchestrator
}
