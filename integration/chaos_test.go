package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/core/lease"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// The fault matrix's knobs: `make chaos SEED=… N=…` sets them. Without
// them TestFaultMatrix runs the short run of `make test`: chaosShortRun
// scenarios from chaosShortSeed, one on PostgreSQL and one on SQLite,
// whose plans have every fault of their engine. The short run's seed is
// fixed so that a red `make test` replays as it failed; `make chaos`
// explores other seeds. Either way the matrix runs on a Dendrite of its
// own, so that killing it disturbs no other test.
const (
	envChaosSeed   = "JARVIS_CHAOS_SEED"
	envChaosN      = "JARVIS_CHAOS_N"
	chaosShortSeed = 305
	chaosShortRun  = 2
	// chaosTTL is the lease the scenarios run with: a takeover takes about
	// this long, and a frozen holder keeps its lease for as long.
	chaosTTL = 3 * time.Second
)

// TestFaultMatrix runs the mixed workload (agents heartbeating and
// journaling, card sets published, breakers opened and resumed, a person
// chatting and tapping, tripwires tripping) against the real binary and
// homeserver, and at points drawn from a seed SIGKILLs Jarvis, kills the
// homeserver, crashes PostgreSQL, runs a second Jarvis as a standby and
// kills the holder under it. After each scenario it checks the
// invariants (see checkInvariants) on the store and in the room; a
// standby probe checks on the way that a standby writes nothing but
// intake. The agents reach Jarvis through a round-robin load balancer:
// on PostgreSQL over every Jarvis, where a standby answers agent writes
// with 2xx and nothing it stores may be lost or doubled across a
// takeover (the probe's heartbeat and the workload's writes acknowledged
// by either process are checked at the end, after every takeover); on
// SQLite to the holder. A failed scenario logs its seed and plan: `make
// chaos SEED=<seed> N=1` replays it.
func TestFaultMatrix(t *testing.T) {
	t.Parallel()
	seed, n := chaosParams(t)
	// The matrix's own homeserver, with the package's bridge registered
	// as the other's is.
	own := ownHomeserver(t, bridgeAS.Env())
	t.Logf("fault matrix: %d scenarios from seed %d (%s=%d %s=%d replays them)", n, seed, envChaosSeed, seed, envChaosN, n)
	var failed []string
	for i := range n {
		p := newPlan(seed + uint64(i))
		if !t.Run(fmt.Sprintf("seed=%d", p.seed), func(t *testing.T) { p.run(t, own) }) {
			failed = append(failed, fmt.Sprintf("SEED=%d (%s)", p.seed, p))
		}
	}
	if len(failed) > 0 {
		t.Logf("failed scenarios; replay each with make chaos SEED=… N=1:\n%s", strings.Join(failed, "\n"))
	}
}

func chaosParams(t *testing.T) (seed uint64, n int) {
	t.Helper()
	seed, n = chaosShortSeed, chaosShortRun
	if s := os.Getenv(envChaosSeed); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", envChaosSeed, s, err)
		}
		seed = v
	}
	if s := os.Getenv(envChaosN); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("%s=%q: want a positive number", envChaosN, s)
		}
		n = v
	}
	return seed, n
}

// fault is one thing that goes wrong in a scenario.
type fault int

const (
	// killJarvis SIGKILLs the lease holder and starts it again.
	killJarvis fault = iota
	// killHomeserver SIGKILLs Dendrite and starts it again.
	killHomeserver
	// restartPostgres crashes PostgreSQL (an immediate stop: no
	// checkpoint, every connection cut) and starts it again.
	restartPostgres
	// standby starts a second Jarvis if none runs, then freezes the holder
	// (SIGSTOP, for less than its lease) and pokes the standby: a
	// heartbeat to its API, a tripwire's source moved, a command in the
	// room. The store must not change while the holder is frozen, but for
	// the heartbeat, which on PostgreSQL the standby stores (200).
	standby
	// takeover SIGKILLs the holder while a standby runs: the standby takes
	// over, and the killed one comes back as the standby.
	takeover
)

func (f fault) String() string {
	return [...]string{"kill jarvis", "kill homeserver", "restart postgres", "standby probe", "takeover"}[f]
}

// step is a fault after a stretch of workload; down is how long what
// was killed stays down.
type step struct {
	fault       fault
	after, down time.Duration
}

// plan is one scenario, drawn from its seed: the engine, and the faults
// in order. Every scenario has each fault its engine allows once, in an
// order of the seed's, and half of them one more of the seed's choosing.
type plan struct {
	seed   uint64
	engine string
	steps  []step
}

