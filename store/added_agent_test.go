package store_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestAddedAgents: an added agent is read back as written, a put of the
// same name in another case replaces it (and says it is not new), and a
// delete in any case removes it, once; on both engines.
func TestAddedAgents(t *testing.T) {
	ctx := context.Background()
	at := time.Date(2026, 12, 4, 22, 0, 0, 0, time.UTC)
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			q := testdb.OpenStore(t, engine).AddedAgents()
			backup := fleet.AddedAgent{Name: "BACKUP", Grace: 30 * time.Minute, Schedule: "0 3 * * *", TimeZone: "Europe/Berlin",
				DependsOn: []string{"EVE", "ZEUS"}, By: "supervisor cred_1", At: at}
			if created, err := q.PutAddedAgent(ctx, backup); err != nil || !created {
				t.Fatalf("put: %v, %v; want created", created, err)
			}
			hermes := fleet.AddedAgent{Name: "HERMES", Cadence: time.Hour, By: "cli", At: at}
			if _, err := q.PutAddedAgent(ctx, hermes); err != nil {
				t.Fatal(err)
			}
			got, err := q.AddedAgents(ctx)
			if err != nil || !reflect.DeepEqual(got, []fleet.AddedAgent{backup, hermes}) {
				t.Fatalf("read back %+v, %v", got, err)
			}
			changed := fleet.AddedAgent{Name: "backup", Cadence: 2 * time.Hour, By: "cli", At: at.Add(time.Minute)}
			if created, err := q.PutAddedAgent(ctx, changed); err != nil || created {
				t.Fatalf("put again: %v, %v; want replaced", created, err)
			}
			if got, _ := q.AddedAgents(ctx); !reflect.DeepEqual(got, []fleet.AddedAgent{changed, hermes}) {
				t.Fatalf("after the change read back %+v", got)
			}
			if err := q.DeleteAddedAgent(ctx, "Backup"); err != nil {
				t.Fatal(err)
			}
			if err := q.DeleteAddedAgent(ctx, "BACKUP"); !errors.Is(err, core.ErrNotFound) {
				t.Errorf("a second delete: %v, want not found", err)
			}
			if got, _ := q.AddedAgents(ctx); !reflect.DeepEqual(got, []fleet.AddedAgent{hermes}) {
				t.Errorf("after the delete read back %+v", got)
			}
		})
	}
}
