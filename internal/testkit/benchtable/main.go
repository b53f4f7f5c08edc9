// Command benchtable reads the output of `go test -bench` (as `make bench`
// writes it) on standard input and prints the benchmark table of docs/benchmarks.md:
// what | target | measured, with whether each target is met.
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	results, err := parse(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if len(results) == 0 {
		fmt.Fprintln(os.Stderr, "no benchmark results in the input")
		os.Exit(1)
	}
	fmt.Print(table(results))
}

// result is one benchmark's line: its iteration count and its metrics by
// unit ("ns/op", "p95-ms", "hb/s", …).
type result struct {
	n       int
	metrics map[string]float64
}

// gomaxprocs is the -N suffix go test adds to a benchmark's name.
var gomaxprocs = regexp.MustCompile(`-\d+$`)

// parse reads benchmark lines. The store package runs its benchmarks once
// per engine, announcing each on a line of its own ("=== store tests on
// …"); its results get the engine added to their name ("/sqlite3",
// "/postgres"), as the api package names its sub-benchmarks.
func parse(r io.Reader) (map[string]result, error) {
	results := map[string]result{}
	suffix := ""
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if engine, ok := strings.CutPrefix(line, "=== store tests on "); ok {
			engine = strings.ToLower(engine)
			switch {
			case strings.Contains(engine, "skipped"):
			case strings.HasPrefix(engine, "postgres"):
				suffix = "/postgres"
			case strings.HasPrefix(engine, "sqlite"):
				suffix = "/sqlite3"
			}
			continue
		}
		if strings.HasPrefix(line, "ok ") || strings.HasPrefix(line, "FAIL") {
			suffix = ""
			continue
		}
		fields := strings.Fields(line)
		if len(fields) < 4 || !strings.HasPrefix(fields[0], "Benchmark") || len(fields)%2 != 0 {
			continue
		}
		n, err := strconv.Atoi(fields[1])
		if err != nil {
			continue
		}
		res := result{n: n, metrics: map[string]float64{}}
		for i := 2; i+1 < len(fields); i += 2 {
			v, err := strconv.ParseFloat(fields[i], 64)
			if err != nil {
				return nil, fmt.Errorf("benchmark line %q: %w", line, err)
			}
			res.metrics[fields[i+1]] = v
		}
		results[gomaxprocs.ReplaceAllString(fields[0], "")+suffix] = res
	}
	return results, sc.Err()
}

// row is one line of the table: what it measures, the target, and how to
// read the measurement (empty when the benchmarks it needs did not run).
type row struct {
	what, target string
	measured     func(map[string]result) string
}

