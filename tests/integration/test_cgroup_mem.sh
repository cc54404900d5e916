#!/usr/bin/env bash
# The memory pre-check inside a real memory cgroup, as a Slurm job with --mem
# runs: a need above the cgroup's limit exits 3 with a message (it used to be
# OOM-killed, 137, because the root cgroup's limit was read), and a need that
# fits still runs. Needs root and a writable memory cgroup (v1 or v2); else
# skipped, and tests/unit/test_memory.c's fake trees cover the probe.
source "$(dirname "$0")/lib.sh"
LIMIT=$((512 << 20))

# This process's own memory cgroup folder: v1's memory line, else v2's 0:: line.
own_cgroup() {
    local path
    path=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ { print $3; exit }' /proc/self/cgroup)
    if [ -n "$path" ] && [ -w "/sys/fs/cgroup/memory$path" ]; then
        echo "v1 /sys/fs/cgroup/memory$path"; return 0; fi
    path=$(awk -F: '$1 == "0" && $2 == "" { print $3; exit }' /proc/self/cgroup)
    if [ -n "$path" ] && [ -f "/sys/fs/cgroup$path/memory.max" ] && [ -w "/sys/fs/cgroup$path" ]; then
        echo "v2 /sys/fs/cgroup$path"; return 0; fi
    return 1
}

[ "$(id -u)" -eq 0 ] || skip_test "not root: cannot create a memory cgroup"
read -r VER PARENT < <(own_cgroup) || skip_test "no writable memory cgroup (v1 or v2) here"
CG=$PARENT/pbtest.$$
mkdir "$CG" 2>/dev/null || skip_test "cannot create $CG"
trap 'rmdir "$CG" 2>/dev/null; rm -rf "$TMP"' EXIT
if [ "$VER" = v1 ]; then echo "$LIMIT" >"$CG/memory.limit_in_bytes"; else echo "$LIMIT" >"$CG/memory.max"; fi \
    2>/dev/null || skip_test "cannot set a memory limit on $CG"

# in_cgroup CMD...: run CMD with this shell's child moved into the cgroup first.
in_cgroup() { sh -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' sh "$CG" "$@"; }

# 2 ranks x 1 GiB of gradients (and their validation copy) in 512 MiB.
expect_rc 3 "dp_allreduce needing more than the cgroup's 512 MiB refuses with exit 3" -- \
    in_cgroup timeout 120 mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    "$BIN/dp_allreduce" --model tiny --grad-bytes 1G -n 1 -w 0
expect_in "$TMP/err" "needs" "the message says what is needed"
avail=$(sed -n 's/.*; \([0-9]*\) bytes ([0-9.]* GiB) available.*/\1/p' "$TMP/err" | head -1)
if [ -n "$avail" ] && [ "$avail" -le "$LIMIT" ]; then pass "available ($avail) is within the cgroup's limit"
else fail "available '$avail' is not within the cgroup limit $LIMIT"; fi

cp "$TMP/err" "$TMP/err.big"
expect_rc 3 "coll_sweep -e 1G in the cgroup refuses with exit 3" -- \
    in_cgroup timeout 120 mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    "$BIN/coll_sweep" -b 1G -e 1G -n 1 -w 0
expect_in "$TMP/err" "-e/--maxbytes" "coll_sweep's message names -e/--maxbytes"

# The ranks of a node share it: 128 MiB send + receive buffers (256 MiB) fit
# one rank in 512 MiB, not 3. The need is counted for all 3, refused with exit
# 3 before anything is allocated (not OOM-killed, 137).
expect_rc 0 "coll_sweep 128 MiB on 1 rank fits the cgroup" -- \
    in_cgroup timeout 120 mpirun -np 1 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    "$BIN/coll_sweep" -b 128M -e 128M -n 1 -w 0 -c 0
expect_rc 3 "coll_sweep 128 MiB on 3 ranks of one node refuses with exit 3" -- \
    in_cgroup timeout 120 mpirun -np 3 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    "$BIN/coll_sweep" -b 128M -e 128M -n 1 -w 0 -c 0
expect_in "$TMP/err" "needs $((3 * 2 * (128 << 20))) bytes" "the need is 3 ranks x 2 buffers x 128 MiB"

# What fits still runs in the same cgroup.
expect_rc 0 "a small dp_allreduce runs in the cgroup" -- \
    in_cgroup timeout 120 mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    "$BIN/dp_allreduce" --model tiny --grad-bytes 1M -n 1 -w 0
finish
