package integration

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
)

// envLoadGenerator, set, makes the test binary a load generator: the
// value is a loadSpec in JSON. It runs the workload until its standard
// input closes and writes what the workload achieved (a loadResult in
// JSON) to its standard output.
const envLoadGenerator = "JARVIS_TEST_LOAD_GENERATOR"

// loadSpec is the workload a load generator runs: every agent
// heartbeating as fast as it is answered, each journaling every
// JournalEvery-th time, and card sets back to back. With Backends, the
// load goes to API no more: the generator runs the two-host tests'
// round-robin balancer (balancer) in front of them, in its own process, and
// sends the load through it.
type loadSpec struct {
	Seed         uint64
	API          string
	Backends     []string // host:port of each Jarvis API
	Tokens       workload.Tokens
	Agents       []string
	JournalEvery int
}

// loadResult is what a load generator's workload achieved; Answers is,
// with loadSpec.Backends, the balancer's count of the agents' reports
// answered, by backend and status.
type loadResult struct {
	Heartbeats, CardSets int
	Elapsed              time.Duration
	Refused, Failed      map[string]int
	Answers              map[string]map[int]int `json:",omitempty"`
}

// generateLoad is the load generator's whole run; it returns the exit
// status.
func generateLoad(spec string) int {
	var s loadSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, "load generator:", err)
		return 2
	}
	var lb *balancer
	if len(s.Backends) > 0 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			fmt.Fprintln(os.Stderr, "load generator:", err)
			return 1
		}
		var stop func()
		lb, stop = serveBalancer(ln, s.Backends...)
		defer stop()
		s.API = "http://" + ln.Addr().String()
	}
	w, err := workload.Start(workload.Config{Seed: s.Seed, API: s.API, Tokens: s.Tokens, Agents: s.Agents,
		Heartbeats: workload.Max, JournalEvery: s.JournalEvery, CardSets: workload.Max})
	if err != nil {
		fmt.Fprintln(os.Stderr, "load generator:", err)
		return 1
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	rec := w.Stop()
	out := loadResult{Heartbeats: rec.HeartbeatCount(), CardSets: len(rec.CardSets), Elapsed: rec.Elapsed,
		Refused: rec.Refused, Failed: rec.Failed}
	if lb != nil {
		out.Answers = lb.answered()
	}
	if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
		fmt.Fprintln(os.Stderr, "load generator:", err)
		return 1
	}
	return 0
}

// loadGenerator is a load generator running as a process of its own, in
// host's network namespace, pinned to cpu.
type loadGenerator struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   strings.Builder
	errs  strings.Builder
}

// startLoadGenerator starts this test binary again as a load generator on
// h (nil: this machine's namespace), pinned to cpu with taskset.
func startLoadGenerator(t testing.TB, h *host, cpu int, spec loadSpec) *loadGenerator {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", strconv.Itoa(cpu)}
	if h != nil {
		args = append(args, "ip", "netns", "exec", h.name)
	}
	args = append(args, self, "-test.run=^$")
	g := &loadGenerator{cmd: exec.Command("taskset", args...)}
	g.cmd.Env = append(os.Environ(), envLoadGenerator+"="+string(raw))
	g.cmd.Stdout, g.cmd.Stderr = &g.out, &g.errs
	if g.stdin, err = g.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := g.cmd.Start(); err != nil {
		t.Fatalf("start the load generator: %v", err)
	}
	t.Cleanup(func() {
		if g.cmd.ProcessState == nil {
			_ = g.cmd.Process.Kill()
			_ = g.cmd.Wait()
		}
	})
	return g
}

// stop ends the workload and returns what it achieved.
func (g *loadGenerator) stop(t testing.TB) loadResult {
	t.Helper()
	_ = g.stdin.Close()
	if err := g.cmd.Wait(); err != nil {
		t.Fatalf("load generator: %v\n%s", err, g.errs.String())
	}
	var r loadResult
	if err := json.Unmarshal([]byte(g.out.String()), &r); err != nil {
		t.Fatalf("load generator's result %q: %v", g.out.String(), err)
	}
	return r
}

// pin sets the CPU affinity of every thread of the processes pids to
// cpus (taskset's list, "0" or "0-1"); threads started later inherit it.
func pin(t testing.TB, cpus string, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		if out, err := exec.Command("taskset", "-a", "-c", "-p", cpus, strconv.Itoa(pid)).CombinedOutput(); err != nil {
			t.Fatalf("taskset %s on %d: %v: %s", cpus, pid, err, out)
		}
	}
}

// allCPUs is taskset's list of every CPU Go may run on.
func allCPUs() string { return "0-" + strconv.Itoa(runtime.NumCPU()-1) }

// homeserverPID is the process of the package's homeserver, which its
// start script keeps in its directory.
func homeserverPID(t testing.TB) int {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(hs.Dir, "pid"))
	if err != nil {
		t.Fatalf("the homeserver's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatalf("the homeserver's pid %q: %v", raw, err)
	}
	return pid
}