var rows = []row{
	{"chat round trip `!ping` → `pong`, encrypted rooms, Jarvis vs the echo floor (`BenchmarkRoundTrip/encrypted`)",
		"Jarvis p95 ≤ 1.25 × echo p95", roundTrip("BenchmarkRoundTrip/encrypted")},
	{"the same in plaintext rooms (`BenchmarkRoundTrip/plaintext`)",
		"Jarvis p95 ≤ 1.25 × echo p95", roundTrip("BenchmarkRoundTrip/plaintext")},
	{"chat round trip in the encrypted room, idle and under full load, alternating blocks, PostgreSQL, two hosts: the load generator and a standby Jarvis (the second API host, which takes the agents' reports) in a network namespace of its own pinned to a CPU of its own; the lease holder, which talks and does what follows from the reports, and the homeserver on the other CPU (`BenchmarkRoundTripUnderLoad/separate-postgres`)",
		"p95 under load ≤ 1.2 × p95 idle", underLoad("BenchmarkRoundTripUnderLoad/separate-postgres", true)},
	{"the same on SQLite, one host (`BenchmarkRoundTripUnderLoad/separate-sqlite`)",
		"p95 under load ≤ 1.2 × p95 idle", underLoad("BenchmarkRoundTripUnderLoad/separate-sqlite", true)},
	{"the same with everything on every core, the load generator inside the test process, SQLite (`BenchmarkRoundTripUnderLoad/shared`)",
		"stated, for comparison", underLoad("BenchmarkRoundTripUnderLoad/shared", false)},
	{"chat round trip in the encrypted room while the orchestrator agent reports and while it is down (its alert and offline notice going out), alternating blocks (`BenchmarkRoundTripOrchestratorDown`)",
		"p95 down ≤ 1.2 × p95 up", orchestratorDown("BenchmarkRoundTripOrchestratorDown")},
	{"one tripwire evaluator pass, 100,000 tripwires, SQLite (`BenchmarkTripwireTick`)",
		"≤ 250 ms", perOp("BenchmarkTripwireTick/sqlite3", 250)},
	{"the same on PostgreSQL", "≤ 250 ms", perOp("BenchmarkTripwireTick/postgres", 250)},
	{"what keeping the sources' history adds to that pass, the two side by side (`BenchmarkTripwireTickHistory`)",
		"≤ 1.10 ×", sideBySide("BenchmarkTripwireTickHistory/sqlite3")},
	{"what quiet hours and daily digests add to that pass, the two side by side (`BenchmarkTripwireTickQuiet`)",
		"≤ 1.10 ×", sideBySide("BenchmarkTripwireTickQuiet/sqlite3")},
	{"what a silence holding adds to that pass, the two side by side (`BenchmarkTripwireTickSilences`)",
		"≤ 1.10 ×", sideBySide("BenchmarkTripwireTickSilences/sqlite3")},
	{"the pass a fleet change runs, 800 tripwires on the eight fleet kinds of 100 agents, the fleet read many agents at once vs one (kind, agent) at a time, pass by pass in turn, SQLite (`BenchmarkFleetPass`)",
		"stated", fleetPass("BenchmarkFleetPass/sqlite3")},
	{"the same on PostgreSQL", "stated", fleetPass("BenchmarkFleetPass/postgres")},
	{"a 7-day backtest over 5-minute readings, from SQLite (`BenchmarkBacktest`)",
		"≤ 20 ms", perOp("BenchmarkBacktest/sqlite3", 20)},
	{"drawing a trip's chart, a day of 5-minute readings, as an 800 × 400 PNG (`BenchmarkRender`)",
		"≤ 50 ms", perOp("BenchmarkRender", 50)},
	{"heartbeat ingest over HTTP, 64 clients, SQLite (`BenchmarkHeartbeatIngest`)",
		"≥ 5,000/s, p99 ≤ 20 ms", heartbeats("BenchmarkHeartbeatIngest/sqlite3", 20)},
	{"the same on PostgreSQL (fsync on)", "≥ 5,000/s, p99 ≤ 30 ms", heartbeats("BenchmarkHeartbeatIngest/postgres", 30)},
	{"agents' reports on PostgreSQL across two API hosts: two `jarvis run` processes on one database, holder and standby each serving the agents, behind a round-robin load balancer, 64 clients heartbeating and 16 publishing card sets of 5 at once for 10 s (`BenchmarkIntakeAcrossHosts/hosts=2`)",
		"≥ 5,000 heartbeats/s, p99 ≤ 30 ms, and ≥ 1,000 sets/s, summed over the hosts, fsync on", acrossHosts("BenchmarkIntakeAcrossHosts/hosts=2")},
	{"the same through one host, the holder's API alone (`BenchmarkIntakeAcrossHosts/hosts=1`)",
		"stated, beside the two hosts'", acrossHosts("BenchmarkIntakeAcrossHosts/hosts=1")},
	{"the token check every API request makes, credential cached (`BenchmarkAuthenticate`)",
		"stated, beside the heartbeat's CPU per request", micro("BenchmarkAuthenticate")},
	{"card sets of 5 over HTTP, 16 clients, SQLite (`BenchmarkPublishCardSets`)",
		"≥ 1,000 sets/s", cardSets("BenchmarkPublishCardSets/sqlite3", 1000)},
	{"the same on PostgreSQL", "≥ 1,000 sets/s", cardSets("BenchmarkPublishCardSets/postgres", 1000)},
	{"wake router: one reconcile over 1,000 conditions, SQLite (`BenchmarkReconcile`)",
		"stated", perOp("BenchmarkReconcile/sqlite3", 0)},
	{"the same on PostgreSQL", "stated", perOp("BenchmarkReconcile/postgres", 0)},
	{"the lease's fence in a one-row write transaction, SQLite, with and without it by turns (`BenchmarkFencedWrite`)",
		"stated", fence("BenchmarkFencedWrite/sqlite3")},
	{"the same on PostgreSQL", "stated", fence("BenchmarkFencedWrite/postgres")},
	{"the console relay's round while nobody types, five a second in every running Jarvis, SQLite (`BenchmarkRelayRound`)",
		"stated", micro("BenchmarkRelayRound/sqlite3")},
	{"the same on PostgreSQL", "stated", micro("BenchmarkRelayRound/postgres")},
	{"wake router end to end: a card blocked over the API → its notice in the room (`BenchmarkWakeRouter`)",
		"stated", latency("BenchmarkWakeRouter")},
}

