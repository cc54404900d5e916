#!/usr/bin/env bash
# `make test`: the unit test binaries given as arguments, then every
# integration test; one total at the end, in the form
# "N passed, N failed, N skipped". Exit 1 if anything failed.
here=$(cd "$(dirname "$0")" && pwd)
PB_TALLY_FILE=$(mktemp /tmp/parabench-tally.XXXXXX)
export PB_TALLY_FILE
trap 'rm -f "$PB_TALLY_FILE"' EXIT
"$here/unit/run.sh" "$@"
"$here/integration/run.sh"
awk '{ p += $1; f += $2; s += $3 } END { printf "%d passed, %d failed, %d skipped\n", p, f, s; exit (f > 0 || NR != 2) }' "$PB_TALLY_FILE"
