#!/usr/bin/env bash
# scripts/reproduce.py without a run: its arithmetic, and the TP rows it writes from a fabricated
# repro_tp.csv and p2p_sweep.csv, every expected value recomputed from the fixture
# (test_reproduce_math.py). Seconds; test_reproduce.sh runs the real thing.
. "$(dirname "$0")/lib.sh"
python_unittest test_reproduce_math.py "reproduce.py arithmetic and TP rows"
finish
