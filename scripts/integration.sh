#!/usr/bin/env bash
# The integration tests, with one more try for the tests that failed.
#
# Each test that failed runs once more, on its own, in a fresh test binary
# with a fresh homeserver; the run fails if it fails again. Every test that
# needed the second try is named at the end, so a test that fails now and
# then is seen, not hidden: no test should need it.
set -uo pipefail
cd "$(dirname "$0")/.."

log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -tags "${TAGS:-goolm}" -count=1 -timeout 20m ./integration/ 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
[ "$status" -eq 0 ] && exit 0

failed=$(grep -E '^--- FAIL: Test[A-Za-z0-9_]+' "$log" | sed -E 's/^--- FAIL: (Test[A-Za-z0-9_]+).*/\1/' | sort -u | paste -sd '|' -)
if [ -z "$failed" ]; then
	echo "integration tests failed without a failing test to try again (build error, panic or timeout)"
	exit "$status"
fi
echo
echo "=== trying again, once, on their own: $failed"
if go test -tags "${TAGS:-goolm}" -count=1 -timeout 20m -run "^($failed)\$" ./integration/; then
	echo "=== passed on the second try: $failed"
	exit 0
fi
echo "=== failed twice: $failed"
exit 1
