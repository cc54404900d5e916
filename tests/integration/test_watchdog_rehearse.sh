#!/usr/bin/env bash
# The watchdog under a stream-ordered backend (--backend nccl-rehearse, NCCL's
# ordering rules on the CPU): a rank that hangs for good, in a stream sync or
# in communicator creation (PARABENCH_TEST_HANG=SITE:RANK, core/faults.h),
# ends the job with exit 4 within --timeout and a few seconds, not at the
# suite's step limit; the TIMEOUT lines name the phase; and the watchdog's
# thread makes no MPI call (no MPI_Abort: each rank ends itself with
# _exit(4), which mpirun reports as a process's exit code).
source "$(dirname "$0")/lib.sh"
# Ranks left waiting on a peer that failed, hung or was stopped (on purpose here) yield
# their processor to the other tests instead of spinning on it until the job ends.
export OMPI_MCA_mpi_yield_when_idle=1

# hang NP SITE:RANK ARGS...: the binary under mpirun with that hang, bounded by
# `timeout` far beyond what the watchdog needs; $TMP/secs gets the wall time.
hang() {
    local np=$1 site=$2; shift 2
    local t0 rc
    t0=$(date +%s.%N)
    PARABENCH_TEST_HANG=$site timeout -k 5 60 mpirun -np "$np" --oversubscribe --bind-to none \
        --allow-run-as-root --mca btl self,vader,tcp -x PARABENCH_TEST_HANG "$@" </dev/null
    rc=$?
    python3 -c 'import sys; print(f"{float(sys.argv[2]) - float(sys.argv[1]):.1f}")' "$t0" "$(date +%s.%N)" >"$TMP/secs"
    return $rc
}

# ended_by_watchdog DESC PHASE RANKS...: exit 4 (expect_rc said), within 30 s,
# a TIMEOUT line naming PHASE from each of RANKS, and the job ended by a
# process's own exit status 4, never by MPI_Abort.
ended_by_watchdog() {
    local desc=$1 phase=$2 r; shift 2
    local secs; secs=$(cat "$TMP/secs")
    python3 -c 'import sys; sys.exit(not float(sys.argv[1]) < 30)' "$secs" &&
        pass "$desc: over in $secs s (--timeout 3), not at a step limit" || fail "$desc: took $secs s"
    for r in "$@"; do
        grep -qE "TIMEOUT: rank $r .*phase $phase\. " "$TMP/err" && pass "$desc: rank $r names phase $phase" ||
            { fail "$desc: no TIMEOUT line from rank $r naming phase $phase"; grep TIMEOUT "$TMP/err" | sed 's/^/  | /' >&2; }
    done
    if grep -q "MPI_ABORT was invoked" "$TMP/out" "$TMP/err"; then
        fail "$desc: MPI_Abort was called (from the watchdog's thread)"
    else pass "$desc: no MPI_Abort"; fi
    grep -qE "Exit code: +4" "$TMP/err" && pass "$desc: a rank ended itself with exit status 4 (mpirun reports it)" ||
        { fail "$desc: mpirun reports no process that exited 4"; tail -8 "$TMP/err" | sed 's/^/  | /' >&2; }
}

R="--backend nccl-rehearse -n 5 -w 1 --timeout 3"
T="--model tiny --layers 4 --hidden 64 --heads 16 --seq 16"

# A stream that never completes: rank 1's own sync waits, and so do its peers' collectives.
expect_rc 4 "coll_sweep, rank 1's stream hangs" -- hang 3 sync:1 "$BIN/coll_sweep" $R -b 1K -e 1K
ended_by_watchdog "stream hang" "warm-up before the sweep" 0 1 2
expect_in "$TMP/err" "cudaStreamSynchronize of a communicator's stream did not complete within --timeout" \
    "the stuck rehearsal stream names its wait"

# Communicator creation that never returns on rank 2: the others wait in theirs, armed.
expect_rc 4 "pp_pipeline, rank 2's communicator creation hangs" -- \
    hang 4 comm:2 "$BIN/pp_pipeline" $R $T --stages 4 --micro-batches 4
ended_by_watchdog "comm init hang" "comm init" 0 1 2 3

# A stream that hangs in the middle of a pipeline step, 1F1B at 4 stages.
expect_rc 4 "pp_pipeline, stage 3's stream hangs" -- \
    hang 4 sync:3 "$BIN/pp_pipeline" $R $T --stages 4 --micro-batches 4 --schedule 1f1b
ended_by_watchdog "pipeline stream hang" operation 0 1 2 3

finish
