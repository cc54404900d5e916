#!/usr/bin/env bash
# plan-dp-node-aware.sh [PLAN_BINARY]: what the node-aware DP all-reduce changes
# on N21's 1.7B run (Narayanan et al. 2021, table 1: t = 1, p = 1, 32 A100s on
# 4 nodes, 137 TFLOP/s per GPU): the planner's step with the DP group's 8
# members a node, and with --gpus-per-node 1 (every GPU a node of its own: the
# flat ring over the inter-node links), each against the published time
# (equation 3's FLOPs over 32 x 137 TFLOP/s). Exit 3 when plan is not built.
set -u
PLAN=${1:-"$(dirname "$0")/../../build/bin/plan"}
[ -x "$PLAN" ] || { echo "plan-dp-node-aware: $PLAN is not built (make)" >&2; exit 3; }
ARGS=(--seq 2048 --vocab 51200 --cluster a100 --hidden 2304 --layers 24 --heads 24 --gpus 32 --tp 1 --pp 1 --dp 32
      --global-batch 512 --micro-batch 1 --recompute full --sp off)
PUB=$(awk 'BEGIN { B = 512; s = 2048; l = 24; h = 2304; V = 51200
    printf "%.4f", 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) / (32 * 137e12) }')
echo "published: $PUB s a step (equation 3 over 32 GPUs x 137 TFLOP/s)"
for how in node-aware "flat ring"; do
    extra=()
    [ "$how" = "flat ring" ] && extra=(--gpus-per-node 1)
    out=$("$PLAN" "${ARGS[@]}" "${extra[@]}") || exit 1
    echo "## $how"
    grep -E '^configuration|step =' <<<"$out"
    awk -v pub="$PUB" -v how="$how" '/^  step = / { printf "%s: %s s, %+.1f%% against the published time\n", how, $(NF - 1),
        100 * ($(NF - 1) / pub - 1) }' <<<"$out"
done
