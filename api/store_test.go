package api_test

import (
	"context"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/store"
)

// apiTokens are credentials issued on a test store: one per agent, a
// supervisor's and an orchestrator's.
type apiTokens struct {
	creds        *credential.Service
	agent        map[string]string
	supervisor   string
	orchestrator string
	receiver     string
}

// issueTokens issues the tokens of agents and of the other roles on st.
func issueTokens(t testing.TB, st *store.Store, agents ...string) *apiTokens {
	t.Helper()
	tk := &apiTokens{creds: services.Wiring{Store: st, Clock: core.SystemClock{}}.Credentials(),
		agent: map[string]string{}}
	issue := func(role credential.Role, agent string) string {
		token, _, err := tk.creds.Issue(context.Background(), role, agent)
		if err != nil {
			t.Fatalf("issue %s token %s: %v", role, agent, err)
		}
		return token
	}
	for _, a := range agents {
		tk.agent[a] = issue(credential.Agent, a)
	}
	tk.supervisor = issue(credential.Supervisor, "")
	tk.orchestrator = issue(credential.Orchestrator, "")
	tk.receiver = issue(credential.Receiver, "")
	return tk
}
