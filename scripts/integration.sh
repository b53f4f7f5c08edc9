#!/usr/bin/env bash
# The integration tests, once: a test that fails now and then is a defect
# to find, not to retry. The tests run side by side against the shared
# homeserver (INTEGRATION_PARALLEL at a time); a failed test's whole output
# is printed together.
#
# Environment:
#   TAGS                  build tags (goolm)
#   JARVIS_TEST_BIN       a prebuilt jarvis to test (default: built here)
#   INTEGRATION_PARALLEL  how many tests run at once (default 16)
#   TEST_TIMES            a file to which each test's duration is appended
#   TESTREPORT            a built internal/testkit/testreport (default: go run)
set -euo pipefail
cd "$(dirname "$0")/.."

report=(go run ./internal/testkit/testreport)
[[ -n ${TESTREPORT:-} ]] && report=("$TESTREPORT")
go test -tags "${TAGS:-goolm}" -count=1 -timeout 15m -json -parallel "${INTEGRATION_PARALLEL:-16}" ./integration/ |
	"${report[@]}" -stage integration ${TEST_TIMES:+-times "$TEST_TIMES"}
