#!/usr/bin/env bash
# Cross-rank agreement (docs/reliability.md): one rank fails locally before a
# collective (PARABENCH_TEST_FAIL=SITE:RANK, core/faults.h); every rank must
# exit with that rank's code (3), the failing rank must name itself and the
# site, every other rank must say which rank failed where, and nothing hangs.
#
# Sites covered here: buffers, comm (world and a TP sub-communicator), gather,
# report, engine, step and samples. Not run here, GPU only, covered by code review: the
# nccl-stream and nccl-id agreements in comm_nccl.c and the staging-stream
# agreement in comm_mpi_cuda.c.
source "$(dirname "$0")/lib.sh"

# every_rank_exits_3 NP SITE:RANK DESC PROG ARGS...: run PROG on NP ranks with SITE
# failing on RANK; each rank writes its own exit code to $TMP/rc.RANK (mpirun passes
# on only the first nonzero one, and kills the ranks still running: those write
# none). Returns 1 when the run hung.
every_rank_exits_3() {
    local np=$1 fault=$2 desc=$3; shift 3
    rm -f "$TMP"/rc.*
    timeout 40 mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp \
        -x PARABENCH_TEST_FAIL="$fault" -x RC_DIR="$TMP" \
        sh -c '"$@" >/dev/null; echo $? >"$RC_DIR/rc.$OMPI_COMM_WORLD_RANK"' sh "$@" </dev/null 2>"$TMP/err" >/dev/null
    local rc=$?
    if [ "$rc" -eq 124 ]; then fail "$desc: hung (killed after 40 s)"; return 1; fi
    local r bad=""
    for r in $(seq 0 $((np - 1))); do
        [ "$(cat "$TMP/rc.$r" 2>/dev/null)" = 3 ] || bad="$bad rank $r: $(cat "$TMP/rc.$r" 2>/dev/null || echo none)"
    done
    if [ -z "$bad" ]; then pass "$desc: every rank exits 3"; else
        fail "$desc: exit codes:$bad"; sed 's/^/  | /' "$TMP/err" | tail -15 >&2; fi
}

# agree_case NP SITE RANK DESC PROG ARGS...: every rank exits 3, and says who failed where.
agree_case() {
    local np=$1 site=$2 rank=$3 desc="$4 ($1 ranks, $2 on rank $3)"; shift 4
    every_rank_exits_3 "$np" "$site:$rank" "$desc" "$@" || return
    expect_in "$TMP/err" "rank $rank failed at $site (exit 3" "$desc: the failing rank names itself and the site"
    local told
    told=$(grep -cF "rank $rank failed at $site: " "$TMP/err")
    if [ "$told" -eq $((np - 1)) ]; then pass "$desc: each of the $((np - 1)) other ranks names rank $rank"; else
        fail "$desc: $told lines from other ranks name rank $rank, expected $((np - 1))"
        sed 's/^/  | /' "$TMP/err" | tail -15 >&2; fi
}

SWEEP=("$BIN/coll_sweep" -b 1K -e 4K -n 3 -w 1 --timeout 20)
agree_case 2 buffers 1 "coll_sweep" "${SWEEP[@]}"
agree_case 3 buffers 2 "coll_sweep" "${SWEEP[@]}"
agree_case 2 comm 1 "coll_sweep" "${SWEEP[@]}"
agree_case 3 comm 1 "coll_sweep" "${SWEEP[@]}"
agree_case 2 gather 0 "coll_sweep" "${SWEEP[@]}"
agree_case 3 gather 0 "coll_sweep" "${SWEEP[@]}"
agree_case 3 gather 2 "coll_sweep" "${SWEEP[@]}" # the others copy their own samples
agree_case 2 report 0 "coll_sweep" "${SWEEP[@]}" --csv "$TMP/r.csv"
agree_case 3 report 0 "coll_sweep" "${SWEEP[@]}" --csv "$TMP/r.csv"
agree_case 2 buffers 1 "p2p_sweep" "$BIN/p2p_sweep" -b 1K -e 4K -n 3 -w 1 --timeout 20
# The default pair is the first and the last rank; rank 1 holds no buffers.
agree_case 3 buffers 2 "p2p_sweep" "$BIN/p2p_sweep" -b 1K -e 4K -n 3 -w 1 --timeout 20
TP=("$BIN/tp_layer" -n 2 -w 1 --hidden 64 --heads 4 --seq 32 -c 0 --unsharded 0 --timeout 20)
agree_case 2 engine 1 "tp_layer" "${TP[@]}" --tp 2
# The failure is agreed in the TP group {2,3}, then over the world.
agree_case 4 comm 3 "tp_layer sub-communicator" "${TP[@]}" --tp 2
DP=("$BIN/dp_allreduce" --model tiny -n 2 -w 1 --timeout 20)
agree_case 3 engine 2 "dp_allreduce" "${DP[@]}"
# The options are parsed on every rank: one that fails alone (out of memory) must not leave the others in MPI.
agree_case 2 options 1 "coll_sweep" "${SWEEP[@]}"
agree_case 3 options 0 "pp_pipeline" "$BIN/pp_pipeline" --hidden 64 --heads 4 --seq 16 -n 1 -w 0 --layers 3 --timeout 20

# A rank that fails inside a step (step:RANK: it skips the first timed
# iteration and fails) leaves its peers waiting inside the step for its
# messages, where no agreement reaches them. It must end the job itself, with
# its own exit code and a line saying so, after a grace of about 2 s: not the
# watchdog's exit 4 after --timeout (30 s here), and not a hang.
step_case() { # NP RANK DESC PROG ARGS...
    local np=$1 rank=$2 desc="$3 ($1 ranks, a step failing on rank $2)"; shift 3
    local t0=$SECONDS
    timeout 90 mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp \
        -x PARABENCH_TEST_FAIL="step:$rank" "$@" --timeout 30 </dev/null >"$TMP/out" 2>"$TMP/err"
    local rc=$? took=$((SECONDS - t0))
    if [ "$rc" -eq 3 ] && [ "$took" -lt 30 ]; then pass "$desc: exit 3 in $took s, before the watchdog's 30"
    else fail "$desc: exit $rc after $took s, expected 3 before the watchdog's 30 s"; sed 's/^/  | /' "$TMP/err" | tail -8 >&2; fi
    expect_in "$TMP/err" "rank $rank failed inside a step (exit 3" "$desc: the failing rank says it ends the job"
    if grep -q "TIMEOUT" "$TMP/err"; then fail "$desc: the watchdog had to fire"; else pass "$desc: no watchdog"; fi
}
step_case 2 1 "coll_sweep" "$BIN/coll_sweep" -b 1M -e 1M -n 3 -w 1

# A p2p pair agrees between its two ranks whether both have room for their samples
# before the timed loop: a rank out of memory there (samples:RANK) must not leave its
# peer alone in the loop, waiting for messages (then killed by mpirun, or by the watchdog).
every_rank_exits_3 2 samples:1 "p2p_sweep, samples failing on rank 1" "$BIN/p2p_sweep" -b 1K -e 1K -n 3 -w 1 --timeout 20
if grep -q TIMEOUT "$TMP/err"; then fail "p2p_sweep, samples failing on rank 1: the watchdog had to fire"; fi
expect_in "$TMP/err" "out of memory for" "p2p_sweep, samples failing on rank 1: the rank says what it lacked"
step_case 3 0 "pp_pipeline" "$BIN/pp_pipeline" --hidden 64 --heads 4 --seq 16 -n 2 -w 1 --layers 3 --micro-batches 3

finish
