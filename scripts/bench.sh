#!/usr/bin/env bash
# Every benchmark, each run a fixed number of times, then the summary table
# (what | target | measured) docs/benchmarks.md shows.
#
# Environment:
#   JARVIS_BENCH_TIMES  run every benchmark this many times instead (e.g. 3x),
#                       to check that they work; such figures mean nothing
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=1

out=$(mktemp)
trap 'rm -f "$out"' EXIT

# bench PACKAGE BENCHMARK TIMES
bench() {
	local times=${JARVIS_BENCH_TIMES:-$3}
	echo "--- $2 ($1), $times" >&2
	go test -tags goolm -run '^$' -bench "^$2\$" -benchtime "$times" -timeout 60m "$1" | tee -a "$out"
}

load_before=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)
bench ./store/ BenchmarkTripwireTick 20x
bench ./store/ BenchmarkTripwireTickHistory 10x
bench ./store/ BenchmarkTripwireTickQuiet 10x
bench ./store/ BenchmarkTripwireTickSilences 10x
bench ./store/ BenchmarkFleetPass 20x
bench ./store/ BenchmarkBacktest 200x
bench ./chart/ BenchmarkRender 200x
bench ./store/ BenchmarkReconcile 2000x
bench ./store/ BenchmarkFencedWrite 5000x
bench ./console/ BenchmarkRelayRound 20000x
bench ./core/credential/ BenchmarkAuthenticate 100000x
bench ./api/ BenchmarkHeartbeatIngest 20000x
bench ./api/ BenchmarkPublishCardSets 2000x
bench ./integration/ BenchmarkRoundTrip 200x
bench ./integration/ BenchmarkRoundTripUnderLoad 100x
bench ./integration/ BenchmarkRoundTripOrchestratorDown 100x
bench ./integration/ BenchmarkWakeRouter 100x
bench ./integration/ BenchmarkIntakeAcrossHosts 1x
load_after=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)

echo
go run ./internal/testkit/benchtable <"$out"
echo
echo "load average (1, 5, 15 min) before: $load_before; after: $load_after; $(nproc) cores"
