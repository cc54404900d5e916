#!/usr/bin/env bash
# What does the parabench harness add to an MPI operation? tests/perf/ref_mpi.c
# alternates, inside one process, blocks of OSU-style reference loops with
# blocks of the same 8-byte operation through parabench's timing loop and MPI
# backend (p2p latency; allreduce), and prints the medians over the blocks and
# their difference. Comparing inside one process matters on virtual machines,
# where two launches of the same program can differ by 2x. The script runs
# LAUNCHES launches, so the spread between launches is visible too.
#   Usage: tools/dev/harness-overhead.sh [LAUNCHES]
#   (recorded as docs/measured/harness-overhead.txt by tools/dev/record.sh)
set -eu
cd "$(dirname "$0")/../.."
LAUNCHES=${1:-3}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
make -s CUDA=0 BUILD=build-cpu build-cpu/lib/libparabench.a >/dev/null
mkdir -p build-cpu/perf
mpicc -O2 -std=c11 -D_GNU_SOURCE -Icommon $(pkg-config --cflags libcjson hwloc) tests/perf/ref_mpi.c \
    build-cpu/lib/libparabench.a $(pkg-config --libs openblas 2>/dev/null || echo -lopenblas) -lhwloc -lcjson \
    -lpthread -lm -o build-cpu/perf/ref_mpi
M=(mpirun -np 2 --map-by core --bind-to core --mca btl self,vader)
echo "# launch: ${M[*]}; 8 B; 20 blocks of 10000 iterations (+1000 warm-up) per launch, medians over blocks"
for op in latency allreduce; do
    for l in $(seq "$LAUNCHES"); do
        printf '%-10s 8 B, launch %d: %s us\n' "$op" "$l" "$("${M[@]}" build-cpu/perf/ref_mpi "$op" 8 10000 20)"
    done
done
