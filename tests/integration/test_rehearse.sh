#!/usr/bin/env bash
# Every benchmark through --backend nccl-rehearse (NCCL's ordering rules on
# the CPU: a stream per communicator, rendezvous sends, device-wide
# synchronisation at alloc/free/copies and at the engine's allocations) at 8
# and 16 ranks, tiny shapes, results checked (-c 1). An ordering that hangs
# on a GPU hangs here too: the benchmarks' watchdog (--timeout) ends it with
# exit 4, and `timeout` bounds each run. pp_pipeline and hybrid_3d hold the
# communicators their design states, created once per group (not per
# configuration) and freed between placements, as the rehearsal counts them.
# Then the misuse NCCL refuses: mismatched counts and two ranks on one
# "device" (exit 3).
source "$(dirname "$0")/lib.sh"

WATCHDOG=20 # s: a hang fails within this, far above a step here
R="--backend nccl-rehearse -c 1 -n 2 -w 1 --timeout $WATCHDOG"

# comms JSON PER_RANK CREATED PEAK: the communicators a workload states (meta.communicators) and
# what the backend counted on every rank (meta.communicators_measured): created in all, most live
# at once, none left at the end, and NCCL's set-up memory recorded as not measured (no GPU).
comms() {
    python3 - "$@" <<'PY'
import json, os, sys
meta = json.load(open(sys.argv[1]))["meta"]
want = [int(x) for x in sys.argv[2:5]]
design, got = meta["communicators"], meta["communicators_measured"]
assert design["per_rank"] == want[0] and design["max_per_rank"] == 8, design
assert [got["created"], got["peak_live"], got["live_at_end"]] == want[1:] + [0], got
assert got["nccl_setup_bytes"] is None and got["nccl_setup_bytes_how"].startswith("not measured"), got
assert meta["nccl_nvls_enable"] == os.environ.get("NCCL_NVLS_ENABLE", "unset"), meta["nccl_nvls_enable"]
PY
}

# rehearse NP ARGS...: the binary under mpirun, bounded by `timeout` (which
# signals the process group it started, and only that) beyond the watchdog.
rehearse() {
    local np=$1; shift
    timeout -k 5 $((WATCHDOG + 40)) mpirun -np "$np" --oversubscribe --bind-to none --allow-run-as-root \
        --mca btl self,vader,tcp "$@" </dev/null
    local rc=$?
    check_outputs "$@"
    return $rc
}

