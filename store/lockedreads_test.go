package store_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/card"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/history"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/internal/metrics"
	"github.com/jarvis-hmi/jarvis/internal/testkit/services"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// isolation is the isolation of the transaction ctx is in on PostgreSQL,
// "" on SQLite.
func isolation(t *testing.T, ctx context.Context, s *store.Store) string {
	t.Helper()
	if testEngine != store.Postgres {
		return ""
	}
	var level string
	if err := s.DB.QueryRow(ctx, "SHOW transaction_isolation").Scan(&level); err != nil {
		t.Fatal(err)
	}
	return level
}

// TestLockedReads: a transaction marked core.LockedReads runs READ
// COMMITTED on PostgreSQL, and one that returns core.ErrBeyondLockedReads
// runs again, whole, SERIALIZABLE and no longer marked, its first run's
// writes undone; every other transaction runs SERIALIZABLE. On SQLite,
// one writer at a time, the mark is dropped: a transaction is exact there
// and never asked to run again for it. A marked transaction that joins
// one at full isolation runs as that one does.
func TestLockedReads(t *testing.T) {
	ctx := core.Unfenced(context.Background())
	s := testdb.OpenStore(t, testEngine)
	state := func(notes string) fleet.AgentState {
		return fleet.AgentState{Agent: "EVE", Cycle: "C-1", LastAt: time.UnixMilli(1), NextExpectedBy: time.UnixMilli(2), Notes: notes}
	}
	if err := s.Heartbeats().PutAgentStates(ctx, state("before")); err != nil {
		t.Fatal(err)
	}
	type run struct {
		locked    bool
		isolation string
	}
	var runs []run
	rerunsBefore := metrics.Sum("jarvis_store_transaction_reruns_total")
	err := s.InTx(core.LockedReads(ctx), func(ctx context.Context) error {
		runs = append(runs, run{core.ReadsLocked(ctx), isolation(t, ctx, s)})
		if err := s.Heartbeats().PutAgentStates(ctx, state(fmt.Sprintf("run %d", len(runs)))); err != nil {
			return err
		}
		if core.ReadsLocked(ctx) {
			return core.ErrBeyondLockedReads
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []run{{false, ""}}
	if testEngine == store.Postgres {
		want = []run{{true, "read committed"}, {false, "serializable"}}
	}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("runs (locked reads, isolation) = %v, want %v", runs, want)
	}
	got, err := s.Heartbeats().AgentState(ctx, "EVE")
	if err != nil || got.Notes != fmt.Sprintf("run %d", len(want)) {
		t.Errorf("the state's notes are %q (%v), want those of the last run alone", got.Notes, err)
	}
	if reruns := metrics.Sum("jarvis_store_transaction_reruns_total") - rerunsBefore; reruns != float64(len(want)-1) {
		t.Errorf("/metrics counted %v reruns, want %d", reruns, len(want)-1)
	}

	var level string
	joined := true
	err = s.InTx(ctx, func(ctx context.Context) error {
		level = isolation(t, ctx, s)
		return s.InTx(core.LockedReads(ctx), func(ctx context.Context) error {
			joined = core.ReadsLocked(ctx)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	if testEngine == store.Postgres && level != "serializable" {
		t.Errorf("a transaction not marked runs %q, want serializable", level)
	}
	if joined {
		t.Error("a transaction marked for locked reads that joins one at full isolation says its reads are locked")
	}
}

// TestLockedReadMakesOthersWait: an agent's state read with locked reads
// (a heartbeat batch on one Jarvis) holds back another process's
// SERIALIZABLE transaction that reads that state and writes it back (the
// silence sweep on the holder) until it commits, and the other one, run
// again, writes on what it wrote: nothing it wrote is lost.
func TestLockedReadMakesOthersWait(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("SQLite runs one writer at a time: nothing runs beside the batch")
	}
	ctx := core.Unfenced(context.Background())
	stores := raceOn(t)[:2]
	t0 := time.UnixMilli(1_776_384_000_000)
	if err := stores[0].Heartbeats().PutAgentStates(ctx, fleet.AgentState{Agent: "EVE", Cycle: "C-1", LastAt: t0,
		NextExpectedBy: t0.Add(time.Minute), Streak: 1}); err != nil {
		t.Fatal(err)
	}
	locked, release := make(chan struct{}), make(chan struct{})
	batch := make(chan error, 1)
	go func() {
		first := true
		batch <- stores[0].InTx(core.LockedReads(ctx), func(ctx context.Context) error {
			states, err := stores[0].Heartbeats().AgentStates(ctx, "EVE")
			if err != nil || len(states) != 1 {
				return fmt.Errorf("the batch read %v, %v", states, err)
			}
			if first {
				first = false
				close(locked)
				<-release
			}
			st := states[0]
			st.Cycle, st.LastAt, st.Streak = "C-2", t0.Add(time.Minute), st.Streak+1
			return stores[0].Heartbeats().PutAgentStates(ctx, st)
		})
	}()
	<-locked
	var mu sync.Mutex
	var read []fleet.AgentState
	sweep := make(chan error, 1)
	go func() {
		sweep <- stores[1].InTx(ctx, func(ctx context.Context) error {
			st, err := stores[1].Heartbeats().AgentState(ctx, "EVE")
			if err != nil {
				return err
			}
			mu.Lock()
			read = append(read, st)
			mu.Unlock()
			st.Announced = "late"
			return stores[1].Heartbeats().PutAgentStates(ctx, st)
		})
	}()
	waitForLock(t, stores[0], "the sweep")
	close(release)
	if err := <-batch; err != nil {
		t.Fatalf("batch: %v", err)
	}
	if err := <-sweep; err != nil {
		t.Fatalf("sweep: %v", err)
	}
	got, err := stores[0].Heartbeats().AgentState(ctx, "EVE")
	if err != nil || got.Cycle != "C-2" || got.Streak != 2 || got.Announced != "late" {
		t.Errorf("the state ended as %+v (%v), want cycle C-2, streak 2 (the batch's) and announced late (the sweep's)", got, err)
	}
	if len(read) != 2 || read[1].Cycle != "C-2" {
		t.Errorf("the sweep read %+v, want a second run that read the batch's write", read)
	}
}

// waitForLock returns once a session of st's database waits for a lock.
func waitForLock(t *testing.T, st *store.Store, what string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for waiting := 0; waiting == 0; time.Sleep(time.Millisecond) {
		if err := st.DB.QueryRow(context.Background(),
			"SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&waiting); err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never waited for a lock", what)
		}
	}
}

// TestLockedReadsTakeASourceAddedMeanwhile: two transactions of locked
// reads (READ COMMITTED) add the first readings of one source at once;
// the second waits for the first to add the source, then takes it: both
// readings are kept.
func TestLockedReadsTakeASourceAddedMeanwhile(t *testing.T) {
	if testEngine != store.Postgres {
		t.Skip("SQLite runs one writer at a time: nothing runs beside the batch")
	}
	ctx := core.Unfenced(context.Background())
	stores := raceOn(t)[:2]
	src := core.SourceRef{Kind: fleet.SourceAgentMII, Param: "EVE"}
	t0 := time.UnixMilli(1_776_384_000_000)
	added, release := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		once := true
		first <- stores[0].InTx(core.LockedReads(ctx), func(ctx context.Context) error {
			if err := stores[0].AddReadings(ctx, []history.Reading{{Source: src, At: t0, Value: 0.9}}); err != nil {
				return err
			}
			if once {
				once = false
				close(added)
				<-release
			}
			return nil
		})
	}()
	<-added
	second := make(chan error, 1)
	go func() {
		second <- stores[1].InTx(core.LockedReads(ctx), func(ctx context.Context) error {
			return stores[1].AddReadings(ctx, []history.Reading{{Source: src, At: t0.Add(time.Second), Value: 0.8}})
		})
	}()
	waitForLock(t, stores[0], "the second transaction's source")
	close(release)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	if err := <-second; err != nil {
		t.Fatal(err)
	}
	points, err := stores[0].Points(ctx, src, t0, t0.Add(time.Minute))
	if err != nil || len(points) != 2 {
		t.Errorf("the source has %d readings (%v), want both", len(points), err)
	}
}

// fleetOn is a fleet service of cfg on st, as a Jarvis process runs it:
// its history, meter and incidents kept in st.
func fleetOn(t *testing.T, st *store.Store, clock core.Clock, cfg fleet.Config) *fleet.Service {
	t.Helper()
	f, err := fleet.NewService(cfg, fleet.Deps{Tx: st, Heartbeats: st.Heartbeats(), Journal: st.AgentJournal(),
		Attestations: st.Attestations(), Meter: st.Meter(), Outbox: st.Outbox(), History: st, Clock: clock, Room: "!jarvis:example.org",
		Incidents: oncall.NewService(oncall.Config{EscalateAfter: 15 * time.Minute}, oncall.Deps{Store: st.Incidents(), Outbox: st.Outbox(), Clock: clock})})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestTwoHostsHeartbeatsNeverRefused: two Jarvis processes on one
// database (two fleet services, each its own store) take heartbeats of
// the same agents at once, as two API hosts behind a load balancer do;
// every heartbeat a new cycle, on time, with a spend the agent already
// reported and its boot unchanged. Each agent's streak counts every one
// of them (no batch wrote on a state another had changed meanwhile), every
// heartbeat and reading is stored, and no transaction was refused and
// run again: usual heartbeats touch nothing but their agents' rows, which
// they lock.
func TestTwoHostsHeartbeatsNeverRefused(t *testing.T) {
	const agents, perHost, beats = 8, 8, 15
	ctx := core.Unfenced(context.Background())
	cfg := testdb.NewConfig(t, testEngine)
	clock := coretest.NewClock(time.Date(2026, 4, 17, 9, 0, 0, 0, time.UTC))
	var fcfg fleet.Config
	for i := range agents {
		fcfg.Agents = append(fcfg.Agents, fleet.AgentConfig{Name: fmt.Sprintf("AGENT-%d", i), Cadence: 10 * time.Minute,
			Budget: fleet.Budget{Daily: 10, Currency: "USD"}})
	}
	var hosts [2]*fleet.Service
	var st *store.Store
	for i := range hosts {
		st = testdb.OpenConfig(t, cfg)
		hosts[i] = fleetOn(t, st, clock, fcfg)
	}
	spend := &fleet.Spend{Cost: 0.05, Currency: "USD"}
	beat := func(f *fleet.Service, agent, cycle string) error {
		_, err := f.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: agent, Cycle: cycle, Timestamp: time.UnixMilli(1), MII: 0.9, Mode: "green",
			Spend: spend, BootID: "boot-1"})
		return err
	}
	// Each agent's first report, and its spend, counted once.
	for _, a := range fcfg.Agents {
		for range 2 {
			if err := beat(hosts[0], a.Name, "C-0"); err != nil {
				t.Fatal(err)
			}
		}
	}
	raceHostsUnrefused(t, len(hosts), perHost, func(h, g int) error {
		agent := fcfg.Agents[g%agents].Name
		for n := range beats {
			// The spend's key is its cycle's: a new cycle, a new spend.
			// The same spend again is the agent's retry.
			if err := beat(hosts[h], agent, fmt.Sprintf("C-%d-%d-%d", h, g, n)); err != nil {
				return err
			}
		}
		return nil
	})
	wantStreak := 1 + len(hosts)*perHost/agents*beats
	for _, a := range fcfg.Agents {
		got, err := st.Heartbeats().AgentState(ctx, a.Name)
		if err != nil || got.Streak != wantStreak {
			t.Errorf("%s: streak %d (%v), want %d: one heartbeat a new cycle on time", a.Name, got.Streak, err, wantStreak)
		}
		spent, err := st.Meter().SpendOn(ctx, a.Name, "2026-04-17")
		if want := float64(wantStreak) * spend.Cost; err != nil || math.Abs(spent.Cost-want) > 1e-9 {
			t.Errorf("%s: spent %v today (%v), want %v: each cycle's spend once", a.Name, spent.Cost, err, want)
		}
	}
	if n, want := testdb.Rows(t, st, "agent_heartbeat"), agents+len(hosts)*perHost*beats; n != want {
		t.Errorf("%d heartbeats stored, want %d", n, want)
	}
}

// raceHostsUnrefused runs do(h, g) for perHost goroutines g of each of
// hosts hosts h at once, and fails t if do fails or a store transaction
// was refused and run again meanwhile.
func raceHostsUnrefused(t *testing.T, hosts, perHost int, do func(h, g int) error) {
	t.Helper()
	before := metrics.Sum("jarvis_store_transaction_reruns_total")
	var wg sync.WaitGroup
	for h := range hosts {
		for g := range perHost {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := do(h, g); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	if reruns := metrics.Sum("jarvis_store_transaction_reruns_total") - before; reruns != 0 {
		t.Errorf("/metrics counted %v transactions run again, want none", reruns)
	}
}

// TestHeartbeatsBeyondLockedReads: one agent's heartbeats, one after
// another, through everything a heartbeat can set off. On PostgreSQL each
// that does more than a usual heartbeat (a first report, a budget notice,
// a new boot, a failure and the success that ends it, the report after a
// silence) is run again at full isolation, once, and does what it does
// there: its notices reach the outbox. The usual ones are not run again
// and add no notice. On SQLite nothing is run again.
func TestHeartbeatsBeyondLockedReads(t *testing.T) {
	ctx := core.Unfenced(context.Background())
	st := testdb.OpenStore(t, testEngine)
	clock := coretest.NewClock(time.Date(2026, 4, 17, 9, 0, 0, 0, time.UTC))
	f := fleetOn(t, st, clock, fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: 10 * time.Minute,
		Budget: fleet.Budget{Daily: 10, Currency: "USD"}}}, CrashLoop: fleet.CrashLoop{Restarts: 3, Window: time.Hour}})
	steps := []struct {
		name    string
		before  func()
		hb      fleet.Heartbeat
		beyond  bool
		notices bool
	}{
		{name: "first report", hb: fleet.Heartbeat{Cycle: "C-1", Spend: &fleet.Spend{Cost: 1, Currency: "USD"}, BootID: "boot-1"}, beyond: true},
		{name: "the same again", hb: fleet.Heartbeat{Cycle: "C-1", Spend: &fleet.Spend{Cost: 1, Currency: "USD"}, BootID: "boot-1"}},
		{name: "usual, spending", hb: fleet.Heartbeat{Cycle: "C-2", Spend: &fleet.Spend{Cost: 1, Currency: "USD"}, BootID: "boot-1"}},
		{name: "budget warning", hb: fleet.Heartbeat{Cycle: "C-3", Spend: &fleet.Spend{Cost: 7, Currency: "USD"}, BootID: "boot-1"}, beyond: true, notices: true},
		{name: "new boot", hb: fleet.Heartbeat{Cycle: "C-4", BootID: "boot-2"}, beyond: true},
		{name: "failure", hb: fleet.Heartbeat{Cycle: "C-5", Signal: fleet.SignalFail, BootID: "boot-2"}, beyond: true, notices: true},
		{name: "success after it", hb: fleet.Heartbeat{Cycle: "C-6", BootID: "boot-2"}, beyond: true, notices: true},
		{name: "usual", hb: fleet.Heartbeat{Cycle: "C-7", BootID: "boot-2"}},
		{name: "back after a silence", before: func() {
			clock.Advance(25 * time.Minute)
			if err := f.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
		}, hb: fleet.Heartbeat{Cycle: "C-8"}, beyond: true, notices: true},
		{name: "usual again", hb: fleet.Heartbeat{Cycle: "C-9"}},
	}
	for _, step := range steps {
		if step.before != nil {
			step.before()
		}
		reruns, notices := metrics.Sum("jarvis_store_transaction_reruns_total"), testdb.Rows(t, st, "outbox")
		hb := step.hb
		hb.Agent, hb.MII, hb.Mode, hb.Timestamp = "EVE", 0.9, "green", clock.Now()
		if _, err := f.RecordHeartbeat(ctx, hb); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		want := 0.0
		if step.beyond && testEngine == store.Postgres {
			want = 1
		}
		if got := metrics.Sum("jarvis_store_transaction_reruns_total") - reruns; got != want {
			t.Errorf("%s: run again %v times, want %v", step.name, got, want)
		}
		if added := testdb.Rows(t, st, "outbox") - notices; (added > 0) != step.notices {
			t.Errorf("%s: %d notices added, want some: %v", step.name, added, step.notices)
		}
	}
	got, err := st.Heartbeats().AgentState(ctx, "EVE")
	if err != nil || got.Cycle != "C-9" || got.Announced != "" {
		t.Errorf("EVE's state ended as %+v (%v), want cycle C-9, nothing announced", got, err)
	}
	if n := testdb.Rows(t, st, "agent_boot"); n != 2 {
		t.Errorf("%d boots stored, want 2", n)
	}
}

// TestTwoHostsCardSetsNeverRefused: two Jarvis processes on one database
// publish card sets at once, as two API hosts behind a load balancer do,
// each set of cards without a budget that depend only on one another:
// every set is stored with its cards, and none was refused and run again.
func TestTwoHostsCardSetsNeverRefused(t *testing.T) {
	const perHost, sets = 8, 10
	ctx := core.Unfenced(context.Background())
	cfg := testdb.NewConfig(t, testEngine)
	var hosts [2]*card.Service
	var st *store.Store
	for i := range hosts {
		st = testdb.OpenConfig(t, cfg)
		hosts[i] = services.Wiring{Store: st, Clock: core.SystemClock{}, Room: testRoom}.Cards(card.Config{})
	}
	raceHostsUnrefused(t, len(hosts), perHost, func(h, g int) error {
		for n := range sets {
			in := card.SetInput{Key: fmt.Sprintf("set-%d-%d-%d", h, g, n), Author: card.MainAgent, Cards: []card.Input{
				{Ref: "a", Spec: services.CardSpec("First", card.P2)}, {Spec: services.CardSpec("Then", card.P3, "a")}}}
			if _, err := hosts[h].Publish(ctx, in); err != nil {
				return err
			}
		}
		return nil
	})
	if n, want := testdb.Rows(t, st, "card"), 2*len(hosts)*perHost*sets; n != want {
		t.Errorf("%d cards stored, want %d", n, want)
	}
}

// TestCardSetsBeyondLockedReads: on PostgreSQL a set with a card of a
// class that has a budget, or with a card depending on one outside the
// set, is run again at full isolation, once, and published there; the
// budget still refuses what does not fit. On SQLite nothing is run again.
func TestCardSetsBeyondLockedReads(t *testing.T) {
	ctx := core.Unfenced(context.Background())
	cards, _ := newTestCards(t, core.SystemClock{}, card.Config{Budget: map[string]card.BudgetRule{"P1": {Count: 1, Window: time.Hour}}})
	first := services.PublishOne(t, cards, "first", services.CardSpec("First", card.P2), "")
	steps := []struct {
		name    string
		spec    card.Spec
		beyond  bool
		refused bool
	}{
		{name: "no budget, depending on nothing outside", spec: services.CardSpec("Usual", card.P2)},
		{name: "a budget", spec: services.CardSpec("Budgeted", card.P1), beyond: true},
		{name: "a budget without room", spec: services.CardSpec("Over", card.P1), beyond: true, refused: true},
		{name: "a card outside the set", spec: services.CardSpec("After", card.P2, first.ID), beyond: true},
	}
	for _, step := range steps {
		reruns := metrics.Sum("jarvis_store_transaction_reruns_total")
		_, err := cards.Publish(ctx, card.SetInput{Key: step.name, Author: card.MainAgent, Cards: []card.Input{{Spec: step.spec}}})
		if refused := errors.Is(err, core.ErrBudgetExceeded); refused != step.refused || err != nil && !refused {
			t.Errorf("%s: Publish = %v, want refused by the budget: %v", step.name, err, step.refused)
		}
		want := 0.0
		if step.beyond && testEngine == store.Postgres {
			want = 1
		}
		if got := metrics.Sum("jarvis_store_transaction_reruns_total") - reruns; got != want {
			t.Errorf("%s: run again %v times, want %v", step.name, got, want)
		}
	}
}

// TestTwoHostsJournalCapExact: two Jarvis processes on one database take
// journal entries of one agent's cycle at once, many more than the cycle
// may hold: exactly fleet.journal.max_cycle_entries are kept, the rest
// refused, and no transaction was refused and run again.
func TestTwoHostsJournalCapExact(t *testing.T) {
	const perHost, tries, most = 8, 3, 5
	ctx := core.Unfenced(context.Background())
	cfg := testdb.NewConfig(t, testEngine)
	fcfg := fleet.Config{Agents: []fleet.AgentConfig{{Name: "EVE", Cadence: 10 * time.Minute}},
		Journal: fleet.JournalConfig{MaxEntryBytes: 2000, MaxCycleEntries: most, MaxCycleBytes: 1 << 20, MaxAgentBytes: 1 << 20,
			PageSize: 10, MaxPageSize: 10}}
	clock := coretest.NewClock(time.Date(2026, 4, 17, 9, 0, 0, 0, time.UTC))
	var hosts [2]*fleet.Service
	var st *store.Store
	for i := range hosts {
		st = testdb.OpenConfig(t, cfg)
		hosts[i] = fleetOn(t, st, clock, fcfg)
	}
	var mu sync.Mutex
	kept := 0
	raceHostsUnrefused(t, len(hosts), perHost, func(h, g int) error {
		for n := range tries {
			id := fmt.Sprintf("e-%d-%d-%d", h, g, n)
			_, err := hosts[h].AppendJournal(ctx, fleet.AgentJournalEntry{Agent: "EVE", Cycle: "C-1", EntryID: id, Title: "t",
				Content: id, ContentSignature: fleet.ContentSignature(id), SignalWeight: 0.5, Timestamp: clock.Now()})
			switch {
			case err == nil:
				mu.Lock()
				kept++
				mu.Unlock()
			case !errors.Is(err, core.ErrRateLimited):
				return err
			}
		}
		return nil
	})
	if n := testdb.Rows(t, st, "agent_journal"); kept != most || n != most {
		t.Errorf("%d entries taken and %d stored, want %d and %d", kept, n, most, most)
	}
}