func table(results map[string]result) string {
	var b strings.Builder
	b.WriteString("| what | target | measured |\n| --- | --- | --- |\n")
	for _, r := range rows {
		m := r.measured(results)
		if m == "" {
			m = "not run"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r.what, r.target, m)
	}
	return b.String()
}

// verdict says whether a target was met; no target (0) says nothing.
func verdict(met bool, hasTarget bool) string {
	switch {
	case !hasTarget:
		return ""
	case met:
		return " — meets the target"
	default:
		return " — **misses the target**"
	}
}

// roundTrip reads BenchmarkRoundTrip's sub-benchmark name, in which
// Jarvis and the echo client took turns.
func roundTrip(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		m := r.metrics
		ratio := m["p95-ratio"]
		return fmt.Sprintf("Jarvis p50 %.0f ms, p95 %.0f ms, p99 %.0f ms; echo p50 %.0f ms, p95 %.0f ms, p99 %.0f ms: **%.2f ×** (%d round trips each, taking turns)%s",
			m["jarvis-p50-ms"], m["jarvis-p95-ms"], m["jarvis-p99-ms"], m["echo-p50-ms"], m["echo-p95-ms"], m["echo-p99-ms"],
			ratio, r.n, verdict(ratio <= 1.25, true))
	}
}

func underLoad(name string, targeted bool) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		m := r.metrics
		return fmt.Sprintf("idle p50 %.0f ms, p95 %.0f ms, p99 %.0f ms; load p50 %.0f ms, p95 %.0f ms, p99 %.0f ms: **%.2f ×** (95 %% CI %.2f–%.2f; %d round trips each; the load ran at %.0f heartbeats/s and %.0f card sets/s)%s",
			m["idle-p50-ms"], m["idle-p95-ms"], m["idle-p99-ms"], m["load-p50-ms"], m["load-p95-ms"], m["load-p99-ms"],
			m["p95-ratio"], m["ratio-lo"], m["ratio-hi"], r.n, m["hb/s"], m["sets/s"], verdict(m["p95-ratio"] <= 1.2, targeted))
	}
}

// orchestratorDown reads the round trips while the orchestrator agent
// reports ("up") and while it is down.
func orchestratorDown(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		m := r.metrics
		return fmt.Sprintf("up p50 %.0f ms, p95 %.0f ms, p99 %.0f ms; down p50 %.0f ms, p95 %.0f ms, p99 %.0f ms: **%.2f ×** (95 %% CI %.2f–%.2f; %d round trips up, as many or more down)%s",
			m["up-p50-ms"], m["up-p95-ms"], m["up-p99-ms"], m["down-p50-ms"], m["down-p95-ms"], m["down-p99-ms"],
			m["p95-ratio"], m["ratio-lo"], m["ratio-hi"], r.n, verdict(m["p95-ratio"] <= 1.2, true))
	}
}

func perOp(name string, maxMS float64) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		ms := r.metrics["ns/op"] / 1e6
		out := fmt.Sprintf("**%.1f ms** per operation (%d operations)", ms, r.n)
		if cpu, ok := r.metrics["cpu-ns/op"]; ok {
			out += fmt.Sprintf(", %.0f ms CPU", cpu/1e6)
		}
		return out + verdict(ms <= maxMS, maxMS > 0)
	}
}

