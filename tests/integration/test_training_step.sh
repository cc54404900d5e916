#!/usr/bin/env bash
# scripts/training_step.py without a run: the model's step from fabricated measured parts, its
# breakdown, MFU and the missing-part cases (test_training_step.py). Seconds; test_run_all.sh's
# runs print the line from real parts.
. "$(dirname "$0")/lib.sh"
python_unittest test_training_step.py "the training step from measured parts, and from plan's parts plan's step" PB_BIN="$BIN"
finish
