package tripwire_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// TestMaxPerPerson: a person at tripwires.max_per_person arms no more,
// told so with the key, and nothing is written; deleting one makes room,
// and another person's count is their own.
func TestMaxPerPerson(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			cfg := testconfig.Tripwires()
			cfg.MaxPerPerson = 3
			f := newTWFixture(t, engine, cfg)
			var ids []string
			for range cfg.MaxPerPerson {
				ids = append(ids, f.Arm(twAlice, services.GIBelow("GI low", 0.7, false, 60)).ID)
			}
			_, err := f.Service.Arm(f.Ctx, twAlice, services.GIBelow("one more", 0.7, false, 60))
			if !errors.Is(err, core.ErrRateLimited) || !strings.Contains(err.Error(), "tripwires.max_per_person") {
				t.Fatalf("arming past the cap = %v, want ErrRateLimited naming tripwires.max_per_person", err)
			}
			if defs, _ := f.Service.List(f.Ctx, twAlice); len(defs) != cfg.MaxPerPerson {
				t.Errorf("alice has %d tripwires after the refusal, want %d", len(defs), cfg.MaxPerPerson)
			}
			f.Arm(twBob, services.GIBelow("bob's own", 0.7, false, 60))
			if err := f.Service.Delete(f.Ctx, twAlice, ids[0]); err != nil {
				t.Fatal(err)
			}
			f.Arm(twAlice, services.GIBelow("in the freed place", 0.7, false, 60))
		})
	}
}