func newPlan(seed uint64) plan {
	rng := rand.New(rand.NewPCG(seed, 0x6a617276))
	p := plan{seed: seed, engine: []string{store.SQLite, store.Postgres}[seed%2]}
	faults := []fault{killJarvis, killHomeserver, standby, takeover}
	if p.engine == store.Postgres {
		faults = append(faults, restartPostgres)
	}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	for range rng.IntN(2) {
		faults = append(faults, faults[rng.IntN(len(faults))])
	}
	// A takeover needs a standby: one drawn before the first standby
	// probe swaps places with it.
	if ti, si := slices.Index(faults, takeover), slices.Index(faults, standby); ti < si {
		faults[ti], faults[si] = standby, takeover
	}
	for _, f := range faults {
		p.steps = append(p.steps, step{fault: f,
			after: 500*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond))),
			down:  300*time.Millisecond + time.Duration(rng.Int64N(int64(1500*time.Millisecond)))})
	}
	return p
}

func (p plan) String() string {
	parts := []string{p.engine}
	for _, s := range p.steps {
		parts = append(parts, fmt.Sprintf("after %s %s (down %s)", s.after.Round(time.Millisecond), s.fault, s.down.Round(time.Millisecond)))
	}
	return strings.Join(parts, "; ")
}

// node is one Jarvis process of a scenario and the address of its API.
type node struct {
	*jarvis
	api string
	// started is where the log of the process's last start begins.
	started int
}

// restart starts the process again after a kill.
func (n *node) restart() {
	n.started = len(n.logs.String())
	n.Start()
}

// scenario is a plan being run.
type scenario struct {
	t     *testing.T
	plan  plan
	pg    *testdb.Server
	hs    *tesths.Homeserver
	feed  *snapshotFeed
	alice *tesths.Person
	room  id.RoomID
	nodes []*node
	st    *store.Store
	// lb is the load balancer in front of the Jarvis processes' APIs,
	// which the agents reach at proxy (see route).
	lb      *balancer
	proxy   string
	tokens  workload.Tokens
	agents  []string
	records []workload.Record
	segment uint64
	// gi is the snapshot feed's value: below 0.70 the push tripwire trips.
	gi float64
}

func (p plan) run(t *testing.T, server *tesths.Homeserver) {
	t.Logf("scenario: %s", p)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("replay with make chaos SEED=%d N=1; scenario: %s", p.seed, p)
		}
	})
	s := &scenario{t: t, plan: p, hs: server, gi: 0.80}
	s.start()
	var w *workload.Workload
	begun := time.Now()
	for i, st := range p.steps {
		if w == nil {
			w = s.startWorkload()
		}
		time.Sleep(st.after)
		t.Logf("%s: step %d, %s", time.Since(begun).Round(100*time.Millisecond), i+1, st.fault)
		s.flipFeed()
		switch st.fault {
		case killJarvis:
			n := s.holder()
			n.Kill()
			time.Sleep(st.down)
			n.restart()
		case killHomeserver:
			if err := s.hs.Kill(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(st.down)
			if err := s.hs.Restart(); err != nil {
				t.Fatal(err)
			}
		case restartPostgres:
			if err := s.pg.Restart("immediate"); err != nil {
				t.Fatal(err)
			}
		case standby:
			s.records = append(s.records, w.Stop())
			w = nil
			s.probeStandby()
		case takeover:
			s.takeover()
		}
		s.route()
	}
	if w != nil {
		s.records = append(s.records, w.Stop())
	}
	t.Logf("%s: checking the invariants", time.Since(begun).Round(100*time.Millisecond))
	s.checkInvariants()
}

