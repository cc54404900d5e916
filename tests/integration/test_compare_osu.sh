#!/usr/bin/env bash
# scripts/compare-osu-table.py on stand-ins for OSU, parabench and mpirun whose
# values follow from size and round: its summary rows, printed table and raw rows
# recomputed (test_compare_osu.py). Seconds; no MPI, no OSU.
. "$(dirname "$0")/lib.sh"
python_unittest test_compare_osu.py "compare-osu-table.py summary, table and raw rows"
finish
