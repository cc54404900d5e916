#!/usr/bin/env bash
# What does the parabench harness add to an MPI operation? Runs a plain
# OSU-style reference loop (tests/perf/ref_mpi.c) and the parabench binary
# on the same operation, alternating, several rounds, and prints both
# medians and their difference. Machines are noisy: read the ratio, and run
# it on an idle machine. Usage: scripts/harness-overhead.sh [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
make -s all >/dev/null
mkdir -p build/perf
mpicc -O2 -o build/perf/ref_mpi tests/perf/ref_mpi.c
M=(mpirun -np 2 --bind-to core --mca btl self,vader)
pb() { "${M[@]}" build/bin/"$1" "${@:2}" --csv /dev/stdout 2>/dev/null | grep -v '^#' | tail -1; }
col() { python3 -c "import csv,sys; r=list(csv.DictReader(sys.stdin)); print(r[-1]['$1'])"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
for op in latency allreduce; do
    ref=() ours=()
    for _ in $(seq "$ROUNDS"); do
        ref+=("$("${M[@]}" build/perf/ref_mpi "$op" 8 20000)")
        if [ "$op" = latency ]; then
            ours+=("$("${M[@]}" build/bin/p2p_sweep --mode latency --sizes 8 -n 20000 -w 2000 --rotate 0 -c 0 \
                      --csv /tmp/pb-ovh.csv >/dev/null 2>&1; grep -v '^#' /tmp/pb-ovh.csv | col time_us)")
        else
            ours+=("$("${M[@]}" build/bin/coll_sweep --sizes 8 -n 20000 -w 2000 --rotate 0 -c 0 \
                      --csv /tmp/pb-ovh.csv >/dev/null 2>&1; grep -v '^#' /tmp/pb-ovh.csv | col time_us)")
        fi
    done
    r=$(printf '%s\n' "${ref[@]}" | median) o=$(printf '%s\n' "${ours[@]}" | median)
    printf '%-10s 8 B: reference %.3f us, parabench %.3f us, difference %+.3f us (%d rounds, medians)\n' \
        "$op" "$r" "$o" "$(echo "$o - $r" | bc -l)" "$ROUNDS"
done
