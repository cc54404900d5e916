#!/usr/bin/env bash
# Regenerate the recorded outputs the docs quote (docs/measured/*.txt, each
# with its command, date, commit and machine; make docs-check holds the docs
# to them). Run on an idle machine after `make CUDA=0 all`; takes a few minutes.
#   tools/dev/measure-docs.sh [NAME...]   (default: all of them)
# NAMEs: compute dp_allreduce pp_pipeline hybrid_3d fsdp_step cp_attention moe_layer plan this-machine emulated-cluster emulated-beyond-3d (both need root
# and network namespaces) beyond-3d-fit overlap-yield shapes (the shapes and dry-run bounds; no run) reproduce (a default-profile run_all.sh --reproduce). Exit: 1 if a recording failed, 3 no build.
set -u
cd "$(dirname "$0")/../.." || exit 3
B=build/bin
[ -x $B/coll_sweep ] || { echo "measure-docs: build first (make CUDA=0 all)" >&2; exit 3; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
MPI=(mpirun -np 2 --oversubscribe --bind-to none)
rec() { tools/dev/record.sh "$@" || FAILED="$FAILED $1"; }
FAILED=

compute() {
    rec compute $B/compute_probe --sizes 256,512,1024,2048 -n 5 --copy-bytes 64M
}
dp_allreduce() {
    rec dp_allreduce "${MPI[@]}" $B/dp_allreduce --model tiny --overlap none,bucket --grad-bytes 4M,16M,64M -n 5 -w 1
}
# The printed tables docs/pp_pipeline.md and docs/placement.md show (test_docs_tables.sh
# holds every benchmark's table to the docs' examples).
pp_pipeline() {
    rec pp_pipeline "${MPI[@]}" $B/pp_pipeline --model tiny --layers 4 --schedule all --micro-batches 4,8 -n 3 -w 1
    # docs/pp_pipeline.md, "Recomputation": what a stage holds under each --recompute, validated
    rec pp_pipeline-recompute bash -c "for rc in none selective full; do ${MPI[*]} $B/pp_pipeline --model tiny \
        --layers 4 --seq 512 --schedule 1f1b --micro-batches 8 -n 3 -w 1 -c 1 --recompute \$rc | grep -E '^# pipeline|1f1b|wrong'; done"
}
# docs/moe_layer.md: 4 ranks, EP over a node and over the world, uniform and skewed load, validated.
moe_layer() {
    rec moe_layer mpirun -np 4 --oversubscribe --bind-to none $B/moe_layer --model tiny-moe --layers 2 --ep-group 2,world --skew uniform,2,4 -n 5 -w 1 -c 1
    rec moe_layer-skew "${MPI[@]}" $B/moe_layer --experts 2 --top-k 1 --skew uniform,2 --layers 1 --hidden 1024 --ffn 256 --seq 512 -n 8 -w 1 -c 1 --csv /dev/null
}
# docs/fsdp_step.md: world sharding and hybrid (2 groups of 2), prefetch off and on, validated.
fsdp_step() {
    rec fsdp_step mpirun -np 4 --oversubscribe --bind-to none $B/fsdp_step --model tiny --layers 2 --shard-group world -n 5 -w 1 -c 1
    rec fsdp_step-hybrid mpirun -np 4 --oversubscribe --bind-to none $B/fsdp_step --model tiny --layers 2 --shard-group 2 -n 5 -w 1 -c 1
}
# docs/cp_attention.md: one ring of 2 ranks, overlap off and on, validated; then a long
# sequence, where a block's attention outlasts its exchange.
cp_attention() {
    rec cp_attention "${MPI[@]}" $B/cp_attention --model tiny --layers 2 -n 5 -w 1 -c 1
    rec cp_attention-long "${MPI[@]}" $B/cp_attention --model tiny --layers 1 --seq 2048 -n 3 -w 1
}
hybrid_3d() {
    rec hybrid_3d mpirun -np 4 --oversubscribe --bind-to none $B/hybrid_3d --model tiny --tp 2 --pp 2 --compare-placements -n 3 -w 1
}
plan() {
    rec plan-reproduce $B/plan --reproduce
    rec plan-llama-70b $B/plan --model llama-70b --gpus 256
    rec plan-published tools/dev/plan-published.sh $B/plan
    rec plan-fsdp $B/plan --model llama3-70b --cluster h100-ib400 --gpus 64 --fsdp world --recompute full
}
# run_all.sh --reproduce (default profile, 2 ranks): its duration, the documents'
# figures, then the run's rows predicted from its own calibration file.
reproduce() {
    local t
    t=$(mktemp -d /tmp/parabench-reproduce.XXXXXX)
    rec reproduce bash -c "s=\$(date +%s); ./run_all.sh --reproduce --np 2 --no-install --quiet --out $t/run >/dev/null 2>&1
        echo \"run_all.sh --reproduce --np 2: exit \$?, \$(( \$(date +%s) - s )) s\"
        cat $t/run/repro_write.txt; grep -v '^#' $t/run/reproduce.csv
        echo; cat $t/run/cluster.txt
        $B/plan --fit $t/run --cluster $t/run/cluster.txt --csv $t/fit.csv | grep -v '^note'
        python3 -c \"import csv, statistics, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith('#'))]
print('plan --fit --cluster cluster.txt: median |error| %.1f%% over %d workload rows' % (100 * statistics.median(abs(float(r['rel_error'])) for r in rows), len(rows)))\" $t/fit.csv"
    rm -rf "$t"
}
# docs/run_all.md's "Shapes at scale" and its dry-run sample: computed, nothing runs.
shapes() {
    rec shapes python3 tools/dev/shapes-table.py
    rec dry-run-1024 sh -c './run_all.sh --dry-run --np 1024 --ranks-per-node 8 | sed -n "/^# upper bound/,\$p"'
    rec dry-run-llama-70b sh -c './run_all.sh --dry-run --np 1024 --ranks-per-node 8 --gpus-per-node 8 --gpu h100 --model llama3-70b | sed -n "3,6p;/pp_pipeline:/p;/^# upper bound/,\$p"'
}
# The figures behind acceptance/this-machine.thresholds: the sizes its rules name, 2 ranks.
this_machine() {
    rec this-machine bash -c "${MPI[*]} $B/coll_sweep --coll allreduce,allgather --sizes 8,32K,256K -n 200 -w 20 &&
        ${MPI[*]} $B/p2p_sweep --mode latency,bw --sizes 1,8,1M -n 200 -w 20"
}
# 2 nodes x 2 ranks at 1 Gbit/s (docs/emulated-cluster.md): p2p latency and
# bandwidth within and across the nodes, an all-reduce across them, up/down time.
emulated_cluster() {
    local emu=scripts/emulate-cluster.sh
    if "$emu" status 2>/dev/null | grep -q '^emulated cluster: \(up\|DAMAGED\)'; then
        echo "measure-docs: an emulated cluster is already up; not touching it" >&2; FAILED="$FAILED emulated-cluster"; return
    fi
    rec emulated-cluster bash -c "export OMPI_MCA_mpi_yield_when_idle=1
        t0=\$(date +%s.%N); $emu up --nodes 2 --rate 1gbit || exit 3
        echo \"up: \$(awk -v a=\$t0 -v b=\$(date +%s.%N) 'BEGIN { printf \"%.2f\", b - a }') s\"
        trap '$emu down >/dev/null' EXIT
        for pair in 0,1 0,3; do
            $emu mpirun -np 4 --npernode 2 $B/p2p_sweep --pair \$pair --mode latency,bw --window 8 --sizes 8,4M -n 20 -w 2
        done
        $emu mpirun -np 4 --npernode 2 $B/coll_sweep --sizes 4M,8M -n 5 -w 1
        trap - EXIT; t0=\$(date +%s.%N); $emu down
        echo \"down: \$(awk -v a=\$t0 -v b=\$(date +%s.%N) 'BEGIN { printf \"%.2f\", b - a }') s\""
}

# The beyond-3D rows of a default run_all.sh against plan --fit with the run's own calibration.
beyond_3d_fit() {
    rec beyond-3d-fit tools/dev/beyond-3d-fit.sh
}
# The overlapped rows with Open MPI's waits spinning and yielding (docs/METRICS.md).
overlap_yield() {
    rec overlap-yield tools/dev/overlap-yield.sh
}
# fsdp_step, cp_attention and moe_layer on 4 emulated nodes of 2 (root, network namespaces).
emulated_beyond_3d() {
    rec emulated-beyond-3d tools/dev/emulated-beyond-3d.sh
}

names=${*:-compute dp_allreduce pp_pipeline hybrid_3d fsdp_step cp_attention moe_layer plan this-machine emulated-cluster emulated-beyond-3d beyond-3d-fit overlap-yield shapes reproduce}
for n in $names; do
    case $n in
    compute | dp_allreduce | pp_pipeline | hybrid_3d | fsdp_step | cp_attention | moe_layer | plan | shapes | reproduce) $n ;;
    this-machine) this_machine ;;
    emulated-cluster) emulated_cluster ;;
    emulated-beyond-3d) emulated_beyond_3d ;;
    beyond-3d-fit) beyond_3d_fit ;;
    overlap-yield) overlap_yield ;;
    *) echo "measure-docs: unknown NAME '$n'" >&2; exit 2 ;;
    esac
done
[ -z "$FAILED" ] || { echo "measure-docs: failed:$FAILED" >&2; exit 1; }
