#!/usr/bin/env bash
# Run every integration test and count it as passed (exit 0), skipped (exit
# 77, as automake's test harness does) or failed (anything else); see
# tests/tally.sh for skips under CI.
cd "$(dirname "$0")" || exit 3
. ../tally.sh
for t in test_*.sh; do
    [ -e "$t" ] || continue
    echo "=== $t"
    start=$SECONDS
    bash "$t"
    rc=$?
    case $rc in
    0) tally_record "$t" pass; echo "=== $t passed ($((SECONDS - start)) s)" ;;
    77) tally_record "$t" skip "exit 77"; echo "=== $t SKIPPED ($((SECONDS - start)) s)" ;;
    *) tally_record "$t" fail; echo "=== $t FAILED (exit $rc, $((SECONDS - start)) s)" ;;
    esac
done
tally_done integration
