package integration

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/jarvis-hmi/jarvis/internal/testkit/modelserver"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
	"github.com/jarvis-hmi/jarvis/store"
)

// loadPairs is how many idle blocks and load blocks
// BenchmarkRoundTripUnderLoad alternates; the ratio's confidence interval
// comes from resampling their round trips.
const loadPairs = 5

// BenchmarkRoundTripUnderLoad measures the chat round trip under agent load
// against idle: !ping → pong in the encrypted dedicated room while Jarvis
// is idle and while it is under full load, side by side in one run; its p95
// under load should stay within 1.2 times its idle p95. Full load is 64
// agents heartbeating as fast as they are answered (each journaling every
// tenth time), 100,000 armed tripwires on the agents' MII, re-evaluated
// whenever the fleet changes (one in 1,000 trips and resets), and card sets
// of one to three cards published back to back. The b.N round trips of each
// condition are split over loadPairs idle blocks and loadPairs load blocks,
// alternating (idle first in even pairs, load first in odd ones), so that
// drift of the machine's own load hits both; the load starts 2 s before its
// block and Jarvis gets 2 s after it to drain.
//
// It runs three ways, the workspace's criterion (the orchestrator's load on
// capacity of its own) and today's shared machine:
//
//   - separate-postgres: PostgreSQL, two hosts. The load's host is a
//     network namespace of its own pinned to the last CPU: the load
//     generator, a process of its own that sends the load through the
//     two-host tests' balancer (running in it) to the second API host,
//     and that host, a standby: a second `jarvis run` on the same database
//     (reaching it and the homeserver over the host's link, as in
//     TestTwoHostsFailover), which takes the agents' reports as every
//     Jarvis on PostgreSQL does. The lease holder, which talks and does
//     what follows from the reports, and the homeserver are pinned to the
//     other CPUs. It fails unless every report was answered 2xx by the
//     standby. PostgreSQL's server, and the relays of the standby's link
//     (in the test process), are the machine's and not pinned. How the
//     agents' reports spread over both hosts is BenchmarkIntakeAcrossHosts.
//   - separate-sqlite: the same on SQLite, on one host.
//   - shared: SQLite, the load generator inside the test process, nothing
//     pinned: everything on every core.
//
// The separate ways need root (network namespaces, taskset) and two CPUs;
// PostgreSQL needs JARVIS_TEST_POSTGRES. Each reports each condition's
// p50/p95/p99, the ratio of the p95s and a 95 % bootstrap confidence
// interval of that ratio (2,000 resamples of each condition's round trips),
// and what the load achieved.
//
// Beside each !ping the admin asks Jarvis something only its language
// model answers; the model is a scripted server whose first token comes
// modelLatency after the request, so that the time to the first token
// the person sees (the streamed reply's first message), less
// modelLatency, is Jarvis's own share: "ttft-idle-" and "ttft-load-"
// p50/p95/p99, and "ttft-p95-ratio".
//
// With JARVIS_BENCH_PROFILE set to a directory, Jarvis serves its profiles
// and a 10 s CPU profile of the first load block of the shared way is
// written there (load.pprof), for `go tool pprof`.
func BenchmarkRoundTripUnderLoad(b *testing.B) {
	b.Run("separate-postgres", func(b *testing.B) {
		// Skipped unless JARVIS_TEST_POSTGRES is set.
		roundTripUnderLoad(b, testdb.NewConfig(b, store.Postgres), true)
	})
	b.Run("separate-sqlite", func(b *testing.B) {
		roundTripUnderLoad(b, testdb.NewConfig(b, store.SQLite), true)
	})
	b.Run("shared", func(b *testing.B) {
		roundTripUnderLoad(b, testdb.NewConfig(b, store.SQLite), false)
	})
}

