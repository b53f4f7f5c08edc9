package main

import (
	"strings"
	"testing"
)

const sample = `=== store tests on SQLite
goos: linux
BenchmarkTripwireTick-2   	      20	 117000000 ns/op	 130000000 cpu-ns/op
BenchmarkReconcile-2      	    1000	   3100000 ns/op
BenchmarkFleetPass-2      	      20	  90000000 ns/op	   5000000 many-ns/pass	  80000000 one-ns/pass	  0.0625 ratio	  30 many-stmts/pass	  4830 one-stmts/pass
PASS
=== store tests on postgres
BenchmarkTripwireTick-2   	      20	 656000000 ns/op	 300000000 cpu-ns/op
ok  	github.com/jarvis-hmi/jarvis/store	90.1s
BenchmarkHeartbeatIngest/sqlite3-2         	   20000	    110000 ns/op	      4100 hb/s	  5.0 p50-ms	 31.5 p99-ms	  175 cpu-µs/hb
BenchmarkHeartbeatIngest/postgres-2        	   20000	    180000 ns/op	      5500 hb/s	  6.0 p50-ms	 28.0 p99-ms	  160 cpu-µs/hb
BenchmarkAuthenticate-2                    	  100000	      2350 ns/op	     320 B/op	       5 allocs/op
BenchmarkPublishCardSets/sqlite3-2         	    2000	    700000 ns/op	      1400 sets/s
BenchmarkRoundTrip/encrypted-2             	     200	 550000000 ns/op	 180 echo-p50-ms	 350 echo-p95-ms	 450 echo-p99-ms	 210 jarvis-p50-ms	 400 jarvis-p95-ms	 500 jarvis-p99-ms	 1.143 p95-ratio
BenchmarkRoundTripUnderLoad/separate-sqlite-2   	      20	2459910597 ns/op	       356.5 hb/s	       315.8 idle-p50-ms	       758.0 idle-p95-ms	       758.0 idle-p99-ms	       753.7 load-p50-ms	      1692 load-p95-ms	      1692 load-p99-ms	         2.232 p95-ratio	         4.249 ratio-hi	         1.858 ratio-lo	        28.75 sets/s
BenchmarkRoundTripUnderLoad/separate-postgres-2   	      30	2459910597 ns/op	       3000 hb/s	       50.0 idle-p50-ms	       60.0 idle-p95-ms	       70.0 idle-p99-ms	       60.0 load-p50-ms	      66.0 load-p95-ms	      80.0 load-p99-ms	         1.1 p95-ratio	         1.3 ratio-hi	         0.9 ratio-lo	        50.0 sets/s
BenchmarkRoundTripUnderLoad/shared-2   	      20	2459910597 ns/op	       356.5 hb/s	       315.8 idle-p50-ms	       758.0 idle-p95-ms	       758.0 idle-p99-ms	       753.7 load-p50-ms	      1692 load-p95-ms	      1692 load-p99-ms	         2.232 p95-ratio	         4.249 ratio-hi	         1.858 ratio-lo	        28.75 sets/s
`

func TestTable(t *testing.T) {
	results, err := parse(strings.NewReader(sample))
	if err != nil {
		t.Fatal(err)
	}
	got := table(results)
	for _, want := range []string{
		"| one tripwire evaluator pass, 100,000 tripwires, SQLite (`BenchmarkTripwireTick`) | ≤ 250 ms | **117.0 ms** per operation (20 operations), 130 ms CPU — meets the target |",
		"| the same on PostgreSQL | ≤ 250 ms | **656.0 ms** per operation (20 operations), 300 ms CPU — **misses the target** |",
		"**3.1 ms** per operation (1000 operations)",
		"(`BenchmarkFleetPass`) | stated | **0.06 ×**: 5.0 ms at once, 80.0 ms one at a time; 30 statements a pass against 4830 (20 pairs of passes) |",
		"**4100/s, p99 31.5 ms** (p50 5.0 ms, 175 µs CPU per heartbeat; 20000 heartbeats) — **misses the target**",
		"| the same on PostgreSQL (fsync on) | ≥ 5,000/s, p99 ≤ 30 ms | **5500/s, p99 28.0 ms** (p50 6.0 ms, 160 µs CPU per heartbeat; 20000 heartbeats) — meets the target |",
		"**1400 sets/s** (2000 sets) — meets the target",
		"**2.4 µs** per operation, 5 allocations (100000 operations)",
		"Jarvis p50 210 ms, p95 400 ms, p99 500 ms; echo p50 180 ms, p95 350 ms, p99 450 ms: **1.14 ×** (200 round trips each, taking turns) — meets the target",
		"load p50 754 ms, p95 1692 ms, p99 1692 ms: **2.23 ×** (95 % CI 1.86–4.25; 20 round trips each; the load ran at 356 heartbeats/s and 29 card sets/s) — **misses the target**",
		"(`BenchmarkRoundTripUnderLoad/shared`) | stated, for comparison | idle p50 316 ms, p95 758 ms, p99 758 ms; load p50 754 ms, p95 1692 ms, p99 1692 ms: **2.23 ×** (95 % CI 1.86–4.25; 20 round trips each; the load ran at 356 heartbeats/s and 29 card sets/s) |",
		"**1.10 ×** (95 % CI 0.90–1.30; 30 round trips each; the load ran at 3000 heartbeats/s and 50 card sets/s) — meets the target",
		"| the same in plaintext rooms (`BenchmarkRoundTrip/plaintext`) | Jarvis p95 ≤ 1.25 × echo p95 | not run |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the table lacks %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "\n") != len(rows)+2 {
		t.Errorf("the table has %d lines, want a header, a rule and %d rows:\n%s", strings.Count(got, "\n"), len(rows), got)
	}
}
