#!/usr/bin/env bash
# The load note's other side (test_dp_allreduce checks the measured one): on a
# node without /proc/stat, hidden here in a mount namespace of this test's own,
# a benchmark says the load is unknown rather than inventing a share.
source "$(dirname "$0")/lib.sh"
[ -x "$BIN/dp_allreduce" ] || skip_test "$BIN is not built (make first)"
[ "$(id -u)" -eq 0 ] || skip_test "hiding /proc/stat in a mount namespace needs root"
unshare -m sh -c 'mount --bind /dev/null /proc/stat' 2>"$TMP/unshare.err" ||
    skip_test "unshare -m with a bind mount refused: $(head -n 1 "$TMP/unshare.err")"
expect_rc 0 "a run where /proc/stat is empty" -- unshare -m sh -c 'mount --bind /dev/null /proc/stat && exec timeout 120 "$@"' \
    sh mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp "$BIN/dp_allreduce" --model tiny -n 1 -w 0 \
    --csv "$TMP/noload.csv"
expect_in "$TMP/noload.csv" "# note: load: unknown (no /proc/stat on a node)" "without /proc/stat the load is unknown"
# and only there: the same run with /proc/stat measures it
expect_rc 0 "the same run with /proc/stat" -- mpi 2 "$BIN/dp_allreduce" --model tiny -n 1 -w 0 --csv "$TMP/load.csv"
grep -q "^# note: load: other processes used [0-9]*% " "$TMP/load.csv" && pass "with /proc/stat the load is measured" \
    || fail "with /proc/stat the load note is not a measured share: $(grep 'note: load' "$TMP/load.csv")"
finish
