#!/usr/bin/env bash
# MPI_Init under srun --mpi=pmix across two emulated nodes, with Slurm's default
# PMIx fences and with SLURM_PMIX_FENCE=ring (what run_all.sh sets under srun).
# Runs the same tp_layer step RUNS times each way, alternating, while SPIN busy
# loops load the machine (the crash needs a rank that is late into MPI_Init), and
# counts the runs that fail; a failed run's first lines show how it died.
# Recorded for docs/run_all.md ("MPI_Init under srun"), as root from the
# repository's root, as the only user of the emulated cluster:
#   flock /run/parabench-emu-owner.lock tools/dev/record.sh srun-init-race tools/dev/srun-init-race.sh [RUNS [SPIN]]
cd "$(dirname "$0")/../.." || exit 3
RUNS=${1:-100} SPIN=${2:-3}
export OMPI_MCA_mpi_yield_when_idle=1
scripts/local-slurm.sh up --nodes 2 --rate 1gbit >/dev/null || exit 3
eval "$(scripts/local-slurm.sh env)"
TMP=$(mktemp -d)
SPINNERS=""
cleanup() {
    # shellcheck disable=SC2086 # one PID per word
    [ -n "$SPINNERS" ] && kill $SPINNERS 2>/dev/null
    scripts/local-slurm.sh down >/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
for _ in $(seq "$SPIN"); do
    sh -c 'while :; do :; done' &
    SPINNERS="$SPINNERS $!"
done
# shellcheck disable=SC2054 # the commas are tp_layer's list syntax
STEP=(build/bin/tp_layer --tp-comm allreduce,sp --model tiny --layers 1 --hidden-list 64,128 --seq 64 -n 3 -w 1 --tp 2)
echo "srun -N 2 --ntasks-per-node=2 --mpi=pmix --cpu-bind=none ${STEP[*]}, $RUNS times each way, $SPIN busy loops alongside"
declare -A failed=([default]=0 [ring]=0)
for i in $(seq "$RUNS"); do
    for way in default ring; do
        if [ "$way" = ring ]; then fence=(env SLURM_PMIX_FENCE=ring); else fence=(env -u SLURM_PMIX_FENCE); fi
        "${fence[@]}" timeout 120 srun -N 2 --ntasks-per-node=2 --mpi=pmix --cpu-bind=none "${STEP[@]}" >"$TMP/out" 2>&1
        rc=$?
        if [ "$rc" -ne 0 ]; then
            failed[$way]=$((failed[$way] + 1))
            echo "run $i, $way fences: exit $rc"
            grep -E 'Signal:|Failing at|MPI_INIT|add procs|task [0-9-]+: (Segm|Exit)' "$TMP/out" | head -5 | sed 's/^/  | /'
        fi
    done
done
for way in default ring; do
    echo "$way fences: ${failed[$way]} of $RUNS runs failed"
done
