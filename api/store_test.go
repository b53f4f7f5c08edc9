package api_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// openAPIStore opens a fresh store on engine: a SQLite file in
// t.TempDir(), or a new database on the PostgreSQL test server (skipped,
// saying why, when there is none).
func openAPIStore(t testing.TB, engine string) *store.Store {
	t.Helper()
	cfg := store.Config{Type: store.SQLite, URI: filepath.Join(t.TempDir(), "jarvis.db")}
	if engine == store.Postgres {
		cfg = store.Config{Type: store.Postgres, URI: testdb.Postgres(t)}
	}
	st, err := store.Open(context.Background(), cfg, zerolog.Nop())
	if err != nil {
		t.Fatalf("open %s store: %v", engine, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// apiTokens are credentials issued on a test store: one per agent, a
// supervisor's and an orchestrator's.
type apiTokens struct {
	creds        *credential.Service
	agent        map[string]string
	supervisor   string
	orchestrator string
}

// issueTokens issues the tokens of agents and of the two other roles on st.
func issueTokens(t testing.TB, st *store.Store, agents ...string) *apiTokens {
	t.Helper()
	tk := &apiTokens{creds: credential.NewService(credential.Deps{Store: st.Credentials(), Clock: core.SystemClock{}}),
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
	return tk
}

// onEachEngine runs a benchmark once on SQLite and once on PostgreSQL.
func onEachEngine(b *testing.B, bench func(b *testing.B, engine string)) {
	for _, engine := range []string{store.SQLite, store.Postgres} {
		b.Run(engine, func(b *testing.B) { bench(b, engine) })
	}
}
