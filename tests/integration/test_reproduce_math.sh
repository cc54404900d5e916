#!/usr/bin/env bash
# scripts/reproduce.py without a run: its arithmetic, and the TP rows it writes from a fabricated
# repro_tp.csv and p2p_sweep.csv, every expected value recomputed from the fixture
# (test_reproduce_math.py). Seconds; test_reproduce.sh runs the real thing.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if python3 -m unittest -q "$TESTS_DIR/test_reproduce_math.py" 2>"$TMP/unit.err"; then
    pass "reproduce.py arithmetic and TP rows ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "reproduce.py arithmetic or TP rows"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
