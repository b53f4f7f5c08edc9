package store_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.mau.fi/util/dbutil"

	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/coretest"
	"github.com/jarvis-hmi/jarvis/core/fleet"
	"github.com/jarvis-hmi/jarvis/core/oncall"
	"github.com/jarvis-hmi/jarvis/core/tripwire"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testconfig"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
)

// BenchmarkFleetPass measures the pass a fleet change runs: 100 agents,
// a tripwire on each of the eight fleet kinds of each (800 tripwires in
// 100 scopes), re-evaluated after one agent's heartbeat. Two such
// workspaces take turns pass by pass: one reads the fleet's sources many
// agents at once, as Jarvis does, the other each (kind, agent) on its own,
// as it did before. It reports both times, their ratio, and the SQL
// statements each pass makes (those do not depend on the machine's load).
func BenchmarkFleetPass(b *testing.B) {
	many := newFleetBench(b, false)
	one := newFleetBench(b, true)
	for range 2 {
		many()
		one()
	}
	var tMany, tOne time.Duration
	var sMany, sOne int64
	for b.Loop() {
		d, n := many()
		tMany, sMany = tMany+d, sMany+n
		d, n = one()
		tOne, sOne = tOne+d, sOne+n
	}
	b.ReportMetric(float64(tMany.Nanoseconds())/float64(b.N), "many-ns/pass")
	b.ReportMetric(float64(tOne.Nanoseconds())/float64(b.N), "one-ns/pass")
	b.ReportMetric(float64(tMany)/float64(tOne), "ratio")
	b.ReportMetric(float64(sMany)/float64(b.N), "many-stmts/pass")
	b.ReportMetric(float64(sOne)/float64(b.N), "one-stmts/pass")
}

// statementCounter counts the SQL statements a store runs.
type statementCounter struct {
	dbutil.DatabaseLogger
	n atomic.Int64
}

func (c *statementCounter) QueryTiming(ctx context.Context, method, query string, args []any, nrows int, d time.Duration, err error) {
	switch method {
	case "Exec", "Query", "QueryRow":
		c.n.Add(1)
	}
	c.DatabaseLogger.QueryTiming(ctx, method, query, args, nrows, d, err)
}

// newFleetBench builds a workspace of BenchmarkFleetPass, every agent
// heard from once (a third of them journaling too), and returns its step:
// the clock a minute on, a heartbeat from the next agent, then the pass,
// timed, and the statements it made. The agents fall late and offline
// and come back one a minute, so that passes fire and reset; none is a
// source error, which would quarantine its tripwires within the run.
// oneByOne strips the fleet's kinds of ResolveMany.
func newFleetBench(b *testing.B, oneByOne bool) func() (time.Duration, int64) {
	const agents = 100
	ctx := context.Background()
	st := testdb.OpenStore(b, testEngine)
	clock := coretest.NewClock(time.Date(2026, 4, 17, 9, 0, 0, 0, time.UTC))
	cfg := fleet.Config{CrashLoop: fleet.CrashLoop{Restarts: 3, Window: 10 * time.Minute}}
	for i := range agents {
		cfg.Agents = append(cfg.Agents, fleet.AgentConfig{Name: fmt.Sprintf("AGENT-%03d", i), Cadence: 10 * time.Minute,
			Budget: fleet.Budget{Daily: 10, Currency: "USD"}})
	}
	f, err := fleet.NewService(cfg, fleet.Deps{Tx: st, Heartbeats: st.Heartbeats(), Journal: st.AgentJournal(),
		Attestations: st.Attestations(), Meter: st.Meter(), Outbox: st.Outbox(), Clock: clock, Room: "!jarvis:example.org",
		Incidents: oncall.NewService(oncall.Config{EscalateAfter: 15 * time.Minute}, oncall.Deps{Store: st.Incidents(), Outbox: st.Outbox(), Clock: clock})})
	if err != nil {
		b.Fatal(err)
	}
	reg := core.NewSourceRegistry()
	f.RegisterSources(reg)
	if oneByOne {
		all := reg
		reg = core.NewSourceRegistry()
		for _, k := range all.Kinds() {
			k.ResolveMany = nil
			reg.Register(k)
		}
	}
	tw := tripwire.NewService(testconfig.Tripwires(), tripwire.Deps{Store: st.Tripwires(), Tokens: st.TripwireTokens(), Tx: st,
		Outbox: st.Outbox(), Sources: reg, Clock: clock, History: st, Room: "!jarvis:example.org"})
	conditions := map[string]tripwire.Condition{
		fleet.SourceAgentStatus:       {Op: tripwire.OpEQ, Threshold: "offline"},
		fleet.SourceAgentMII:          {Op: tripwire.OpLT, Threshold: 0.6},
		fleet.SourceAgentMode:         {Op: tripwire.OpEQ, Threshold: "red"},
		fleet.SourceAgentHeartbeatAge: {Op: tripwire.OpGT, Threshold: 1200.0},
		fleet.SourceAgentJournalCount: {Op: tripwire.OpGT, Threshold: 1.0},
		fleet.SourceAgentSpendToday:   {Op: tripwire.OpGT, Threshold: 5.0},
		fleet.SourceAgentCrashLoop:    {Op: tripwire.OpGT, Threshold: 0.0},
		fleet.SourceAgentSilence:      {Op: tripwire.OpGT, Threshold: 1800.0},
	}
	beat := func(i int) {
		agent := cfg.Agents[i%agents].Name
		_, err := f.RecordHeartbeat(ctx, fleet.Heartbeat{Agent: agent, Cycle: "C-1", Timestamp: clock.Now(), MII: 0.4 + float64(i%agents)/200,
			Mode: []string{"green", "yellow", "red"}[i%3], Spend: &fleet.Spend{Cost: 0.05, Currency: "USD"}, BootID: fmt.Sprintf("boot-%d", i%7)})
		if err != nil {
			b.Fatal(err)
		}
	}
	for i, a := range cfg.Agents {
		for _, kind := range fleet.SourceKinds {
			_, err := tw.Arm(ctx, fmt.Sprintf("@owner%d:example.org", i), tripwire.Draft{Label: kind + " of " + a.Name,
				Rationale: "measure the fleet's pass", Source: core.SourceRef{Kind: kind, Param: a.Name}, Condition: conditions[kind],
				Action: &tripwire.Action{Journal: true, Push: true}})
			if err != nil {
				b.Fatal(err)
			}
		}
		beat(i)
		if i%3 == 0 {
			for _, id := range []string{"e1", "e2"} {
				_, err := f.AppendJournal(ctx, fleet.AgentJournalEntry{Agent: a.Name, Cycle: "C-1", EntryID: id, Title: "t", Content: id,
					ContentSignature: fleet.ContentSignature(id), SignalWeight: 0.5, Timestamp: clock.Now()})
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	counter := &statementCounter{DatabaseLogger: st.DB.Log}
	st.DB.Log = counter
	next := 0
	return func() (time.Duration, int64) {
		clock.Advance(time.Minute)
		beat(next)
		next++
		counter.n.Store(0)
		start := time.Now()
		r, err := tw.Reevaluate(ctx, fleet.SourceKinds...)
		d := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		if r.Sources != agents*len(fleet.SourceKinds) {
			b.Fatalf("pass: %+v, want %d sources read", r, agents*len(fleet.SourceKinds))
		}
		return d, counter.n.Load()
	}
}
