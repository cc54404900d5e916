#!/usr/bin/env bash
# The commands of docs/run_all.md's "Several nodes" section, as run for
# docs/measured/slurm-nodes.txt (run as root from the repository's root, as the
# only user of the emulated cluster):
#   flock /run/parabench-emu-owner.lock tools/dev/record.sh slurm-nodes tools/dev/slurm-nodes.sh
# Each command is echoed (set -x) before its output.
cd "$(dirname "$0")/../.."
set -x
export OMPI_MCA_mpi_yield_when_idle=1
scripts/local-slurm.sh up --nodes 2 --rate 1gbit
eval "$(scripts/local-slurm.sh env)"
sinfo -N
srun -N 2 --ntasks-per-node=2 bash -c 'echo "rank $SLURM_PROCID on $(hostname): $(ip -4 -o addr show pbeth0 | awk "{print \$4}")"' | sort
srun --mpi=list
srun -N 2 --ntasks-per-node=2 --mpi=pmix --cpu-bind=none build/bin/p2p_sweep --mode bw --pair 0,3 --window 8 -b 4M -e 4M -f 2 -n 4 -w 1 | grep -Ev '^# [a-z_0-9]+ {2,}'
srun -N 2 --ntasks-per-node=2 --mpi=pmix --cpu-bind=none build/bin/coll_sweep --coll allreduce -b 1M -e 4M -f 4 -n 4 -w 1 | grep -Ev '^# [a-z_0-9]+ {2,}'
srun -N 2 --ntasks-per-node=1 --mpi=pmi2 --cpu-bind=none build/bin/coll_sweep --coll allreduce -b 8 -e 8 -n 2 -w 1 2>&1 | head -4
PARABENCH_BUILD=0 sbatch --wait -N 2 --output=/tmp/parabench-slurm-2nodes.out scripts/slurm/run_all-cpu.sbatch --quick --bind none --out /tmp/parabench-slurm-2nodes
tail -n 22 /tmp/parabench-slurm-2nodes.out
python3 -c 'import json; m = json.load(open("/tmp/parabench-slurm-2nodes/meta.json")); print("launch:", m["launch"], "| nnodes:", m["machine"]["nnodes"], "| hosts:", m["machine"]["hosts"])'
awk -F'\t' '{ printf "%s %s; ", $1, $2 } END { print "" }' /tmp/parabench-slurm-2nodes/steps.tsv
salloc -N 2 --ntasks-per-node=2 ./run_all.sh --dry-run --quick --bind none --no-install 2>&1 | grep -E '^run_all.sh --dry-run|^\[1/|upper bound'
scripts/local-slurm.sh down
ip netns list
