#!/usr/bin/env bash
# Cross-rank agreement (docs/reliability.md): one rank fails locally before a
# collective (PARABENCH_TEST_FAIL=SITE:RANK, core/faults.h); every rank must
# exit with that rank's code (3), the failing rank must name itself and the
# site, every other rank must say which rank failed where, and nothing hangs.
#
# Sites covered here: buffers, comm (world and a TP sub-communicator), gather,
# report, engine. Not run here, GPU only, covered by code review: the
# nccl-stream and nccl-id agreements in comm_nccl.c and the staging-stream
# agreement in comm_mpi_cuda.c.
source "$(dirname "$0")/lib.sh"

# agree_case NP SITE RANK DESC PROG ARGS...: run PROG on NP ranks with SITE
# failing on RANK; each rank writes its own exit code to $TMP/rc.RANK
# (mpirun passes on only the first nonzero one).
agree_case() {
    local np=$1 site=$2 rank=$3 desc="$4 ($1 ranks, $2 on rank $3)"; shift 4
    rm -f "$TMP"/rc.*
    timeout 40 mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp \
        -x PARABENCH_TEST_FAIL="$site:$rank" -x RC_DIR="$TMP" \
        sh -c '"$@" >/dev/null; echo $? >"$RC_DIR/rc.$OMPI_COMM_WORLD_RANK"' sh "$@" </dev/null 2>"$TMP/err" >/dev/null
    local rc=$?
    if [ "$rc" -eq 124 ]; then fail "$desc: hung (killed after 40 s)"; return; fi
    local r bad=""
    for r in $(seq 0 $((np - 1))); do
        [ "$(cat "$TMP/rc.$r" 2>/dev/null)" = 3 ] || bad="$bad rank $r: $(cat "$TMP/rc.$r" 2>/dev/null || echo none)"
    done
    if [ -z "$bad" ]; then pass "$desc: every rank exits 3"; else
        fail "$desc: exit codes:$bad"; sed 's/^/  | /' "$TMP/err" | tail -15 >&2; fi
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

finish
