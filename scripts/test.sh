#!/usr/bin/env bash
# make test: every test, in timed stages: vet, beside the test homeserver
# and the binaries, built once; the unit tests; the store's suite on SQLite
# and on PostgreSQL side by side (PostgreSQL when JARVIS_TEST_POSTGRES is
# set), with the integration tests against the homeserver beside it: both
# mostly wait, on databases, the homeserver and the clock.
# Every stage runs even when one before it failed, so that one run shows
# every failure; the run fails if any stage did. At the end: one line per
# stage with its time, the slowest tests, and the count of all of them.
set -uo pipefail
cd "$(dirname "$0")/.."
export TAGS=${TAGS:-goolm}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export TEST_TIMES=$work/times
: >"$TEST_TIMES"
: >"$work/stages"

# timed NAME COMMAND...: runs the command and records its time and result.
timed() {
	local name=$1 start status
	shift
	start=${EPOCHREALTIME/./}
	"$@"
	status=$?
	echo "$(((${EPOCHREALTIME/./} - start) / 1000)) $status $name" >>"$work/stages"
	return "$status"
}

# stage NAME COMMAND...: a stage run alone, under a heading.
stage() {
	echo
	echo "=== $1"
	timed "$@"
}

build() {
	# Alertmanager, for the receiver's test, builds beside the rest (once:
	# it is cached like the homeserver).
	scripts/alertmanager.sh build &
	local alertmanager=$!
	scripts/homeserver.sh build &&
		go build -tags "$TAGS" -o "$work/jarvis" ./cmd/jarvis &&
		go build -o "$work/testreport" ./internal/testkit/testreport &&
		go test -tags "$TAGS" -count=1 -exec true ./... >/dev/null
	local status=$?
	wait "$alertmanager" || status=1
	return "$status"
}

unit() {
	# shellcheck disable=SC2046 # one package a word
	go test -tags "$TAGS" -count=1 -timeout 10m -json $(go list -tags "$TAGS" ./... | grep -v -e /integration -e /store) |
		"$work/testreport" -stage unit -times "$TEST_TIMES"
}

# store ENGINE: the store's suite on one engine, its report kept for later.
store() {
	JARVIS_TEST_ENGINE=$1 go test -tags "$TAGS" -count=1 -timeout 10m -json ./store/ |
		"$work/testreport" -stage "store on $1" -times "$TEST_TIMES" >"$work/store-$1.log" 2>&1
}

# stores: both engines at once, each in a process of its own.
stores() {
	local status=0
	if [[ -z ${JARVIS_TEST_POSTGRES:-} ]]; then
		timed "store on sqlite3" store sqlite3 || status=$?
		cat "$work/store-sqlite3.log"
		echo "=== store tests on PostgreSQL skipped: JARVIS_TEST_POSTGRES is not set"
		return "$status"
	fi
	timed "store on sqlite3 (beside postgres)" store sqlite3 &
	local sqlite=$!
	timed "store on postgres (beside sqlite)" store postgres &
	local postgres=$!
	wait "$sqlite" || status=1
	wait "$postgres" || status=1
	cat "$work/store-sqlite3.log" "$work/store-postgres.log"
	return "$status"
}

failed=0
# vet and the build both start by fetching modules and compiling, each
# waiting on the network or one package at a time for long stretches: on
# a new machine they keep two cores busier side by side than one after
# the other.
timed "vet (beside build)" make --no-print-directory vet >"$work/vet.log" 2>&1 &
vet=$!
stage build build || failed=1
echo
echo "=== vet"
wait "$vet" || failed=1
cat "$work/vet.log"
if [[ -x $work/testreport ]]; then
	export JARVIS_TEST_BIN=$work/jarvis TESTREPORT=$work/testreport
	stage unit unit || failed=1
	# The store's suite waits mostly on its databases and the integration
	# tests mostly on the homeserver and the clock: they share the machine.
	timed "integration (beside store)" scripts/integration.sh >"$work/integration.log" 2>&1 &
	integration=$!
	echo
	echo "=== store"
	stores || failed=1
	echo
	echo "=== integration"
	wait "$integration" || failed=1
	cat "$work/integration.log"
fi

echo
echo "=== stages"
while read -r ms status name; do
	result=ok
	[[ $status -eq 0 ]] || result=FAILED
	printf '  %-36s %6.1fs  %s\n' "$name" "$((ms / 100))e-1" "$result"
done <"$work/stages"
if [[ -x $work/testreport ]]; then
	"$work/testreport" -stage "make test" -summary "$TEST_TIMES"
fi
exit "$failed"
