package app

import (
	"context"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/breaker"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestMigrateCLI copies a stopped workspace (eve halted, a notice waiting)
// from its SQLite file to a fresh PostgreSQL database, then refuses to
// copy it again into the same, now non-empty, database.
func TestMigrateCLI(t *testing.T) {
	target := testdb.EmptyConfig(t, store.Postgres)
	uri := target.URI
	fx := newBreakerFixture(t)
	src := fx.dbPath
	fx.st.Close()

	out, errLine, kind := runCLI(t, "migrate", "--from", "sqlite:"+src, "--to", "postgres:"+uri)
	if kind != nil {
		t.Fatalf("migrate: %v, %s\n%s", kind, errLine, out)
	}
	for _, want := range []string{"breaker_event", "outbox", "every count matches"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	ctx := context.Background()
	st := testdb.OpenConfig(t, target)
	b := services.Wiring{Store: st, Clock: core.SystemClock{}}.Breakers(testconfig.Breaker())
	status, err := b.Status(ctx, "eve")
	if err != nil || status.State != breaker.Open || status.Event == nil || status.Event.ID != fx.eventID {
		t.Errorf("eve on PostgreSQL: %+v, %v; want open with event %s", status, err, fx.eventID)
	}

	_, errLine, kind = runCLI(t, "migrate", "--from", "sqlite:"+src, "--to", uri)
	if kind != ErrTargetNotEmpty || !strings.Contains(errLine, "not empty") {
		t.Errorf("second migrate: %v, %q; want %v and a refusal", kind, errLine, ErrTargetNotEmpty)
	}
}

func TestMigrateCLIUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"no engine", []string{"--from", "jarvis.db", "--to", "postgres://x/y"}},
		{"wrong direction", []string{"--from", "postgres://x/y", "--to", "sqlite:jarvis.db"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, errLine, kind := runCLI(t, append([]string{"migrate"}, tt.args...)...)
			if kind != ErrUsage {
				t.Errorf("failure %v (%s), want %v", kind, errLine, ErrUsage)
			}
		})
	}
}
