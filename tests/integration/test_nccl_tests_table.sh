#!/usr/bin/env bash
# scripts/nccl_tests_table.py, the comparison gpu-check.sh --node makes between parabench and
# nccl-tests, on recorded nccl-tests outputs in its exact layout (tests/nccl_tests_outputs/):
# every row and column read, sendrecv's unchecked in-place half, the footer; malformed input
# (NCCL's lines between rows, a run that died before its table, a row cut short, a figure that
# is not a number, a size twice, wrong values); the table per size against coll_sweep's rows
# and its ratio, by time at one rank; and gpu-check-judge.py's nccl-tests and vs-nccl-tests
# commands (test_nccl_tests_table.py). Seconds, no MPI, no GPU.
. "$(dirname "$0")/lib.sh"
python_unittest test_nccl_tests_table.py "nccl-tests output and the comparison table"
finish
