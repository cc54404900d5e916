#!/usr/bin/env bash
# run_all.sh's default results directory: dated, and never one that exists
# already, however many runs start within one second (test_suite_driver.py).
. "$(dirname "$0")/lib.sh"
python_unittest test_suite_driver.py "suite/driver.py results directory"
finish
