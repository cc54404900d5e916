#!/usr/bin/env bash
# plan's printed figures (--reproduce's sentences and rankings, one configuration's
# breakdown, --pp-simulate) recomputed from the figures they follow from, and the
# option bounds behind them (test_plan_figures.py). Seconds: plan only, no MPI.
. "$(dirname "$0")/lib.sh"
[ -x "$BIN/plan" ] || { fail "$BIN/plan not built"; finish; }
python_unittest test_plan_figures.py "plan's figures follow from their inputs"
finish
