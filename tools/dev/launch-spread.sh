#!/usr/bin/env bash
# How much one machine varies from launch to launch: LAUNCHES alternating
# launches of OSU's osu_allreduce and parabench's coll_sweep over the same
# sweep (float, 8 B to 1 MiB), printing each launch's 1 MiB time and both
# tools' values sorted. On a VM the values fall into two groups (where the
# shared-memory segment and the virtual CPUs land), for both tools alike; a
# ratio of two single launches then says nothing about either tool.
#   Usage: tools/dev/launch-spread.sh OSU_PREFIX [LAUNCHES]   (OSU_PREFIX as for compare-osu.sh;
#   recorded as docs/measured/launch-spread.txt by tools/dev/record.sh)
set -eu
cd "$(dirname "$0")/../.."
[ $# -ge 1 ] || { echo "usage: tools/dev/launch-spread.sh OSU_PREFIX [LAUNCHES]" >&2; exit 2; }
OSU=$1/libexec/osu-micro-benchmarks/mpi/collective/osu_allreduce LAUNCHES=${2:-16}
[ -x "$OSU" ] || { echo "launch-spread.sh: no $OSU" >&2; exit 3; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
make -s CUDA=0 BUILD=build-cpu all >/dev/null
M=(mpirun -np 2 --map-by core --bind-to core)
csv=$(mktemp /tmp/pb-spread.XXXXXX)
echo "# launch: ${M[*]}; allreduce, float, 8 B to 1 MiB by 2; the 1 MiB row in us"
osu=() pb=()
for l in $(seq "$LAUNCHES"); do
    osu+=("$("${M[@]}" "$OSU" -m 8:1048576 -T mpi_float | awk '$1 == 1048576 { print $2 }')")
    "${M[@]}" build-cpu/bin/coll_sweep --coll allreduce -d float -b 8 -e 1M -f 2 --csv "$csv" >/dev/null 2>&1
    pb+=("$(awk -F, '!/^#/ && $2 == 1048576 { printf "%.2f", $11 }' "$csv")")
    echo "launch pair $l: OSU ${osu[-1]} us, parabench ${pb[-1]} us"
done
rm -f "$csv"
echo "OSU sorted:       $(printf '%s\n' "${osu[@]}" | sort -n | tr '\n' ' ')"
echo "parabench sorted: $(printf '%s\n' "${pb[@]}" | sort -n | tr '\n' ' ')"
