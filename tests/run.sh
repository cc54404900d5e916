#!/usr/bin/env bash
# `make test`: the unit test binaries given as arguments, beside every
# integration test; one total at the end, in the form
# "N passed, N failed, N skipped". Exit 1 if anything failed.
here=$(cd "$(dirname "$0")" && pwd)
PB_TALLY_FILE=$(mktemp /tmp/parabench-tally.XXXXXX)
export PB_TALLY_FILE
# The unit binaries run beside the integration tests (test_watchdog alone waits 14 s on its
# timers); the integration tests print as they end, the unit tests' output comes whole after them.
unit_log=$(mktemp /tmp/parabench-unit.XXXXXX)
trap 'rm -f "$PB_TALLY_FILE" "$unit_log"' EXIT
"$here/unit/run.sh" "$@" >"$unit_log" 2>&1 &
unit_pid=$!
"$here/integration/run.sh"
wait "$unit_pid"
cat "$unit_log"
awk '{ p += $1; f += $2; s += $3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s; exit (f > 0 || NR != 2) }' "$PB_TALLY_FILE"
