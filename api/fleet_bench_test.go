package api_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/api"
	"github.com/jarvis-hmi/jarvis/core"
	"github.com/jarvis-hmi/jarvis/core/fleet"
)

// BenchmarkHeartbeatIngest drives the heartbeat endpoint over real HTTP on
// loopback: 64 concurrent clients post heartbeats for 100 agents, each for
// a distinct (agent, cycle), against a real SQLite file and a real
// PostgreSQL database, through the default timeouts and connection cap of
// config.example.yaml and a per-token rate of its own (benchAgentRate):
// each agent's token is driven far past the default's ten requests a
// second. It reports accepted
// heartbeats per second, the p50/p99 latency and the CPU time per
// heartbeat, and fails if any heartbeat was refused or is missing from the
// database afterwards.
func BenchmarkHeartbeatIngest(b *testing.B) { onEachEngine(b, benchmarkHeartbeatIngest) }

// benchAgentRate is the requests a second each agent's token may make in
// BenchmarkHeartbeatIngest (api.rate_limit.credential.per_second).
const benchAgentRate = 20000

func benchmarkHeartbeatIngest(b *testing.B, engine string) {
	const clients, agentCount = 64, 100
	agents := make([]fleet.AgentConfig, agentCount)
	for i := range agents {
		agents[i] = fleet.AgentConfig{Name: fmt.Sprintf("AGENT-%03d", i)}
	}
	cfg := exampleAPIConfig(b)
	cfg.RateLimit.Credential = api.Rate{PerSecond: benchAgentRate, Burst: benchAgentRate / 10}
	fx := newFleetAPIFixtureOn(b, engine, cfg, core.SystemClock{}, agents...)
	srv := serveBench(b, fx.server, clients)

	var refused atomic.Int64
	var firstErr atomic.Value
	latencies := make([][]time.Duration, clients)
	cpuStart := processCPU()
	elapsed := srv.drive(func(c, i int) {
		body := fmt.Sprintf(`{"agent":"AGENT-%03d","cycle":"C-%d","timestamp":"2026-04-17T00:00:00Z","mii":0.97,"mode_self_report":"green","notes":"bench"}`,
			i%agentCount, i/agentCount)
		t0 := time.Now()
		err := srv.post("/api/agents/heartbeat", fx.tokens.agent[fmt.Sprintf("AGENT-%03d", i%agentCount)], []byte(body), map[string]string{"Content-Type": "application/json"})
		latencies[c] = append(latencies[c], time.Since(t0))
		if err != nil {
			refused.Add(1)
			firstErr.CompareAndSwap(nil, err)
		}
	})
	cpu := processCPU() - cpuStart

	if n := refused.Load(); n > 0 {
		b.Fatalf("%d of %d heartbeats refused; first: %v", n, b.N, firstErr.Load())
	}
	if rows := fx.count(b, "agent_heartbeat"); rows != b.N {
		b.Fatalf("%d heartbeats stored, %d accepted", rows, b.N)
	}
	all := slices.Concat(latencies...)
	slices.Sort(all)
	quantile := func(q float64) float64 {
		return float64(all[min(len(all)-1, int(q*float64(len(all))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "hb/s")
	b.ReportMetric(quantile(0.50), "p50-ms")
	b.ReportMetric(quantile(0.99), "p99-ms")
	// CPU time (server and clients) per heartbeat tells what the machine
	// can do when other processes compete for its cores.
	b.ReportMetric(float64(cpu/time.Microsecond)/float64(b.N), "cpu-µs/hb")
}

// processCPU returns the user and system CPU time this process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
