#!/usr/bin/env bash
# scripts/gpu-check.sh where it must not run anything: with every GPU hidden
# (CUDA_VISIBLE_DEVICES empty, or no GPU at all) it exits 77 at once, says so
# in its summary, and builds nothing; its usage errors exit 2. The GPU path
# itself needs a GPU node (docs/gpu/README.md).
source "$(dirname "$0")/lib.sh"
CHECK=$TESTS_DIR/../../scripts/gpu-check.sh
start=$SECONDS
expect_rc 77 "no GPU visible: skipped" -- env CUDA_VISIBLE_DEVICES= timeout 60 bash "$CHECK" --out "$TMP/out77"
[ $((SECONDS - start)) -lt 30 ] && pass "stops at once without a GPU" || fail "took $((SECONDS - start)) s without a GPU"
expect_in "$TMP/out77/summary.txt" "no GPU" "the summary says why"
expect_in "$TMP/out" "exit 77" "the output says the exit code"
[ ! -e "$TMP/out77/.keys" ] && pass "no leftovers" || fail "leftover .keys in the output folder"
expect_rc 2 "unknown option" -- bash "$CHECK" --no-such-option
expect_rc 2 "--max-ranks needs a number" -- bash "$CHECK" --max-ranks x
expect_rc 2 "--step-timeout below the watchdog's 60 s + 30 s" -- bash "$CHECK" --step-timeout 60
expect_rc 0 "--help" -- bash "$CHECK" --help
expect_in "$TMP/out" "77  skipped: no GPU" "--help documents exit 77"
finish