// start starts the first Jarvis with the workload's agents, tokens and
// seeded tripwires (newLoaded), arms a pushed and a journaled tripwire on
// the snapshot feed, and puts the agents' proxy in front of its API.
func (s *scenario) start() {
	t := s.t
	setup := loadSetup{Agents: 64, Tripwires: workload.Tripwires{Count: 64, Scopes: 8, TripEvery: 4}, HS: s.hs}
	if s.plan.engine == store.Postgres {
		pg, err := testdb.StartServer(t)
		if err != nil {
			t.Logf("running on SQLite instead: no PostgreSQL server of the test's own: %v", err)
			s.plan.engine = store.SQLite
			s.plan.steps = dropFault(s.plan.steps, restartPostgres)
		} else {
			s.pg, setup.Store = pg, pg.Store
		}
	}
	var feedURL string
	s.feed, feedURL = newSnapshotFeed(t, s.gi)
	// The seeded tripwires flap with the agents' MII, and their sources
	// fail until an agent first reports (and while the workload pauses):
	// quarantined, they would tell citizens who have no account here.
	setup.Extra = fmt.Sprintf("sources:\n  snapshot:\n    url: %s\ntripwires:\n  tick: 1s\n  quarantine:\n    flap_cycles: 99\n    source_errors: 1000000\n"+
		"workspace:\n  lease_ttl: %s\n", feedURL, chaosTTL)
	l := newLoaded(t, setup)
	s.alice, s.room, s.st, s.tokens, s.agents = l.admin, l.room, l.st, l.tokens, l.agents
	first := &node{jarvis: l.j, api: strings.TrimPrefix(l.api, "http://")}
	s.nodes = []*node{first}
	for _, arm := range []string{
		`!tw arm integrity.gi lt 0.70 --label "GI low" --because "the fault matrix moves it" --push`,
		`!tw arm integrity.gi lt 0.70 --label "GI quiet" --because "only for the record"`,
	} {
		if body := tesths.Body(first.ask(t, s.alice, s.room, arm)); !strings.HasPrefix(body, "Armed — tw_") {
			t.Fatalf("%s got %q", arm, body)
		}
	}
	s.lb, s.proxy = newBalancer(t, first.api)
}

func dropFault(steps []step, f fault) []step {
	var out []step
	for _, s := range steps {
		if s.fault != f {
			out = append(out, s)
		}
	}
	return out
}

// startWorkload starts the next stretch of the mixed workload, with a
// seed of its own drawn from the scenario's.
func (s *scenario) startWorkload() *workload.Workload {
	s.segment++
	w, err := workload.Start(workload.Config{
		Seed: s.plan.seed<<16 + s.segment, API: s.proxy, Tokens: s.tokens,
		Agents: s.agents, Heartbeats: workload.Every(time.Second), JournalEvery: 3, CycleEvery: 5,
		CardSets: workload.Every(300 * time.Millisecond), Breakers: workload.Every(2 * time.Second),
		Room: s.room, Jarvis: s.nodes[0].UserID, People: []*tesths.Person{s.alice}, Chat: workload.Every(500 * time.Millisecond),
		Admin: s.alice, Timeout: 5 * time.Second,
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return w
}

// flipFeed moves the snapshot's GI across the push tripwire's threshold.
func (s *scenario) flipFeed() {
	if s.gi < 0.70 {
		s.gi = 0.80
	} else {
		s.gi = 0.65
	}
	s.feed.setGI(s.gi)
}

// holder is the node whose process holds the workspace lease (by the PID
// in the lease's holder name), waiting for one to.
func (s *scenario) holder() *node {
	s.t.Helper()
	deadline := time.Now().Add(chaosTTL + waitReply)
	for {
		if rec, err := s.st.Leases().Get(context.Background(), "default"); err == nil && time.Now().Before(rec.ExpiresAt) {
			for _, n := range s.nodes {
				if n.holds(rec) {
					return n
				}
			}
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no running Jarvis holds the lease after %s", chaosTTL+waitReply)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// holds says whether the lease rec names this running process.
func (n *node) holds(rec lease.Record) bool {
	return n.running() && strings.Contains(rec.Holder, fmt.Sprintf("/%d/", n.cmd.Process.Pid))
}

// roles returns the holder and the other process, the standby.
func (s *scenario) roles() (holder, standby *node) {
	holder = s.holder()
	for _, n := range s.nodes {
		if n != holder {
			standby = n
		}
	}
	return holder, standby
}

// route points the load balancer at the APIs that take the agents'
// writes: on PostgreSQL every Jarvis's, in turn, where every Jarvis
// stores what agents report; on SQLite the holder's alone, as a load
// balancer's health check would (a standby answers writes with 503).
func (s *scenario) route() {
	if s.plan.engine != store.Postgres {
		s.lb.set(s.holder().api)
		return
	}
	apis := make([]string, len(s.nodes))
	for i, n := range s.nodes {
		apis[i] = n.api
	}
	s.lb.set(apis...)
}

// takeover kills the holder under a running standby, waits until the
// standby holds the lease, and starts the killed one again: the standby
// now.
func (s *scenario) takeover() {
	old := s.holder()
	old.Kill()
	s.holder() // the standby, once it has taken over
	old.restart()
}

// running tells whether the process has not exited.
func (n *node) running() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}
