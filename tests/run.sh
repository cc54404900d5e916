#!/usr/bin/env bash
# `make test`: the unit test binaries given as arguments and every integration
# test of make test's tier; one total at the end, in the form
# "N passed, N failed, N skipped". Exit 1 if anything failed.
#
# The unit tests run beside the integration tests, not before them: they take
# about 20 s of which 14 are test_watchdog's waits (6 s of CPU in all), time the
# integration pool would otherwise wait out. Their report is printed whole
# after the integration tests', before the total.
here=$(cd "$(dirname "$0")" && pwd)
PB_TALLY_FILE=$(mktemp /tmp/parabench-tally.XXXXXX)
UNIT_LOG=$(mktemp /tmp/parabench-unit.XXXXXX)
export PB_TALLY_FILE
trap 'rm -f "$PB_TALLY_FILE" "$UNIT_LOG"' EXIT
echo "unit tests: running beside the integration tests; their report follows those"
"$here/unit/run.sh" "$@" >"$UNIT_LOG" 2>&1 &
unit=$!
"$here/integration/run.sh"
wait "$unit"
cat "$UNIT_LOG"
awk '{ p += $1; f += $2; s += $3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s; exit (f > 0 || NR != 2) }' "$PB_TALLY_FILE"
