#!/usr/bin/env bash
# plan's printed figures (--reproduce's sentences and rankings, one configuration's
# breakdown, --pp-simulate) recomputed from the figures they follow from, and the
# option bounds behind them (test_plan_figures.py). Seconds: plan only, no MPI.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
[ -x "$BIN/plan" ] || { fail "$BIN/plan not built"; finish; }
if python3 -m unittest -q "$TESTS_DIR/test_plan_figures.py" 2>"$TMP/unit.err"; then
    pass "plan's figures follow from their inputs ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "plan's figures"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
