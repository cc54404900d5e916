#!/usr/bin/env bash
# suite/shapes.py: the shape of every workload step on a table of worlds (1 to 4096 ranks, 1 to 8
# per node, short last nodes, every model preset), each answer run through the binary's
# --validate N:R (no MPI, no launch) so that no step is launched with arguments it would refuse
# (test_shapes.py); and the memory needs it says, against the binaries' own. Seconds.
. "$(dirname "$0")/lib.sh"
python_unittest test_shapes.py "suite/shapes.py on every world, accepted by the binaries" PB_BIN="$BIN"
# The memory each shape says a GPU holds, against the binaries' own need (test_shapes_memory.py).
python_unittest test_shapes_memory.py "suite/shapes.py's memory needs equal the binaries'" PB_BIN="$BIN"
finish
