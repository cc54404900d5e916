#!/usr/bin/env bash
# suite/shapes.py: the shape of every workload step on a table of worlds (1 to 4096 ranks, 1 to 8
# per node, short last nodes, every model preset), each answer run through the binary's
# --validate N:R (no MPI, no launch) so that no step is launched with arguments it would refuse
# (test_shapes.py). Seconds.
. "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
if PB_BIN="$BIN" python3 -m unittest -q "$TESTS_DIR/test_shapes.py" 2>"$TMP/unit.err"; then
    pass "suite/shapes.py on every world, accepted by the binaries ($(grep -o 'Ran [0-9]* tests' "$TMP/unit.err"))"
else fail "suite/shapes.py"; sed 's/^/  | /' "$TMP/unit.err" >&2; fi
finish
