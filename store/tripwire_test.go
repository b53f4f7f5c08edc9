package store_test

import (
	"fmt"
	"testing"

	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// The tripwire service's behaviour is tested in core/tripwire; here,
// what the tripwire tables keep.

// twAlice is the citizen of the tripwire tests.
const twAlice = "@alice:example.org"

// newTWFixture is the tripwire service of cfg on a fresh store.
func newTWFixture(t *testing.T, cfg tripwire.Config) *services.TripwireFixture {
	t.Helper()
	return services.NewTripwireFixture(t, testdb.OpenStore(t, testEngine), cfg)
}

// TestTripwireCapsKeepTheNewest: the trip history, journal and push queue
// a pass writes keep their newest entries up to their caps.
func TestTripwireCapsKeepTheNewest(t *testing.T) {
	for _, tt := range []struct {
		name string
		// trips is how many trips to record, spread over tripwires.
		trips, tripwires int
		journal, push    bool
		read             func(f *services.TripwireFixture) ([]tripwire.TripEvent, error)
		wantLen          int
		wantFirst        string // "tripwire/trip" of the oldest kept
	}{
		{name: "100 history entries are all kept", trips: 100, tripwires: 1, wantLen: 100, wantFirst: "tw_0/1",
			read: func(f *services.TripwireFixture) ([]tripwire.TripEvent, error) {
				return f.Service.History(f.Ctx, twAlice, "tw_0", 0)
			}},
		{name: "101st history entry drops the oldest", trips: 101, tripwires: 1, wantLen: 100, wantFirst: "tw_0/2",
			read: func(f *services.TripwireFixture) ([]tripwire.TripEvent, error) {
				return f.Service.History(f.Ctx, twAlice, "tw_0", 0)
			}},
		{name: "201st journal entry drops the oldest", trips: 201, tripwires: 3, journal: true, wantLen: 200, wantFirst: "tw_1/1",
			read: func(f *services.TripwireFixture) ([]tripwire.TripEvent, error) {
				page, err := f.Service.Journal(f.Ctx, twAlice, tripwire.JournalQuery{})
				events := make([]tripwire.TripEvent, len(page.Entries))
				for i, e := range page.Entries {
					events[i] = e.TripEvent
				}
				return events, err
			}},
		{name: "51st push drops the oldest", trips: 51, tripwires: 1, push: true, wantLen: 50, wantFirst: "tw_0/2",
			read: func(f *services.TripwireFixture) ([]tripwire.TripEvent, error) {
				return f.Service.ConsumePush(f.Ctx, twAlice)
			}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newTWFixture(t, testconfig.Tripwires())
			q := f.Store.Tripwires()
			seq := map[string]int64{}
			// Record one trip per pass, as the evaluator does.
			for i := range tt.trips {
				id := fmt.Sprintf("tw_%d", i%tt.tripwires)
				seq[id]++
				ev := tripwire.TripEvent{TripwireID: id, Trip: seq[id], Label: "watch", Timestamp: f.Clock.Now(), ObservedValue: 0.5, Summary: "GI is 0.5"}
				err := q.ApplyTick(f.Ctx, tripwire.TickWrites{Trips: []tripwire.Trip{{Scope: twAlice, Event: ev, Journal: tt.journal, Push: tt.push}}})
				if err != nil {
					t.Fatal(err)
				}
			}
			events, err := tt.read(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(events) != tt.wantLen {
				t.Fatalf("%d events kept, want %d", len(events), tt.wantLen)
			}
			if first := fmt.Sprintf("%s/%d", events[0].TripwireID, events[0].Trip); first != tt.wantFirst {
				t.Errorf("oldest kept is %s, want %s", first, tt.wantFirst)
			}
			last := events[len(events)-1]
			if want := fmt.Sprintf("tw_%d", (tt.trips-1)%tt.tripwires); last.TripwireID != want || last.Trip != seq[want] {
				t.Errorf("newest kept is %s/%d, want the last trip recorded", last.TripwireID, last.Trip)
			}
		})
	}
}
