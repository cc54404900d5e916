#!/usr/bin/env bash
# scripts/compare-osu-table.py on stand-ins for OSU, parabench and mpirun whose
# values follow from size and round: its summary rows, printed table and raw rows
# recomputed (test_compare_osu.py). Seconds; no MPI, no OSU.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if python3 -m unittest -q "$TESTS_DIR/test_compare_osu.py" 2>"$TMP/unit.err"; then
    pass "compare-osu-table.py summary, table and raw rows ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "compare-osu-table.py"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
