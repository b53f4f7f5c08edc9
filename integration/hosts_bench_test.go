package integration

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/client"
	"github.com/jarvis-hmi/jarvis/internal/testkit/testdb"
	"github.com/jarvis-hmi/jarvis/store"
)

// intakePhase is how long BenchmarkIntakeAcrossHosts drives each of its
// sub-benchmarks, whatever b.N.
const intakePhase = 10 * time.Second

// BenchmarkIntakeAcrossHosts is the agents' capacity on PostgreSQL when
// every Jarvis takes their reports: two `jarvis run` processes on one
// database, the holder and a standby each with an API of its own (on this
// machine's loopback: the figure is the API processes', without a
// network between them), behind the test's own round-robin load balancer.
// For intakePhase, 64 clients post heartbeats as fast as they are
// answered (each a distinct agent and cycle) and 16 post card sets of five
// cards (each with its own idempotency key), both at once, through the
// load balancer: to the holder alone (hosts=1), then to both (hosts=2).
// It reports heartbeats and card sets a second summed over the hosts, the
// heartbeats' p50 and p99, whether the database runs with fsync, the
// store transactions PostgreSQL refused and the processes ran again (per
// 1,000), the cores the Jarvis processes used together and those the test
// process (load generator and load balancer) used, and
// fails if any was refused or an acknowledged one is not stored once.
func BenchmarkIntakeAcrossHosts(b *testing.B) {
	if os.Getenv(testdb.EnvPostgres) == "" {
		b.Skipf("%s is not set: the agents are served by every Jarvis on PostgreSQL only", testdb.EnvPostgres)
	}
	l := newLoaded(b, loadSetup{Agents: 64, Store: testdb.EmptyConfig(b, store.Postgres)})
	standbyAPI := cardAPIListen(b)
	standby := l.j.Twin(b, "JARVIS_API_LISTEN="+standbyAPI)
	deadline := time.Now().Add(waitReply)
	for !strings.Contains(standby.logs.String(), "staying mute") {
		if time.Now().After(deadline) {
			b.Fatalf("the standby never said it stays mute:\n%s", standby.logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	var fsync string
	if err := l.st.DB.QueryRow(context.Background(), "SHOW fsync").Scan(&fsync); err != nil {
		b.Fatal(err)
	}
	apis := []string{strings.TrimPrefix(l.api, "http://"), standbyAPI}
	for _, hosts := range []int{1, 2} {
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			_, base := newBalancer(b, apis[:hosts]...)
			before, driverBefore := storeCounters(b, apis), ownCPU()
			r := driveIntake(b, l, base, fmt.Sprintf("h%d", hosts))
			after, driver := storeCounters(b, apis), ownCPU()-driverBefore
			b.ReportMetric(float64(len(r.beats))/r.elapsed.Seconds(), "hb/s")
			b.ReportMetric(float64(quantile(r.latencies, 0.50))/float64(time.Millisecond), "p50-ms")
			b.ReportMetric(float64(quantile(r.latencies, 0.99))/float64(time.Millisecond), "p99-ms")
			b.ReportMetric(float64(r.sets)/r.elapsed.Seconds(), "sets/s")
			b.ReportMetric(map[string]float64{"on": 1, "off": 0}[fsync], "fsync")
			txs := after.transactions - before.transactions
			b.ReportMetric(1000*(after.reruns-before.reruns)/max(txs, 1), "reruns/1000tx")
			b.ReportMetric((after.cpu-before.cpu)/r.elapsed.Seconds(), "jarvis-cores")
			b.ReportMetric(driver.Seconds()/r.elapsed.Seconds(), "driver-cores")
		})
	}
}

// counters are what the Jarvis processes' /metrics say of their stores
// and CPU, summed over them.
type counters struct{ transactions, reruns, cpu float64 }

// storeCounters reads the store transactions, their reruns and the CPU
// seconds of the Jarvis processes at apis (host:port).
func storeCounters(b *testing.B, apis []string) counters {
	b.Helper()
	var c counters
	for _, api := range apis {
		resp, err := getMetrics("http://" + api + "/metrics")
		if err != nil {
			b.Fatal(err)
		}
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), " ")
			if !ok || strings.HasPrefix(name, "#") {
				continue
			}
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				continue
			}
			switch {
			case name == "jarvis_store_transactions_total":
				c.transactions += v
			case strings.HasPrefix(name, "jarvis_store_transaction_reruns_total"):
				c.reruns += v
			case name == "process_cpu_seconds_total":
				c.cpu += v
			}
		}
		resp.Body.Close()
	}
	return c
}

