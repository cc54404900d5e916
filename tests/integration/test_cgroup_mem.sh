#!/usr/bin/env bash
# The memory pre-check inside a real memory cgroup, as a Slurm job with --mem
# runs: a need above the cgroup's limit exits 3 with a message (it used to be
# OOM-killed, 137, because the root cgroup's limit was read), and a need that
# fits still runs; tp_layer and pp_pipeline validate in the memory they have,
# or say they could not. Needs root and a writable memory cgroup (v1 or v2); else
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
limit_to() { if [ "$VER" = v1 ]; then echo "$1" >"$CG/memory.limit_in_bytes"; else echo "$1" >"$CG/memory.max"; fi; }
limit_to "$LIMIT" 2>/dev/null || skip_test "cannot set a memory limit on $CG"

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

# tp_layer's validation where its unsharded reference does not fit beside the
# sharded layers, as at the sizes GPUs train (the reference's attention scores
# are heads x s^2): 16 heads over 1024 tokens, the sharded layers 0.28 GiB for
# the 2 ranks. In 560 MiB the reference recomputes each layer's forward in its
# backward and still validates (a corrupted output caught); in 380 MiB even
# that does not fit: the row is not validated (wrong -1), said, and the run
# goes on (exit 0), where it used to stop with exit 3.
# in_limit MIB ARGS...: mpirun -np 2 ARGS in the cgroup, its limit set to MIB MiB first.
in_limit() {
    limit_to $(($1 << 20)) && shift &&
        in_cgroup timeout 120 mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp "$@"
}
# one_row CSV CONDITION TAG: the CSV holds one row r, for which the Python CONDITION holds.
one_row() {
    python3 -c 'import csv, sys; rows = [x for x in csv.DictReader(l for l in open(sys.argv[1]) if l[0] != "#")]
sys.exit(not (len(rows) == 1 and eval(sys.argv[2], {"r": rows[0]})))' "$1" "$2" &&
        pass "$3" || fail "$3: $(grep -v "^#" "$1" | tail -1)"
}
TP=("$BIN/tp_layer" --hidden 64 --heads 16 --seq 1024 --tp 2 --layers 2 -n 1 -w 0)
expect_rc 0 "tp_layer in 560 MiB: validated by a recomputing reference" -- in_limit 560 "${TP[@]}" --csv "$TMP/tp560.csv"
expect_in "$TMP/out" "validated against the unsharded layers recomputing each layer's forward in its backward" "said"
expect_in "$TMP/out" "wrong values: 0 OK" "0 wrong"
one_row "$TMP/tp560.csv" 'r["wrong"] == "0" and r["unsharded_us"] == ""' \
    "its row: wrong 0, the recomputing layers not timed as the unsharded ones (empty: not measured)"
expect_rc 1 "tp_layer in 560 MiB: a corrupted output is caught by the recomputing reference" -- \
    in_limit 560 -x PARABENCH_TEST_CORRUPT=1 "${TP[@]}"
expect_rc 0 "tp_layer in 380 MiB: measured, not validated" -- in_limit 380 "${TP[@]}" --csv "$TMP/tp.csv"
expect_in "$TMP/out" "NOT validated: the unsharded layers, even recomputing, need" "said, with the need"
expect_in "$TMP/out" "1 of 1 rows NOT validated" "and in the footer"
one_row "$TMP/tp.csv" 'r["wrong"] == "-1" and r["max_rel_err"] == "" and float(r["step_us"]) > 0' \
    "its row: measured, wrong -1, no error figure"
# pp_pipeline's reference, each stage's chunk run again beside that stage, the same way:
# the stages 0.54 GiB for the 2 ranks; keeping every activation above about 860 MiB,
# recomputing in 790 MiB, nothing in 630 MiB (the stages alone stop fitting below 560).
PP=("$BIN/pp_pipeline" --hidden 64 --heads 16 --seq 1024 --layers 4 --schedule 1f1b --micro-batches 2 -n 1 -w 0)
expect_rc 1 "pp_pipeline in 790 MiB: a corrupted stage is caught by the recomputing reference" -- \
    in_limit 790 -x PARABENCH_TEST_CORRUPT=0 "${PP[@]}"
expect_in "$TMP/out" "# validation: each stage runs its chunks again recomputing each layer's forward" "said"
expect_in "$TMP/out" "5 FAILED (against a recomputing reference)" "the footer counts the 5 faults and says which reference"
expect_rc 0 "pp_pipeline in 630 MiB: measured, not validated" -- in_limit 630 "${PP[@]}" --csv "$TMP/pp.csv"
expect_in "$TMP/out" "NOT validated: a chunk's layers run again, even recomputing, need" "said, with the need"
one_row "$TMP/pp.csv" 'r["wrong"] == "-1"' "its row: wrong -1"
limit_to "$LIMIT"

# What fits still runs in the same cgroup.
expect_rc 0 "a small dp_allreduce runs in the cgroup" -- \
    in_cgroup timeout 120 mpirun -np 2 --oversubscribe --bind-to none --mca btl self,vader,tcp \
    "$BIN/dp_allreduce" --model tiny --grad-bytes 1M -n 1 -w 0
finish
