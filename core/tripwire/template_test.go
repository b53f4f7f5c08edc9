package tripwire_test

import (
	"testing"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/store"
)

// TestTripwireStarters: each starter is made ready for one person to arm
// with one tap: one about an agent watches the fleet's (any of the first
// four, the rest left out), one about decisions watches the person's, and
// with no agent yet the agent's ones wait for a name; making them arms
// nothing.
func TestTripwireStarters(t *testing.T) {
	f := newTWFixture(t, store.SQLite, testconfig.Tripwires())
	for _, tt := range []struct {
		name   string
		agents []string
		// want is each starter's label, "" for one with no draft.
		want map[string]string
		left int
	}{
		{name: "no agent yet", want: map[string]string{"agent-offline": "", "breaker-open": "", "card-decision": "A card waits for your decision"}},
		{name: "one agent", agents: []string{"EVE"}, want: map[string]string{"agent-offline": "Agent goes offline: EVE"}},
		{name: "six agents", agents: []string{"A", "B", "C", "D", "E", "F"}, left: 2,
			want: map[string]string{"breaker-open": "Breaker opens for an agent: A, B, C, D"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			starters := f.Service.Starters(twAlice, tt.agents)
			// The test registry reads no cards.blocked.
			if len(starters) != 6 {
				t.Fatalf("%d starters, want the 6 templates it reads", len(starters))
			}
			for _, st := range starters {
				want, ok := tt.want[st.Template.ID]
				if !ok {
					continue
				}
				switch {
				case want == "" && st.Draft != nil:
					t.Errorf("%s has a draft %+v with no agent to watch", st.Template.ID, st.Draft)
				case want != "" && (st.Draft == nil || st.Draft.Label != want):
					t.Errorf("%s = %+v, want labelled %q", st.Template.ID, st.Draft, want)
				case want != "" && len(st.Left) != tt.left:
					t.Errorf("%s leaves out %v, want %d", st.Template.ID, st.Left, tt.left)
				}
			}
			if st := starters[len(starters)-1]; st.Template.ID == "card-decision" && (st.Draft == nil || st.Draft.Source.Param != twAlice) {
				t.Errorf("the decisions starter = %+v, want it watching alice's", st.Draft)
			}
			if defs, err := f.Service.List(f.Ctx, twAlice); err != nil || len(defs) != 0 {
				t.Errorf("making starters armed %d tripwires (%v), want none", len(defs), err)
			}
		})
	}
	// Each draft arms as it is.
	for _, s := range f.Service.Starters(twAlice, []string{"A", "B", "C", "D", "E", "F"}) {
		if got := f.Arm(twAlice, *s.Draft); got.Status != tripwire.Armed {
			t.Errorf("%s armed as %s", s.Template.ID, got.Status)
		}
	}
}
