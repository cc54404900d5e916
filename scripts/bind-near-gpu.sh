#!/usr/bin/env bash
# Run a command bound to the CPU cores nearest the GPU this rank will use.
# parabench gives each rank GPU (local rank + offset) mod GPUs (common/backend/gpu.h),
# so this wrapper takes the same GPU, asks nvidia-smi for its PCI address and
# lets hwloc-bind pick the cores on that GPU's side of the machine.
#
#   mpirun -np 8 --bind-to none scripts/bind-near-gpu.sh build/bin/coll_sweep ...
#
# PARABENCH_GPU_OFFSET is the --gpu-offset given to the benchmark (default 0).
# Without a GPU, nvidia-smi or hwloc-bind, the command runs unbound.
set -u
local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${MPI_LOCALRANKID:-0}}}
offset=${PARABENCH_GPU_OFFSET:-0}
if command -v nvidia-smi >/dev/null 2>&1 && command -v hwloc-bind >/dev/null 2>&1; then
    mapfile -t buses < <(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader 2>/dev/null)
    if [ ${#buses[@]} -gt 0 ]; then
        bus=${buses[$(((local_rank + offset) % ${#buses[@]}))]}
        bus=${bus#00000000:} # nvidia-smi prints an 8-digit PCI domain; hwloc wants 4 or none
        exec hwloc-bind "pci=${bus,,}" -- "$@"
    fi
fi
exec "$@"