// sideBySide reads a pass with and without what a benchmark weighs, and
// their ratio.
func sideBySide(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		ratio := r.metrics["ratio"]
		return fmt.Sprintf("**%.2f ×**: %.0f ms with, %.0f ms without (%d pairs of passes)", ratio,
			r.metrics["with-ns/pass"]/1e6, r.metrics["without-ns/pass"]/1e6, r.n) + verdict(ratio <= 1.10, true)
	}
}

// fleetPass reads the pass of BenchmarkFleetPass reading the fleet many
// agents at once against one at a time: times, ratio and statements.
func fleetPass(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		m := r.metrics
		return fmt.Sprintf("**%.2f ×**: %.1f ms at once, %.1f ms one at a time; %.0f statements a pass against %.0f (%d pairs of passes)",
			m["ratio"], m["many-ns/pass"]/1e6, m["one-ns/pass"]/1e6, m["many-stmts/pass"], m["one-stmts/pass"], r.n)
	}
}

func fence(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		return fmt.Sprintf("%.0f µs without, %.0f µs with: **%.2f ×** (%d transactions each)",
			r.metrics["plain-µs/tx"], r.metrics["fenced-µs/tx"], r.metrics["fenced/plain"], r.n)
	}
}

func micro(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		return fmt.Sprintf("**%.1f µs** per operation, %.0f allocations (%d operations)", r.metrics["ns/op"]/1e3, r.metrics["allocs/op"], r.n)
	}
}

// heartbeats reads BenchmarkHeartbeatIngest against the target of 5,000
// heartbeats a second with a p99 of at most maxP99 milliseconds.
func heartbeats(name string, maxP99 float64) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		rate, p99 := r.metrics["hb/s"], r.metrics["p99-ms"]
		return fmt.Sprintf("**%.0f/s, p99 %.1f ms** (p50 %.1f ms, %.0f µs CPU per heartbeat; %d heartbeats%s)%s",
			rate, p99, r.metrics["p50-ms"], r.metrics["cpu-µs/hb"], r.n, reruns(r), verdict(rate >= 5000 && p99 <= maxP99, true))
	}
}

func cardSets(name string, minRate float64) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		rate := r.metrics["sets/s"]
		return fmt.Sprintf("**%.0f sets/s** (%d sets%s)%s", rate, r.n, reruns(r), verdict(rate >= minRate, minRate > 0))
	}
}

// reruns says how many of a run's transactions PostgreSQL refused and the
// store ran again, per 1,000 (none on SQLite, whose writers take turns);
// nothing for output from before the benchmarks counted them.
func reruns(r result) string {
	n, ok := r.metrics["reruns/1k-tx"]
	if !ok || r.metrics["tx/op"] == 0 {
		return ""
	}
	return fmt.Sprintf("; %.1f reruns per 1,000 of %.0f transactions", n, r.metrics["tx/op"]*float64(r.n))
}

func latency(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		return fmt.Sprintf("p50 **%.0f ms**, p95 %.0f ms, p99 %.0f ms (%d notices)", r.metrics["p50-ms"], r.metrics["p95-ms"], r.metrics["p99-ms"], r.n)
	}
}

// acrossHosts reads BenchmarkIntakeAcrossHosts: heartbeats and card sets
// a second summed over the API hosts, against 5,000 heartbeats a second
// with a p99 of at most 30 ms and 1,000 sets a second, with fsync on.
func acrossHosts(name string) func(map[string]result) string {
	return func(rs map[string]result) string {
		r, ok := rs[name]
		if !ok {
			return ""
		}
		m := r.metrics
		fsync := "on"
		if m["fsync"] == 0 {
			fsync = "**off**"
		}
		met := m["hb/s"] >= 5000 && m["p99-ms"] <= 30 && m["sets/s"] >= 1000 && m["fsync"] == 1
		return fmt.Sprintf("**%.0f heartbeats/s, p99 %.1f ms** (p50 %.1f ms) and **%.0f sets/s** at once; fsync %s; the Jarvis processes used %.2f cores together, the load generator and balancer %.2f; %.0f reruns per 1,000 transactions",
			m["hb/s"], m["p99-ms"], m["p50-ms"], m["sets/s"], fsync, m["jarvis-cores"], m["driver-cores"], m["reruns/1000tx"]) + verdict(met, strings.Contains(name, "hosts=2"))
	}
}
