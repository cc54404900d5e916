#!/usr/bin/env bash
# invariants.py refuses each broken rule (test_invariants.py, rows made there):
# the side of the checker that no correct run shows. Seconds; no MPI.
. "$(dirname "$0")/lib.sh"
python_unittest test_invariants.py "invariants.py passes the rows that hold and refuses each broken one"
finish
