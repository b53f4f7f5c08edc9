package tripwire_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

const twMallory = "@mallory:example.org"

// network is a source kind read over the network whose reads of a param
// answer at once with "ok" unless the param starts with "slow", which
// blocks until released or until the read is given up.
type network struct {
	release  chan struct{}
	entered  chan struct{} // one send per slow read begun, up to 100
	inFlight atomic.Int32
	most     atomic.Int32
}

func newNetwork() *network {
	return &network{release: make(chan struct{}), entered: make(chan struct{}, 100)}
}

func (n *network) kind() core.SourceKind {
	return core.SourceKind{Kind: "url-fetch", Value: core.ValueText, Param: "URL", ParamType: core.ParamURL, Network: true,
		Resolve: func(ctx context.Context, param string) (core.Observation, error) {
			if !strings.HasPrefix(param, "slow") {
				return core.Observation{Value: "ok"}, nil
			}
			now := n.inFlight.Add(1)
			defer n.inFlight.Add(-1)
			for most := n.most.Load(); now > most && !n.most.CompareAndSwap(most, now); most = n.most.Load() {
			}
			n.entered <- struct{}{}
			select {
			case <-n.release:
				return core.Observation{Value: "late"}, nil
			case <-ctx.Done():
				return core.Observation{}, &core.SourceUnavailable{Reason: "timed out", Detail: ctx.Err()}
			}
		}}
}

// armSlow arms n of mallory's tripwires on slow URLs.
func armSlow(t *testing.T, f *services.TripwireFixture, n int) {
	t.Helper()
	for i := range n {
		f.Arm(twMallory, tripwire.Draft{Label: fmt.Sprintf("slow %d", i), Rationale: "hold the evaluator",
			Source:    core.SourceRef{Kind: "url-fetch", Param: fmt.Sprintf("slow/%d.json value", i)},
			Condition: tripwire.Condition{Op: tripwire.OpChanged}})
	}
}

// fetchFixture is the tripwire service reading the fixture's sources and
// the network kind of n.
func fetchFixture(t *testing.T, engine string, cfg tripwire.Config, n *network) *services.TripwireFixture {
	t.Helper()
	f := services.NewTripwireFixture(t, testdb.OpenStore(t, engine), cfg)
	reg := f.Sources.Registry()
	reg.Register(n.kind())
	f.Service = services.Wiring{Store: f.Store, Clock: f.Clock, Room: services.TripwireRoom}.Tripwires(cfg, reg)
	return f
}

// TestOwnSourcesDoNotWaitForNetworkSources makes the attack of 24
// tripwires on an endpoint that hangs, mid-tick, while an agent's breaker
// opens: another person's push on the breaker goes out at once, before
// any of the fetches ends, and the tick still takes in what it read.
func TestOwnSourcesDoNotWaitForNetworkSources(t *testing.T) {
	for _, engine := range testdb.Engines() {
		t.Run(engine, func(t *testing.T) {
			n := newNetwork()
			cfg := testconfig.Tripwires()
			f := fetchFixture(t, engine, cfg, n)
			armSlow(t, f, 24)
			f.Set("breaker.state[EVE]", "closed")
			halted := f.Arm(twBob, tripwire.Draft{Label: "EVE halted", Rationale: "EVE runs the nightly build",
				Source: core.SourceRef{Kind: "breaker.state", Param: "EVE"}, Condition: tripwire.Condition{Op: tripwire.OpEQ, Threshold: "open"},
				Action: &tripwire.Action{Push: true}})

			ticked := make(chan error, 1)
			go func() { _, err := f.Service.Tick(f.Ctx); ticked <- err }()
			for range cfg.FetchBudget.Workers {
				<-n.entered
			}
			f.Set("breaker.state[EVE]", "open")
			reevaluated := make(chan tripwire.TickReport, 1)
			go func() {
				r, err := f.Service.Reevaluate(f.Ctx, "breaker.state")
				if err != nil {
					t.Errorf("Reevaluate() = %v", err)
				}
				reevaluated <- r
			}()
			select {
			case r := <-reevaluated:
				if r.Fired != 1 {
					t.Errorf("the breaker's pass fired %d tripwires, want bob's", r.Fired)
				}
			case <-time.After(time.Minute):
				t.Fatal("the breaker's pass waited for the hanging fetches")
			}
			var pushed bool
			for _, e := range f.Notices() {
				pushed = pushed || (e.ToUser == twBob && strings.Contains(e.Body, "Tripwire tripped: EVE halted"))
			}
			if !pushed {
				t.Errorf("no push to bob while mallory's fetches hang; outbox: %+v", f.Notices())
			}
			if hanging := n.inFlight.Load(); hanging == 0 {
				t.Error("the fetches ended before the push: the test proved nothing")
			}

			close(n.release)
			if err := <-ticked; err != nil {
				t.Fatalf("Tick() = %v", err)
			}
			if got := f.Get(twBob, halted.ID); got.Status != tripwire.Tripped {
				t.Errorf("bob's tripwire is %s after the tick, want tripped", got.Status)
			}
		})
	}
}

// TestFetchBudgetPerPerson: one person's network sources are fetched at
// most tripwires.fetch_budget.workers at a time and given up after
// tripwires.fetch_budget.time, as failed reads of that pass; another
// person's, read beside them, come in whole in the same pass, even one
// the first person also reads and queued behind their slow ones.
func TestFetchBudgetPerPerson(t *testing.T) {
	n := newNetwork()
	cfg := testconfig.Tripwires()
	cfg.FetchBudget = tripwire.FetchBudget{Time: time.Second, Workers: 2}
	f := fetchFixture(t, store.SQLite, cfg, n)
	armSlow(t, f, 6)
	status := tripwire.Draft{Label: "status", Rationale: "the status page",
		Source: core.SourceRef{Kind: "url-fetch", Param: "https://status.example.org/api.json state"}, Condition: tripwire.Condition{Op: tripwire.OpEQ, Threshold: "ok"}}
	mallorys := f.Arm(twMallory, status)
	bobs := f.Arm(twBob, status)
	r := f.Tick()
	if r.Fired != 2 || r.SourceErrors != 6 {
		t.Errorf("report %+v, want both status tripwires fired and mallory's 6 slow sources failed", r)
	}
	if got := f.Get(twBob, bobs.ID); got.Status != tripwire.Tripped {
		t.Errorf("bob's tripwire is %s, want tripped", got.Status)
	}
	defs, err := f.Service.List(f.Ctx, twMallory)
	if err != nil {
		t.Fatal(err)
	}
	rateLimited := 0
	for _, d := range defs {
		if d.ID != mallorys.ID && (d.Status != tripwire.Armed || d.LastError == "") {
			t.Errorf("%s is %s with last error %q, want armed with the failed read", d.Label, d.Status, d.LastError)
		}
		sum, err := f.Service.Skips(f.Ctx, twMallory, d.ID, time.Time{}, 0)
		if err != nil {
			t.Fatal(err)
		}
		rateLimited += sum.Counts[tripwire.SkipRateLimit]
	}
	// Those read when the budget ran out failed as timed out; those still
	// queued were never read: skipped for the rate limit.
	if rateLimited < 4 {
		t.Errorf("%d of mallory's sources were logged as rate-limit skips, want the 4 never read", rateLimited)
	}
	if most := n.most.Load(); most > 2 {
		t.Errorf("%d of mallory's sources were read at once, over the 2 of tripwires.fetch_budget.workers", most)
	}
}
