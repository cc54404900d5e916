#!/usr/bin/env bash
# suite/shapes.py: the shape of every workload step on a table of worlds (1 to 4096 ranks, 1 to 8
# per node, short last nodes, every model preset), each answer run through the binary's
# --validate N:R (no MPI, no launch) so that no step is launched with arguments it would refuse
# (test_shapes.py). Seconds.
. "$(dirname "$0")/lib.sh"
python_unittest test_shapes.py "suite/shapes.py on every world, accepted by the binaries" PB_BIN="$BIN"
finish
