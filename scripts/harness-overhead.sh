#!/usr/bin/env bash
# What does the parabench harness add to an MPI operation? Runs a plain
# OSU-style reference loop (tests/perf/ref_mpi.c) and the parabench binary
# with its defaults on the same 8-byte operation, alternating, several rounds,
# and prints both medians and their difference. Machines are noisy: read the
# difference, and run it on an idle machine.
#   Usage: scripts/harness-overhead.sh [ROUNDS]   (recorded as docs/measured/harness-overhead.txt by scripts/record.sh)
set -eu
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
make -s CUDA=0 BUILD=build-cpu all >/dev/null
mkdir -p build-cpu/perf
mpicc -O2 -o build-cpu/perf/ref_mpi tests/perf/ref_mpi.c
M=(mpirun -np 2 --map-by core --bind-to core --mca btl self,vader)
col() { python3 -c "import csv,sys; r=list(csv.DictReader(l for l in sys.stdin if not l.startswith('#'))); print(r[-1]['$1'])"; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
csv=$(mktemp /tmp/pb-ovh.XXXXXX)
echo "# launch: ${M[*]}; 20000 iterations (+2000 warm-up) per round, medians of $ROUNDS rounds"
for op in latency allreduce; do
    ref=() ours=()
    for _ in $(seq "$ROUNDS"); do
        ref+=("$("${M[@]}" build-cpu/perf/ref_mpi "$op" 8 20000)")
        if [ "$op" = latency ]; then
            "${M[@]}" build-cpu/bin/p2p_sweep --mode latency --sizes 8 -n 20000 -w 2000 -c 0 --csv "$csv" >/dev/null 2>&1
        else
            "${M[@]}" build-cpu/bin/coll_sweep --sizes 8 -n 20000 -w 2000 -c 0 --csv "$csv" >/dev/null 2>&1
        fi
        ours+=("$(col time_us <"$csv")")
    done
    r=$(printf '%s\n' "${ref[@]}" | median) o=$(printf '%s\n' "${ours[@]}" | median)
    printf '%-10s 8 B: reference %.3f us, parabench %.3f us, difference %+.3f us\n' "$op" "$r" "$o" "$(echo "$o - $r" | bc -l)"
done
rm -f "$csv"
