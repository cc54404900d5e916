#!/usr/bin/env bash
# run_all.sh's default results directory: dated, and never one that exists
# already, however many runs start within one second (test_suite_driver.py).
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if timeout 60 python3 -m unittest -q "$TESTS_DIR/test_suite_driver.py" 2>"$TMP/unit.err"; then
    pass "suite/driver.py results directory ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "suite/driver.py results directory"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
