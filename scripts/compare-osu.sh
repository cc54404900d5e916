#!/usr/bin/env bash
# Cross-check parabench against the OSU Micro-Benchmarks on this machine.
#
#   scripts/compare-osu.sh OSU [--rounds N] [--np N] [--bind core|none] [--ops LIST] [--min BYTES] [--max BYTES]
#                          [--out DIR] [--fixed-malloc]
#
# OSU is an OSU Micro-Benchmarks install prefix (the one `make install` made,
# holding libexec/osu-micro-benchmarks/mpi/) or a source tarball
# (osu-micro-benchmarks-X.Y.tar.gz), which is built once with the system MPI
# into build/osu/.
#
# For each operation (allreduce, allgather, reduce_scatter, bcast, alltoall,
# latency, bw, bibw), both tools run with their default iteration counts
# (parabench's defaults are OSU's counts) over the same power-of-two sizes, one
# after the other, alternating which goes first, for N rounds (default 5).
# It prints the ratio parabench/OSU of the metric each tool reports (time for
# latency and collectives, bandwidth for bw and bibw) per size: parabench's
# median over the rounds against OSU's, the fastest round against the fastest,
# and the spread of the per-round ratios. It writes DIR/compare-osu-raw.csv
# (every value), DIR/compare-osu.csv (the summary) and DIR/plots/compare_osu.png.
#
# A benchmark, not a test: run it on an idle machine. Exit 0 when it ran,
# 2 on a usage error, 3 when OSU cannot be found or built.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
die() { echo "compare-osu.sh: $2" >&2; exit "$1"; }
[ $# -ge 1 ] || die 2 "usage: scripts/compare-osu.sh OSU_PREFIX|OSU_TARBALL [--rounds N] [--np N] [--bind core|none] [--ops LIST] [--min BYTES] [--max BYTES] [--out DIR] [--fixed-malloc]"
case "$1" in -h|--help) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
OSU=$1; shift
# The options first: a usage error names this script's options and costs no build.
python3 "$ROOT/scripts/compare-osu-table.py" --check-only "$@" || exit 2

osu_bin_dir() { echo "$1/libexec/osu-micro-benchmarks/mpi"; }
if [ -f "$OSU" ]; then
    name=$(basename "$OSU"); name=${name%.tar.gz}; name=${name%.tgz}
    prefix=$ROOT/build/osu/$name
    if [ ! -x "$(osu_bin_dir "$prefix")/collective/osu_allreduce" ]; then
        command -v mpicc >/dev/null || die 3 "mpicc is not on PATH (scripts/install-deps.sh installs Open MPI)"
        src=$ROOT/build/osu/src-$name
        rm -rf "$src" && mkdir -p "$src"
        echo "compare-osu.sh: building $name with $(command -v mpicc) (log: $src/build.log)" >&2
        tar -xzf "$OSU" -C "$src" || die 3 "cannot unpack $OSU"
        top=$(dirname "$(find "$src" -maxdepth 2 -name configure | head -n 1)")
        [ -x "$top/configure" ] || die 3 "$OSU holds no configure script"
        (cd "$top" && ./configure CC=mpicc CXX=mpicxx --prefix="$prefix" && make -j"$(nproc)" && make install) \
            >"$src/build.log" 2>&1 || die 3 "building OSU failed; see $src/build.log"
    fi
    OSU=$prefix
fi
[ -x "$(osu_bin_dir "$OSU")/collective/osu_allreduce" ] ||
    die 3 "'$OSU' is neither an OSU install prefix (no $(osu_bin_dir "$OSU")/collective/osu_allreduce) nor a tarball"

make -s -C "$ROOT" CUDA=0 BUILD=build-cpu all >/dev/null || die 3 "building parabench failed"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
exec python3 "$ROOT/scripts/compare-osu-table.py" --osu "$(osu_bin_dir "$OSU")" --parabench "$ROOT/build-cpu/bin" "$@"
