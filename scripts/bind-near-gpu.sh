#!/usr/bin/env bash
# Run a command bound to the CPU cores nearest the GPU this rank will use.
# parabench gives each rank visible GPU (local rank + offset) mod visible GPUs
# (common/backend/gpu.h), so this wrapper takes the same GPU: with
# CUDA_VISIBLE_DEVICES set, that entry of it (an index or a UUID), otherwise
# physical GPU (local rank + offset) mod GPUs. It asks nvidia-smi for that GPU's
# PCI address and lets hwloc-bind pick the cores on that GPU's side of the machine.
#
#   mpirun -np 8 --bind-to none scripts/bind-near-gpu.sh build/bin/coll_sweep ...
#
# PARABENCH_GPU_OFFSET is the --gpu-offset given to the benchmark (default 0).
# Without a GPU, nvidia-smi or hwloc-bind, the command runs unbound. When hwloc
# cannot place the GPU (a container whose /sys hides the PCI device, hwloc built
# without I/O discovery, a CUDA_VISIBLE_DEVICES entry nvidia-smi does not list),
# the command still runs, unbound, after one line on stderr saying why; with
# PARABENCH_BIND_NOTE set (run_all sets it), the same line is appended to that
# file, which meta.json's binding.fallback reports (docs/gpu.md).
set -u
local_rank=${OMPI_COMM_WORLD_LOCAL_RANK:-${SLURM_LOCALID:-${MPI_LOCALRANKID:-0}}}
offset=${PARABENCH_GPU_OFFSET:-0}

# unbound WHY CMD...: say why on stderr (and in PARABENCH_BIND_NOTE), then run CMD unbound.
unbound() {
    local line
    line="bind-near-gpu.sh: unbound: $(hostname) local rank $local_rank: $1"
    shift
    echo "$line" >&2
    if [ -n "${PARABENCH_BIND_NOTE:-}" ]; then echo "$line" >>"$PARABENCH_BIND_NOTE"; fi
    exec "$@"
}

if ! command -v nvidia-smi >/dev/null 2>&1 || ! command -v hwloc-bind >/dev/null 2>&1; then
    exec "$@"
fi
# "index, uuid, bus" per physical GPU, in nvidia-smi's order (which ignores CUDA_VISIBLE_DEVICES)
mapfile -t gpus < <(nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv,noheader 2>/dev/null)
[ ${#gpus[@]} -gt 0 ] || exec "$@"
if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
    IFS=, read -r -a visible <<<"$CUDA_VISIBLE_DEVICES"
    [ ${#visible[@]} -gt 0 ] || unbound "CUDA_VISIBLE_DEVICES is empty: no GPU to bind near" "$@"
    want=${visible[$(((local_rank + offset) % ${#visible[@]}))]}
    want=${want// /}
else
    want=$(((local_rank + offset) % ${#gpus[@]}))
fi
bus=""
for g in "${gpus[@]}"; do
    IFS=, read -r index uuid b <<<"$g"
    index=${index// /} uuid=${uuid// /} b=${b// /}
    # an index, a UUID, or a UUID's prefix (CUDA accepts a unique one)
    if [ "$want" = "$index" ] || { [ "${want#GPU-}" != "$want" ] && [ "${uuid#"$want"}" != "$uuid" ]; }; then
        bus=$b
        break
    fi
done
[ -n "$bus" ] || unbound "GPU '$want' (CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-}) is not among nvidia-smi's GPUs" "$@"
bus=${bus#00000000:} # nvidia-smi prints an 8-digit PCI domain; hwloc wants 4 or none
bus=${bus,,}
# The same binding with `true` first: hwloc-bind that cannot find the device never
# starts the command ("invalid PCI device"), which would stop every step.
if ! why=$(hwloc-bind "pci=$bus" -- true 2>&1); then
    why=$(echo "$why" | head -n 1)
    unbound "hwloc cannot place GPU $want (PCI $bus): ${why:-hwloc-bind failed}" "$@"
fi
exec hwloc-bind "pci=$bus" -- "$@"
