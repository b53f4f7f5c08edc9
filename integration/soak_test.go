package integration

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"maunium.net/go/mautrix"

	"github.com/jarvis-hmi/jarvis/internal/testkit/tesths"
	"github.com/jarvis-hmi/jarvis/internal/testkit/workload"
)

// soakSeries are what TestSoak samples, in the order it prints them.
var soakSeries = []string{"RSS (MiB)", "goroutines", "open files", "database (MiB)"}

// TestSoak runs the mixed workload against the real binary for
// JARVIS_SOAK_DURATION (make soak sets it; the test is skipped without
// it) and samples Jarvis every 10 s (every twelfth of the duration when
// that is shorter): its resident memory and open files (from /proc), its
// goroutines (go_goroutines on /metrics), and the size of its database
// (the SQLite file and its write-ahead log). The first quarter is
// warm-up; after it, the median of the last three samples of each series
// must be within 10 % of the median of the first three. It prints each
// series as a sparkline with its figures.
//
// The workload is a busy workspace rather than the benchmark's flood: 64
// agents heartbeating every 2 s (a new cycle every 100, a journal entry
// every 20), a card set every 5 s, a breaker opened, resumed and verified
// every minute, two people chatting every 5 s, and 100,000 armed
// tripwires of which one in 1,000 flaps. Every token keeps the default
// rate limit.
//
// With JARVIS_SOAK_HOSTILE set (make soak HOSTILE=1) the insiders'
// workload runs beside it (see hostile), and halfway through an agent's
// breaker opens: its halt notice must reach the room within 2 s, Jarvis's
// resident memory must stay under 200 MiB and its database under
// hostileDatabaseMiB throughout.
func TestSoak(t *testing.T) {
	env := os.Getenv("JARVIS_SOAK_DURATION")
	if env == "" {
		t.Skip("JARVIS_SOAK_DURATION is not set (make soak sets it)")
	}
	duration, err := time.ParseDuration(env)
	if err != nil {
		t.Fatalf("JARVIS_SOAK_DURATION: %v", err)
	}
	every := min(10*time.Second, duration/12)
	var bad *hostile
	var extra string
	if os.Getenv("JARVIS_SOAK_HOSTILE") != "" {
		bad, extra = newHostile(t)
	}
	// A busy workspace's pace is well within api.rate_limit.credential's
	// default, which also bounds the insiders' agent token.
	l := newLoaded(t, loadSetup{Agents: 64, Cadence: time.Minute, Extra: extra, DefaultRate: true,
		Tripwires: workload.Tripwires{Count: 100_000, Scopes: 10_000, TripEvery: 1000}})
	bob := newPerson(t, "bob")
	if _, err := l.admin.InviteUser(context.Background(), l.room, &mautrix.ReqInviteUser{UserID: bob.UserID}); err != nil {
		t.Fatal(err)
	}
	l.j.joinRoom(t, bob)
	cfg := l.config(20)
	cfg.Heartbeats, cfg.CycleEvery, cfg.JournalEvery = workload.Every(2*time.Second), 100, 20
	cfg.CardSets = workload.Every(5 * time.Second)
	cfg.Breakers = workload.Every(time.Minute)
	cfg.People, cfg.Chat = []*tesths.Person{l.admin, bob}, workload.Every(5*time.Second)
	if bad != nil {
		cfg.Agents = l.agents[1:]
	}
	w, err := workload.Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if bad != nil {
		// The insiders' agent token is the first agent's; the normal
		// workload keeps to the others, and its breaker is the one halted.
		bad.start(t, l, newPerson(t, "mallory"))
	}
	pid := l.j.cmd.Process.Pid
	var samples [][]float64
	start := time.Now()
	halted := false
	for time.Since(start) < duration {
		time.Sleep(every)
		s, err := soakSample(pid, l.api, l.j.Store.URI)
		if err != nil {
			t.Fatal(err)
		}
		samples = append(samples, s)
		if bad != nil && !halted && time.Since(start) > duration/2 {
			halted = true
			took := haltUnderLoad(t, l, l.agents[0])
			t.Logf("under the insiders' load, the halt notice reached the room %s after the breaker opened", took)
			if took > 2*time.Second {
				t.Errorf("the halt notice took %s, want at most 2 s", took)
			}
		}
	}
	rec := w.Stop()
	if bad != nil {
		t.Logf("the insiders' requests, by answer: %v", bad.halt())
		checkHostileBounds(t, samples)
	}
	t.Logf("%s of load: %d heartbeats, %d journal entries, %d card sets, %d breakers, %d of %d messages answered; refused %v, failed %v",
		rec.Elapsed.Round(time.Second), rec.HeartbeatCount(), len(rec.Journal), len(rec.CardSets), len(rec.Breakers),
		rec.Answered(), len(rec.Chat), rec.Refused, rec.Failed)

	warm := len(samples) / 4
	if len(samples)-warm < 6 {
		t.Fatalf("%d samples after a warm-up of %d: too few to compare", len(samples)-warm, warm)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d samples every %s over %s; the first %d are warm-up (|)\n", len(samples), every, duration, warm)
	for i, name := range soakSeries {
		series := make([]float64, len(samples))
		for j, s := range samples {
			series[j] = s[i]
		}
		first, last := median(series[warm:warm+3]), median(series[len(series)-3:])
		growth := last/first - 1
		fmt.Fprintf(&b, "%-15s %s  %8.1f → %8.1f (%+.1f %%)\n", name, sparkline(series, warm), first, last, 100*growth)
		if growth > 0.10 {
			t.Errorf("%s grew by %.1f %% after warm-up (%.1f → %.1f)", name, 100*growth, first, last)
		}
	}
	t.Logf("soak:\n%s", b.String())
	if len(rec.Failed) > 0 {
		t.Errorf("requests without an answer: %v", rec.Failed)
	}
}

// soakSample reads one sample of every series of soakSeries.
func soakSample(pid int, api, dbPath string) ([]float64, error) {
	rss, err := procStatusKB(pid, "VmRSS")
	if err != nil {
		return nil, err
	}
	goroutines, err := metricValue(api, "go_goroutines")
	if err != nil {
		return nil, err
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return nil, err
	}
	var size int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(dbPath + suffix); err == nil {
			size += fi.Size()
		}
	}
	return []float64{rss / 1024, goroutines, float64(len(fds)), float64(size) / (1 << 20)}, nil
}

// procStatusKB reads a "kB" field of /proc/PID/status.
func procStatusKB(pid int, field string) (float64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			return strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// metricsToken is api.metrics_token in the tests that read /metrics or
// the profiles.
const metricsToken = "integration-metrics-token"

// getMetrics GETs url (/metrics or a profile) with the metrics token.
func getMetrics(url string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+metricsToken)
	return http.DefaultClient.Do(req)
}

// metricValue reads an unlabelled metric from /metrics.
func metricValue(api, name string) (float64, error) {
	resp, err := getMetrics(api + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("/metrics answered %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no %s on /metrics", name)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// sparkline draws series in eight levels between its minimum and maximum,
// with a bar after the warm-up's samples.
func sparkline(series []float64, warm int) string {
	const levels = "▁▂▃▄▅▆▇█"
	bars := []rune(levels)
	lo, hi := slices.Min(series), slices.Max(series)
	var b strings.Builder
	for i, v := range series {
		if i == warm {
			b.WriteRune('|')
		}
		level := 0
		if hi > lo {
			level = int(math.Round((v - lo) / (hi - lo) * float64(len(bars)-1)))
		}
		b.WriteRune(bars[level])
	}
	return b.String()
}
