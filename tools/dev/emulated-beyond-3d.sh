#!/usr/bin/env bash
# The beyond-3D benchmarks on the emulated 4 x 2 cluster (docs/emulated-cluster.md): fsdp_step
# (hybrid sharding, a node a shard group), cp_attention (rings of 2 inside each node) and
# moe_layer (EP inside a node and across the 4 nodes), 8 ranks, each validated (-c 1).
# Brings the cluster up at 1 Gbit/s and down again; needs root and network namespaces.
# Recorded as docs/measured/emulated-beyond-3d.txt by tools/dev/record.sh. Exit: the first failure's.
set -u
cd "$(dirname "$0")/../.." || exit 3
EMU=scripts/emulate-cluster.sh B=${BUILD:-build}/bin
export PB_EMU_OWNER=emulated-beyond-3d OMPI_MCA_mpi_yield_when_idle=1
if "$EMU" status 2>/dev/null | grep -q '^emulated cluster: \(up\|DAMAGED\)'; then
    echo "emulated-beyond-3d: an emulated cluster is already up; not touching it" >&2; exit 3
fi
"$EMU" up --nodes 4 --rate 1gbit >/dev/null || exit 3
trap '"$EMU" down >/dev/null' EXIT
rc=0
run() { echo "\$ $*"; "$EMU" mpirun -np 8 --npernode 2 "$@" -c 1 -n 3 -w 1 || { r=$?; [ "$rc" -eq 0 ] && rc=$r; }; echo; }
run "$B/fsdp_step" --model tiny-gqa --layers 2 --shard-group node
run "$B/cp_attention" --model tiny-gqa --layers 1 --cp 2 --seq 256
run "$B/moe_layer" --model tiny-moe --layers 1 --ep-group node,world --skew uniform,2
exit $rc