for np in 8 16; do
    T="--hidden 64 --heads 16 --seq 16"
    expect_rc 0 "coll_sweep, every collective, $np ranks" -- \
        rehearse $np "$BIN/coll_sweep" $R --coll all -b 8 -e 4K -f 8 --csv "$TMP/coll$np.csv"
    expect_in "$TMP/out" "# wrong values: 0 OK" "coll_sweep validates ($np ranks)"
    expect_in "$TMP/out" "NCCL rehearsal on" "the metadata names the rehearsal ($np ranks)"
    expect_rc 0 "p2p_sweep, $np ranks" -- rehearse $np "$BIN/p2p_sweep" $R -b 8 -e 1K -f 32
    expect_rc 0 "p2p_sweep --matrix, $np ranks" -- rehearse $np "$BIN/p2p_sweep" $R --matrix -b 8 -e 1K -f 32
    expect_in "$TMP/out" "# wrong values: 0 OK" "p2p matrix validates ($np ranks)"
    expect_rc 0 "dp_allreduce --overlap none,bucket, $np ranks" -- \
        rehearse $np "$BIN/dp_allreduce" $R --model tiny --layers 2 $T --overlap none,bucket --bucket-mb 0.01
    expect_in "$TMP/out" "# wrong values: 0 OK" "dp_allreduce validates ($np ranks)"
    expect_rc 0 "tp_layer allreduce and sp, $np ranks" -- \
        rehearse $np "$BIN/tp_layer" $R --model tiny --layers 2 $T --tp-comm allreduce,sp --unsharded 0
    expect_in "$TMP/out" "# wrong values: 0 OK" "tp_layer validates ($np ranks)"
    expect_rc 0 "pp_pipeline, every schedule, $np stages" -- \
        rehearse $np "$BIN/pp_pipeline" $R --model tiny --layers $((2 * np)) $T --schedule all \
        --micro-batches $np --csv "$TMP/pp$np.csv" --json "$TMP/pp$np.json"
    expect_in "$TMP/out" "# wrong values: 0 OK" "pp_pipeline validates ($np stages)"
    # 3 schedules on one executor: activations and gradients x 2 link colours (an even ring), created once
    comms "$TMP/pp$np.json" 4 4 4 && pass "pp_pipeline: 4 communicators a rank for 3 schedules ($np stages)" ||
        fail "pp_pipeline's communicators ($np stages)"
    expect_in "$TMP/out" "# communicators: 4 created, at most 4 live at once, 0 live at the end, per rank" \
        "pp_pipeline prints the communicators counted ($np stages)"
    expect_rc 0 "pp_pipeline, 1f1b, 4 stages x $((np / 4)) replicas" -- \
        rehearse $np "$BIN/pp_pipeline" $R --model tiny --layers 4 $T --stages 4 --schedule 1f1b --micro-batches 6
    expect_rc 0 "hybrid_3d --compare-placements, $np ranks" -- \
        rehearse $np "$BIN/hybrid_3d" $R --model tiny --layers 4 $T --tp 2 --pp 2 --compare-placements \
        --json "$TMP/hy$np.json"
    expect_in "$TMP/out" "# wrong values: 0 OK" "hybrid_3d validates ($np ranks)"
    # TP, DP and 2 for the 2-stage pipeline, per placement, freed before the next: 12 created, 4 at once
    comms "$TMP/hy$np.json" 4 12 4 && pass "hybrid_3d: 4 communicators a rank per placement, freed between ($np ranks)" ||
        fail "hybrid_3d's communicators ($np ranks)"
    expect_in "$TMP/out" "# communicators: 4 per rank (TP group, DP group" "hybrid_3d states its count ($np ranks)"
    expect_rc 0 "fsdp_step prefetch off and on, world sharding, $np ranks" -- \
        rehearse $np "$BIN/fsdp_step" $R --model tiny --layers 3 $T --shard-group world
    expect_in "$TMP/out" "# wrong values: 0 OK" "fsdp_step validates ($np ranks, world)"
    expect_rc 0 "fsdp_step, shard groups of 4, $np ranks" -- \
        rehearse $np "$BIN/fsdp_step" $R --model tiny --layers 3 $T --shard-group 4
    expect_in "$TMP/out" "# wrong values: 0 OK" "fsdp_step validates ($np ranks, $((np / 4)) replicas)"
    expect_rc 0 "cp_attention overlap off and on, one ring, $np ranks" -- \
        rehearse $np "$BIN/cp_attention" $R --model tiny --layers 2 $T
    expect_in "$TMP/out" "# wrong values: 0 OK" "cp_attention validates ($np ranks, one ring)"
    expect_rc 0 "cp_attention, rings of 4, $np ranks" -- \
        rehearse $np "$BIN/cp_attention" $R --model tiny-gqa --layers 2 $T --kv-heads 4 --cp 4 --overlap on
    expect_in "$TMP/out" "# wrong values: 0 OK" "cp_attention validates ($np ranks, $((np / 4)) rings)"
    expect_rc 0 "moe_layer, EP over the world and groups of 4, uniform and skewed, $np ranks" -- \
        rehearse $np "$BIN/moe_layer" $R --model tiny-moe --experts 16 --layers 2 $T --ep-group world,4 --skew uniform,2
    expect_in "$TMP/out" "# wrong values: 0 OK" "moe_layer validates ($np ranks)"
done

# Misuse is NCCL's error, not a hang or wrong data.
PARABENCH_TEST_MISCOUNT=2 expect_rc 3 "a collective whose counts differ between ranks" -- \
    rehearse 4 "$BIN/coll_sweep" $R -b 64 -e 64
expect_in "$TMP/err" "ncclAllReduce (rank 0): invalid usage: rank 0 called ncclAllReduce with count 16" \
    "the mismatched collective is named, with both counts"
PARABENCH_TEST_MISCOUNT=0 expect_rc 3 "a send and its receive with different counts" -- \
    rehearse 2 "$BIN/p2p_sweep" $R -b 8 -e 8
expect_in "$TMP/err" "ncclRecv (rank 1, peer 0): invalid usage: 8 elements of byte here, but rank 0's matching ncclSend has 9" \
    "the receive names its send's count"
PARABENCH_REHEARSE_GPUS=2 expect_rc 3 "two ranks of a communicator on one device" -- \
    rehearse 4 "$BIN/coll_sweep" $R -b 8 -e 8
expect_in "$TMP/err" "Duplicate GPU detected : rank 0 and rank 2 both on CUDA device 0" "NCCL's duplicate-GPU refusal"

finish
