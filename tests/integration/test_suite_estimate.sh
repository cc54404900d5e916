#!/usr/bin/env bash
# --dry-run's estimate without a run: its arithmetic and its steps, bounded and skipped as the
# run would skip them (test_suite_estimate.py). Seconds; test_run_all_dry_run.sh runs run_all.sh.
. "$(dirname "$0")/lib.sh"
python_unittest test_suite_estimate.py "suite/estimate.py arithmetic and steps"
finish
