#!/usr/bin/env bash
# reduce-scatter-malloc.sh OSU_PREFIX [LAUNCHES]: the 128 KiB MPI_Reduce_scatter_block
# (2 ranks, floats) of parabench and of OSU, each launched LAUNCHES times (default 4)
# in four ways: the size alone, OSU in its full ascending sweep (8 B to 1 MiB), and
# both again with glibc's malloc thresholds fixed (MALLOC_MMAP_THRESHOLD_ and
# MALLOC_TRIM_THRESHOLD_ set, so that they no longer move with what the process
# freed before). Prints one line per launch (microseconds per operation). Used by
# docs/fidelity.md ("reduce_scatter: the allocator, not the tool"). A benchmark:
# run it on an idle machine. OSU_PREFIX: as for scripts/compare-osu.sh, an install
# prefix (build/osu/osu-micro-benchmarks-X.Y once compare-osu.sh has built it).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OSU=${1:?usage: reduce-scatter-malloc.sh OSU_PREFIX [LAUNCHES]}/libexec/osu-micro-benchmarks/mpi/collective/osu_reduce_scatter_block
N=${2:-4}
[ -x "$OSU" ] || { echo "reduce-scatter-malloc: no $OSU" >&2; exit 3; }
make -s -C "$ROOT" CUDA=0 BUILD=build-cpu all >/dev/null || exit 3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
L=(mpirun -np 2 --map-by core --bind-to core)
FIXED=(-x MALLOC_MMAP_THRESHOLD_=67108864 -x MALLOC_TRIM_THRESHOLD_=134217728)
CSV=$(mktemp /tmp/rs-malloc.XXXXXX)
trap 'rm -f "$CSV"' EXIT
pb() { # [mpirun options]: parabench's 128 KiB time, alone
    "${L[@]}" "$@" "$ROOT/build-cpu/bin/coll_sweep" --coll reducescatter -d float -b 128K -e 128K --csv "$CSV" \
        >/dev/null 2>&1 && awk -F, '$1 == "reducescatter" && $2 == 131072 { printf "%.2f", $11 }' "$CSV"
}
osu() { # RANGE [mpirun options]: OSU's 128 KiB time in the sweep RANGE
    local range=$1; shift
    "${L[@]}" "$@" "$OSU" -m "$range" -T mpi_float 2>/dev/null | awk '$1 == 131072 { printf "%.2f", $2 }'
}
printf '%-8s %14s %14s %14s %14s %14s\n' launch "parabench" "OSU alone" "OSU 8B-1MiB" "parabench fix" "OSU 8B-1M fix"
for i in $(seq 1 "$N"); do
    printf '%-8s %14s %14s %14s %14s %14s\n' "$i" "$(pb)" "$(osu 131072:131072)" "$(osu 8:1048576)" \
        "$(pb "${FIXED[@]}")" "$(osu 8:1048576 "${FIXED[@]}")"
done
echo "us per MPI_Reduce_scatter_block of 128 KiB; 'fix': MALLOC_MMAP_THRESHOLD_=64M MALLOC_TRIM_THRESHOLD_=128M"
