#!/usr/bin/env bash
# The benchmarks whose figures need a bigger machine than a developer's
# (chat under load with its load on cores of its own, on many cores), run
# on a Linux machine that has no Go and no network: static binaries of
# Jarvis, the integration tests, the homeserver and the benchmark table,
# in one archive, built here and taken there beside a checkout of the same
# commit.
#
#   make bench-kit                  write .benchkit/benchkit.tar.gz (needs Go,
#                                   a C compiler and the module proxy: a few
#                                   minutes); under 50 MB. It runs
#                                   `scripts/benchkit.sh build DIR` with TAGS
#                                   and LDFLAGS, make release's
#   scripts/benchkit.sh run DIR [TIMES [PATTERN]]
#                                   unpack it, run the integration benchmarks
#                                   PATTERN matches (default: chat under load,
#                                   every way) TIMES each (default 100x), and
#                                   print their output, then the table of
#                                   docs/benchmarks.md and the machine's cores
#
# The ways that pin the load to a CPU of its own need root, iproute2 and
# taskset, and skip themselves without them; the PostgreSQL way needs
# JARVIS_TEST_POSTGRES, as with make bench.
set -euo pipefail
cd "$(dirname "$0")/.."

# The homeserver the tests start, at the version they build.
DENDRITE=$(sed -n 's/^VERSION=//p' scripts/homeserver.sh)

build() {
	local dir=$1 work
	# As make release builds them: static, stripped, without this machine's paths.
	local tags=${TAGS:?run it as make bench-kit, which gives make release\'s TAGS and LDFLAGS}
	local ldflags=${LDFLAGS:?run it as make bench-kit, which gives make release\'s TAGS and LDFLAGS}
	work=$(mktemp -d)
	trap 'rm -rf "$work"' RETURN
	mkdir -p "$dir" "$work/dendrite"
	CGO_ENABLED=1 go build -tags "$tags" -trimpath -ldflags "$ldflags" -o "$work/jarvis" ./cmd/jarvis
	CGO_ENABLED=1 go test -c -tags "$tags" -trimpath -ldflags "$ldflags" -o "$work/integration.test" ./integration/
	CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$work/benchtable" ./internal/testkit/benchtable
	# The homeserver without cgo is static: its SQLite is pure Go.
	(cd "$(mktemp -d)" && CGO_ENABLED=0 GOFLAGS=-mod=mod GOBIN="$work/dendrite" go install -trimpath -ldflags '-s -w' \
		"github.com/matrix-org/dendrite/cmd/dendrite@$DENDRITE" \
		"github.com/matrix-org/dendrite/cmd/generate-keys@$DENDRITE" \
		"github.com/matrix-org/dendrite/cmd/generate-config@$DENDRITE")
	git rev-parse HEAD >"$work/commit"
	tar -czf "$dir/benchkit.tar.gz" -C "$work" .
	echo "$dir/benchkit.tar.gz: $(du -h "$dir/benchkit.tar.gz" | cut -f1), commit $(cat "$work/commit")" >&2
}

run() {
	local dir=$1 times=${2:-100x} pattern=${3:-BenchmarkRoundTripUnderLoad}
	local kit out
	kit=$(mktemp -d)
	out=$(mktemp)
	trap 'rm -rf "$kit" "$out"' RETURN
	tar -xzf "$dir/benchkit.tar.gz" -C "$kit"
	if [[ -d .git ]] && [[ $(git rev-parse HEAD 2>/dev/null) != "$(cat "$kit/commit")" ]]; then
		echo "warning: the kit was built from $(cat "$kit/commit"), not from this checkout's commit" >&2
	fi
	local load_before
	load_before=$(cut -d' ' -f1-3 /proc/loadavg)
	(cd integration && JARVIS_TEST_BIN="$kit/jarvis" JARVIS_DENDRITE_BIN="$kit/dendrite" \
		"$kit/integration.test" -test.run '^$' -test.bench "^$pattern\$" -test.benchtime "$times" -test.timeout 60m) | tee "$out"
	echo
	"$kit/benchtable" <"$out"
	echo
	echo "load average (1, 5, 15 min) before: $load_before; after: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
}

case ${1:-} in
build) build "${2:?usage: TAGS=… LDFLAGS=… scripts/benchkit.sh build DIR}" ;;
run) run "${2:?usage: scripts/benchkit.sh run DIR [TIMES [PATTERN]]}" "${3:-}" "${4:-}" ;;
*)
	sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
