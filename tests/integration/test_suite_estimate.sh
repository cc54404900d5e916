#!/usr/bin/env bash
# --dry-run's estimate without a run: its arithmetic and its steps, bounded and skipped as the
# run would skip them (test_suite_estimate.py). Seconds; test_run_all_dry_run.sh runs run_all.sh.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if python3 -m unittest -q "$TESTS_DIR/test_suite_estimate.py" 2>"$TMP/unit.err"; then
    pass "suite/estimate.py arithmetic and steps ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "suite/estimate.py"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