// roundTripUnderLoad is one way of BenchmarkRoundTripUnderLoad: on db,
// with the load on capacity of its own (separate) or not.
func roundTripUnderLoad(b *testing.B, db store.Config, separate bool) {
	var gen *host
	loadCPU := runtime.NumCPU() - 1
	if separate {
		switch {
		case os.Geteuid() != 0:
			b.Skip("the load on a CPU of its own needs root (network namespaces, taskset)")
		case loadCPU < 1:
			b.Skip("the load on a CPU of its own needs two CPUs")
		}
		if _, err := exec.LookPath("taskset"); err != nil {
			b.Skip("the load on a CPU of its own needs taskset (util-linux)")
		}
		gen = newHost(b, 0)
	}
	profileDir := os.Getenv("JARVIS_BENCH_PROFILE")
	if separate {
		profileDir = ""
	}
	model := modelserver.New()
	b.Cleanup(model.Close)
	model.Fallback(modelserver.Step{Delay: modelLatency, Text: "All quiet: every agent reports on time."})
	l := newLoaded(b, loadSetup{Agents: 64, Profiling: profileDir != "", Store: db, ListenAll: separate,
		Tripwires: workload.Tripwires{Count: 100_000, Scopes: 10_000, TripEvery: 1000},
		Extra:     fmt.Sprintf("model:\n  base_url: %s\n  name: bench\n  budget: {workspace_tokens: 0, person_tokens: 0}\n", model.BaseURL())})
	if separate {
		chat := "0"
		if loadCPU > 1 {
			chat = "0-" + strconv.Itoa(loadCPU-1)
		}
		pin(b, chat, l.j.cmd.Process.Pid, homeserverPID(b))
		b.Cleanup(func() { pin(b, allCPUs(), homeserverPID(b)) })
	}
	// On PostgreSQL, a standby on the load's host and CPU takes the load.
	var backends []string
	if separate && db.Type == store.Postgres {
		gen.reach(db.URI)
		_, port, _ := net.SplitHostPort(strings.TrimPrefix(l.api, "http://"))
		backends = []string{net.JoinHostPort(gen.there, port)}
		standby := l.j.TwinOn(b, gen, "JARVIS_API_LISTEN="+backends[0])
		pin(b, strconv.Itoa(loadCPU), standby.cmd.Process.Pid)
		deadline := time.Now().Add(waitReply)
		for !strings.Contains(standby.logs.String(), "staying mute") {
			if time.Now().After(deadline) {
				b.Fatalf("the standby never said it stays mute:\n%s", standby.logs.String())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	alice := l.admin
	waitEncrypted(b, l.room, alice)
	replyTo := func(sent id.EventID) func(*event.Event) bool {
		reply := l.j.replyTo(sent)
		return func(evt *event.Event) bool { return tesths.Encrypted(evt) && reply(evt) }
	}
	idle := &roundTripper{name: "idle", person: alice, room: l.room, replyTo: replyTo}
	loaded := &roundTripper{name: "load", person: alice, room: l.room, replyTo: replyTo}
	// A question only the model answers, addressed by Jarvis's user name.
	ask := l.j.UserID.Localpart() + ", what's the meaning of all this?"
	ttftIdle := &roundTripper{name: "ttft-idle", text: ask, person: alice, room: l.room, replyTo: replyTo}
	ttftLoaded := &roundTripper{name: "ttft-load", text: ask, person: alice, room: l.room, replyTo: replyTo}
	for range 3 {
		idle.once(b, false)
		ttftIdle.once(b, false)
	}

	cfg := l.config(8)
	cfg.Heartbeats, cfg.JournalEvery = workload.Max, 10
	cfg.CardSets = workload.Max
	per := max(1, b.N/loadPairs)
	var heartbeats, sets int
	var busy time.Duration
	answers := map[string]map[int]int{} // the balancer's, by backend and status
	// startLoad starts a block's load; the function it returns stops it
	// and returns what it achieved.
	startLoad := func() func() loadResult {
		cfg.Seed++
		if separate {
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(l.api, "http://"))
			g := startLoadGenerator(b, gen, loadCPU, loadSpec{Seed: cfg.Seed, API: "http://" + net.JoinHostPort(gen.here, port),
				Backends: backends, Tokens: cfg.Tokens, Agents: cfg.Agents, JournalEvery: cfg.JournalEvery})
			return func() loadResult { return g.stop(b) }
		}
		w, err := workload.Start(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return func() loadResult {
			rec := w.Stop()
			return loadResult{Heartbeats: rec.HeartbeatCount(), CardSets: len(rec.CardSets), Elapsed: rec.Elapsed,
				Refused: rec.Refused, Failed: rec.Failed}
		}
	}
	measureLoaded := func() {
		stop := startLoad()
		time.Sleep(2 * time.Second)
		profiled := make(chan error, 1)
		if profileDir != "" {
			path := filepath.Join(profileDir, "load.pprof")
			go func() { profiled <- cpuProfile(l.api, path, 10*time.Second) }()
			profileDir = ""
		} else {
			profiled <- nil
		}
		for range per {
			loaded.once(b, true)
			ttftLoaded.once(b, true)
		}
		if err := <-profiled; err != nil {
			b.Error(err)
		}
		rec := stop()
		if len(rec.Failed) > 0 || len(rec.Refused) > 0 {
			b.Fatalf("the load was not all taken: refused %v, failed %v", rec.Refused, rec.Failed)
		}
		heartbeats += rec.Heartbeats
		sets += rec.CardSets
		for backend, by := range rec.Answers {
			for status, n := range by {
				if answers[backend] == nil {
					answers[backend] = map[int]int{}
				}
				answers[backend][status] += n
			}
		}
		busy += rec.Elapsed
		time.Sleep(2 * time.Second)
	}
	b.ResetTimer()
	for pair := range loadPairs {
		if pair%2 == 1 {
			measureLoaded()
		}
		for range per {
			idle.once(b, true)
			ttftIdle.once(b, true)
		}
		if pair%2 == 0 {
			measureLoaded()
		}
	}
	b.StopTimer()

	reportRatio(b, idle, loaded)
	b.ReportMetric(float64(heartbeats)/busy.Seconds(), "hb/s")
	b.ReportMetric(float64(sets)/busy.Seconds(), "sets/s")
	if backends != nil {
		// The standby took the load, every report of it.
		taken := 0
		for backend, by := range answers {
			for status, n := range by {
				if backend != backends[0] || status/100 != 2 {
					b.Errorf("%s answered %d of the agents' reports with %d; want the standby (%s) to answer each 2xx", backend, n, status, backends[0])
				}
				taken += n
			}
		}
		if taken == 0 {
			b.Errorf("the standby took none of the load: %v", answers)
		}
		b.Logf("the agents' reports by status, all to the standby: %v", answers)
	}
	b.ReportMetric(reportLatencies(b, "ttft-load-", jarvisShare(ttftLoaded.durations))/reportLatencies(b, "ttft-idle-", jarvisShare(ttftIdle.durations)),
		"ttft-p95-ratio")
}

// reportRatio reports each side's latencies (each metric's name starting
// with its name), the ratio of other's p95 to base's ("p95-ratio") and its
// 95 % bootstrap confidence interval ("ratio-lo", "ratio-hi").
func reportRatio(b *testing.B, base, other *roundTripper) {
	ratio := reportLatencies(b, other.name+"-", other.durations) / reportLatencies(b, base.name+"-", base.durations)
	lo, hi := bootstrapRatio(base.durations, other.durations, 0.95, 2000)
	b.ReportMetric(ratio, "p95-ratio")
	b.ReportMetric(lo, "ratio-lo")
	b.ReportMetric(hi, "ratio-hi")
}

// modelLatency is how long the scripted model takes to its first token in
// BenchmarkRoundTripUnderLoad.
const modelLatency = 200 * time.Millisecond

// jarvisShare is each time to first token less the model's own latency.
func jarvisShare(durations []time.Duration) []time.Duration {
	out := make([]time.Duration, len(durations))
	for i, d := range durations {
		out[i] = d - modelLatency
	}
	return out
}

// quantile is the q-quantile of durations (nearest rank), which it sorts.
func quantile(durations []time.Duration, q float64) time.Duration {
	slices.Sort(durations)
	return durations[min(len(durations)-1, int(q*float64(len(durations))))]
}

// bootstrapRatio is the 95 % percentile-bootstrap confidence interval of
// quantile q of loaded over quantile q of idle: each resample draws both
// sets again with replacement, from a fixed seed.
func bootstrapRatio(idle, loaded []time.Duration, q float64, resamples int) (lo, hi float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(from []time.Duration) time.Duration {
		s := make([]time.Duration, len(from))
		for i := range s {
			s[i] = from[rng.IntN(len(from))]
		}
		return quantile(s, q)
	}
	ratios := make([]float64, resamples)
	for i := range ratios {
		ratios[i] = float64(draw(loaded)) / float64(draw(idle))
	}
	slices.Sort(ratios)
	return ratios[int(0.025*float64(resamples))], ratios[min(resamples-1, int(0.975*float64(resamples)))]
}

// cpuProfile fetches a CPU profile of d from the Jarvis whose API is at
// base and writes it to path.
func cpuProfile(base, path string, d time.Duration) error {
	resp, err := getMetrics(fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", base, int(d.Seconds())))
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile: %s", resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
