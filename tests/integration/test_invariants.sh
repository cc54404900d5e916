#!/usr/bin/env bash
# invariants.py refuses each broken rule (test_invariants.py, rows made there):
# the side of the checker that no correct run shows. Seconds; no MPI.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if python3 -m unittest -q "$TESTS_DIR/test_invariants.py" 2>"$TMP/unit.err"; then
    pass "invariants.py passes the rows that hold and refuses each broken one ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "invariants.py's rules"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
