package fleet_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// TestAddedAgentsBesideTheConfiguration: an added agent is watched beside
// the configuration file's and survives a restart and a reload; one the
// file comes to name is the file's while it does, and is back when the
// file drops it.
func TestAddedAgentsBesideTheConfiguration(t *testing.T) {
	fx := newFleetFixture(t)
	ctx := context.Background()
	if _, err := fx.fleet.PutAgent(ctx, fleet.AddedAgent{Name: "BACKUP", Cadence: time.Hour, By: "cli"}); err != nil {
		t.Fatal(err)
	}
	if _, err := fx.fleet.PutAgent(ctx, fleet.AddedAgent{Name: "eve", By: "cli"}); !errors.Is(err, core.ErrConflict) {
		t.Fatalf("adding EVE, of the configuration: %v, want a conflict", err)
	}

	fx.fleet = fx.newFleet(t)
	if err := fx.fleet.ReadAgents(ctx); err != nil {
		t.Fatal(err)
	}
	if a, err := fx.fleet.LookupAgent("agent", "backup"); err != nil || a.Cadence != time.Hour {
		t.Fatalf("after a restart BACKUP is %+v, %v; want watched hourly", a, err)
	}

	withBackup := fx.cfg
	withBackup.Agents = append(append([]fleet.AgentConfig(nil), fx.cfg.Agents...), fleet.AgentConfig{Name: "BACKUP", Cadence: 2 * time.Hour})
	if err := fx.fleet.SetConfig(withBackup); err != nil {
		t.Fatal(err)
	}
	if a, _ := fx.fleet.LookupAgent("agent", "BACKUP"); a.Cadence != 2*time.Hour || len(fx.fleet.AddedAgents()) != 0 || len(fx.fleet.Agents()) != 5 {
		t.Fatalf("with BACKUP in the file it is %+v, added %v, %d watched; want the file's, none added, 5 watched", a, fx.fleet.AddedAgents(), len(fx.fleet.Agents()))
	}
	if err := fx.fleet.SetConfig(fx.cfg); err != nil {
		t.Fatal(err)
	}
	if a, _ := fx.fleet.LookupAgent("agent", "BACKUP"); a.Cadence != time.Hour || len(fx.fleet.AddedAgents()) != 1 {
		t.Fatalf("with BACKUP out of the file again it is %+v, added %v; want the added one back", a, fx.fleet.AddedAgents())
	}
}
