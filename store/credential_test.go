package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/credential"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestCredentials: tokens are stored as their hash with the agent's
// signing key, listed without secrets, touched, and revoked; a revocation
// made through another store on the same database (the CLI while Jarvis
// runs) is seen within credential.CacheTTL.
func TestCredentials(t *testing.T) {
	ctx := context.Background()
	cfg := testdb.NewConfig(t, testEngine)
	jarvis, cli := testdb.OpenConfig(t, cfg), testdb.OpenConfig(t, cfg)
	clock := coretest.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	running := services.Wiring{Store: jarvis, Clock: clock}.Credentials()
	admin := services.Wiring{Store: cli, Clock: clock}.Credentials(func(d *credential.Deps) {
		d.Agents = func() []string { return []string{"EVE", "ZEUS"} }
	})

	token, eve, err := admin.Issue(ctx, credential.Agent, "eve")
	if err != nil {
		t.Fatalf("issue: %v", err)
	}
	if eve.Agent != "EVE" {
		t.Errorf("agent %q, want the configured spelling EVE", eve.Agent)
	}
	var stored int
	if err := jarvis.DB.QueryRow(ctx, "SELECT COUNT(*) FROM api_credential WHERE hash = $1 OR signing_key = $1", token).Scan(&stored); err != nil || stored != 0 {
		t.Errorf("the plaintext token is stored (%d rows, %v)", stored, err)
	}
	p, err := running.Authenticate(ctx, token)
	if err != nil || p.Role != credential.Agent || p.Agent != "EVE" || string(p.SigningKey) != string(credential.SigningKey(token)) {
		t.Fatalf("Authenticate = %+v, %v; want EVE's agent credential with its signing key", p, err)
	}
	list, err := admin.List(ctx)
	if err != nil || len(list) != 1 || list[0].ID != eve.ID || !list[0].LastUsedAt.Equal(clock.Now()) {
		t.Errorf("List = %+v, %v; want EVE's token, last used now", list, err)
	}

	if err := admin.Revoke(ctx, eve.ID); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	clock.Advance(credential.CacheTTL)
	if _, err := running.Authenticate(ctx, token); !errors.Is(err, core.ErrUnauthorized) {
		t.Errorf("a token revoked by another process, %s later: %v, want ErrUnauthorized", credential.CacheTTL, err)
	}
	if err := admin.Revoke(ctx, eve.ID); !errors.Is(err, core.ErrNotFound) {
		t.Errorf("revoking twice: %v, want ErrNotFound", err)
	}
	for _, tt := range []struct {
		name  string
		role  credential.Role
		agent string
		field string
	}{
		{"an unknown role", "admin", "", "role"},
		{"an agent token without its agent", credential.Agent, "", "agent"},
		{"an agent not configured", credential.Agent, "MALLORY", "agent"},
		{"a supervisor token for an agent", credential.Supervisor, "EVE", "agent"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := admin.Issue(ctx, tt.role, tt.agent)
			var fe *core.FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Errorf("Issue = %v, want an error naming %s", err, tt.field)
			}
		})
	}
	if list, _ := admin.List(ctx); len(list) != 0 {
		t.Errorf("refused issues stored %+v", list)
	}
}

// TestTouchCredentials: the last uses of several credentials are written
// together, each to its own credential, and a use earlier than the one
// stored changes nothing.
func TestTouchCredentials(t *testing.T) {
	ctx := context.Background()
	st := testdb.OpenStore(t, testEngine)
	q := st.Credentials()
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"cred_a", "cred_b", "cred_c"} {
		c := credential.Credential{ID: id, Role: credential.Supervisor, CreatedAt: at}
		if err := q.InsertCredential(ctx, c, "hash-"+id, nil); err != nil {
			t.Fatalf("insert %d: %v", i, err)
		}
	}
	if err := q.TouchCredentials(ctx, map[string]time.Time{"cred_a": at.Add(time.Minute), "cred_b": at.Add(2 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := q.TouchCredentials(ctx, map[string]time.Time{"cred_a": at.Add(30 * time.Second), "cred_c": at.Add(3 * time.Minute)}); err != nil {
		t.Fatal(err)
	}
	want := map[string]time.Time{"cred_a": at.Add(time.Minute), "cred_b": at.Add(2 * time.Minute), "cred_c": at.Add(3 * time.Minute)}
	list, err := q.ListCredentials(ctx)
	if err != nil || len(list) != len(want) {
		t.Fatalf("ListCredentials = %+v, %v", list, err)
	}
	for _, c := range list {
		if !c.LastUsedAt.Equal(want[c.ID]) {
			t.Errorf("%s last used %s, want %s", c.ID, c.LastUsedAt, want[c.ID])
		}
	}
}