// ownCPU is the CPU time this process (the load generator and the load
// balancer) has used.
func ownCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// intakeRun is what driveIntake acknowledged.
type intakeRun struct {
	beats     []string // agent/cycle
	latencies []time.Duration
	sets      int
	elapsed   time.Duration
}

// driveIntake posts heartbeats from 64 clients and card sets from 16 to
// base for intakePhase, all at once (the last requests answered after it),
// and checks that what was
// acknowledged is stored once; tag keeps its cycles and keys apart from
// another run's.
func driveIntake(b *testing.B, l *loaded, base, tag string) intakeRun {
	const beaters, publishers, cardsPerSet = 64, 16, 5
	// Requests stop being sent at end; none is cut off.
	ctx := context.Background()
	end := time.Now().Add(intakePhase)
	transport := &http.Transport{MaxIdleConnsPerHost: beaters + publishers, MaxConnsPerHost: beaters + publishers}
	defer transport.CloseIdleConnections()
	var mu sync.Mutex
	var run intakeRun
	var refused atomic.Int64
	var firstErr atomic.Value
	fail := func(err error) {
		refused.Add(1)
		firstErr.CompareAndSwap(nil, err)
	}
	var wg sync.WaitGroup
	start := time.Now()
	for i := range beaters {
		agent := l.agents[i%len(l.agents)]
		c := client.New(base, l.tokens.Agents[agent])
		c.HTTP = &http.Client{Transport: transport, Timeout: 30 * time.Second}
		wg.Go(func() {
			mii := 0.97
			for n := 0; time.Now().Before(end); n++ {
				cycle := fmt.Sprintf("%s-%d-%d", tag, i, n)
				t0 := time.Now()
				if _, err := c.Heartbeat(ctx, client.Heartbeat{Cycle: cycle, MII: &mii, Mode: "green", Notes: "bench"}); err != nil {
					fail(err)
					continue
				}
				took := time.Since(t0)
				mu.Lock()
				run.beats = append(run.beats, agent+"/"+cycle)
				run.latencies = append(run.latencies, took)
				mu.Unlock()
			}
		})
	}
	orchestrator := client.New(base, l.tokens.Orchestrator)
	orchestrator.HTTP = &http.Client{Transport: transport, Timeout: 30 * time.Second}
	for i := range publishers {
		wg.Go(func() {
			for n := 0; time.Now().Before(end); n++ {
				cards := make([]client.CardSpec, cardsPerSet)
				for j := range cards {
					cards[j] = client.CardSpec{Ref: fmt.Sprintf("c%d", j), Goal: fmt.Sprintf("Set %d-%d, step %d", i, n, j),
						Acceptance: []string{"tests pass", "reviewed"}, Priority: fmt.Sprintf("P%d", 2+j%2)}
				}
				if _, err := orchestrator.PublishCardSet(ctx, fmt.Sprintf("%s-%d-%d", tag, i, n), cards...); err != nil {
					fail(err)
					continue
				}
				mu.Lock()
				run.sets++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	run.elapsed = time.Since(start)
	if n := refused.Load(); n > 0 {
		b.Fatalf("%d requests refused or unanswered; first: %v", n, firstErr.Load())
	}

	bg := context.Background()
	var rows, sets int
	if err := l.st.DB.QueryRow(bg, `SELECT COUNT(*) FROM agent_heartbeat WHERE cycle LIKE $1`, tag+"-%").Scan(&rows); err != nil {
		b.Fatal(err)
	}
	if err := l.st.DB.QueryRow(bg, `SELECT COUNT(*) FROM card_set WHERE idem_key LIKE $1`, tag+"-%").Scan(&sets); err != nil {
		b.Fatal(err)
	}
	// Every acknowledged one is stored, once ((agent, cycle) and the
	// idempotency key are unique), and nothing else.
	if rows != len(run.beats) || sets != run.sets {
		b.Fatalf("%d heartbeats and %d card sets stored, %d and %d acknowledged", rows, sets, len(run.beats), run.sets)
	}
	slices.Sort(run.latencies)
	return run
}
