#!/usr/bin/env bash
# plan-published.sh [PLAN_BINARY]: the planner against published end-to-end
# training runs on A100 clusters. For each run: its configuration, the
# published time per iteration, the planner's prediction and the error.
#
# Sources (docs/plan.md cites them in full):
#   K22 Korthikanti et al., "Reducing Activation Recomputation in Large
#       Transformer Models", MLSys 2023 (arXiv:2205.05198): table 3 (the
#       configurations), table 5 (iteration times), section 6.3 (the 530B run
#       with 8-way data parallelism). Selene, DGX A100 80 GB, 8 x HDR 200 Gb/s.
#       The planner's GEMM efficiency and element-wise traffic were set from
#       these rows (cluster.h, model.h): they are the calibration set.
#   N21 Narayanan et al., "Efficient Large-Scale Language Model Training on
#       GPU Clusters Using Megatron-LM", SC21 (arXiv:2104.04473): table 1,
#       achieved TFLOP/s per GPU with full recomputation; the time per
#       iteration is F / (n X) with F from the paper's equation 3. Held out:
#       nothing in the planner was set from these rows. The micro-batch size
#       is not in table 1; the rows assume 1.
#
# Every row: sequence 2048, vocabulary 51200, bf16, cluster preset a100.
# Exit: 0 when every calibration row (K22) is within the tolerance (TOL,
# default 10 %) and the planner accepted every row; 1 otherwise; 3 when the
# plan binary is missing. Held-out rows outside the tolerance are counted, and
# docs/plan.md explains them.
set -u
PLAN=${1:-"$(dirname "$0")/../../build/bin/plan"}
TOL=${TOL:-10}
[ -x "$PLAN" ] || { echo "plan-published: $PLAN is not built (make)" >&2; exit 3; }

# predict ARGS...: the planner's step time in seconds for one configuration.
predict() {
    "$PLAN" --seq 2048 --vocab 51200 --cluster a100 "$@" |
        awk '/^  step = / { print $NF == "s" ? $(NF - 1) : $NF; found = 1 } END { exit !found }'
}

FAILED=0
declare -A ROWS=() WITHIN=()
# row SOURCE NAME PUBLISHED_S PLAN_ARGS...
row() {
    local src=$1 name=$2 pub=$3; shift 3
    local pred
    pred=$(predict "$@") || { printf '%-4s %-22s planner refused: %s\n' "$src" "$name" "$*"; FAILED=1; return; }
    local err
    err=$(awk -v p="$pred" -v q="$pub" 'BEGIN { printf "%+.1f", 100 * (p / q - 1) }')
    local flag=""
    ROWS[$src]=$((${ROWS[$src]:-0} + 1))
    if awk -v e="$err" -v t="$TOL" 'BEGIN { exit !(e > t || -e > t) }'; then
        flag="  > ${TOL}%"
        [ "$src" = K22 ] && FAILED=1
    else
        WITHIN[$src]=$((${WITHIN[$src]:-0} + 1))
    fi
    printf '%-4s %-22s %9.2f %9.2f %7s%%%s\n' "$src" "$name" "$pub" "$pred" "$err" "$flag"
}
# n21 PARAMS_B HEADS HIDDEN LAYERS T P GPUS BATCH TFLOPS: published time from equation 3.
n21() {
    local pb=$1 a=$2 h=$3 l=$4 t=$5 p=$6 n=$7 b=$8 x=$9
    local pub
    pub=$(awk -v B="$b" -v l="$l" -v h="$h" -v n="$n" -v X="$x" 'BEGIN {
        s = 2048; V = 51200
        F = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h))
        printf "%.3f", F / (n * X * 1e12) }')
    row N21 "${pb}B t=$t p=$p n=$n" "$pub" --hidden "$h" --layers "$l" --heads "$a" --gpus "$n" --tp "$t" --pp "$p" \
        --dp $((n / t / p)) --global-batch "$b" --micro-batch 1 --recompute full --sp off
}
# k22 NAME HEADS HIDDEN LAYERS T P D BATCH MICRO V SELECTIVE_S FULL_S
k22() {
    local name=$1 a=$2 h=$3 l=$4 t=$5 p=$6 d=$7 b=$8 mb=$9 v=${10} sel=${11} full=${12}
    local shape=(--hidden "$h" --layers "$l" --heads "$a" --gpus $((t * p * d)) --tp "$t" --pp "$p" --dp "$d"
                 --global-batch "$b" --micro-batch "$mb")
    local sched=()
    [ "$v" -gt 1 ] && sched=(--schedule interleaved --interleave "$v")
    row K22 "$name selective+SP" "$sel" "${shape[@]}" "${sched[@]}" --recompute selective --sp on
    [ "$full" = - ] || row K22 "$name full" "$full" "${shape[@]}" "${sched[@]}" --recompute full --sp off
}

printf '%-4s %-22s %9s %9s %8s\n' src run "pub s" "plan s" error
#   name   heads hidden layers t p  d  batch micro v  selective full   (K22 tables 3 and 5)
k22 22B    64  6144  48  8 1  1 4    4 1  1.10  1.42
k22 175B   96  12288 96  8 8  1 64   1 3  13.75 18.13
k22 530B   128 20480 105 8 35 1 280  1 3  37.83 49.05
k22 1T     160 25600 128 8 64 1 512  1 1  71.49 94.42
k22 530B-d8 128 20480 105 8 35 8 2240 1 3 39.15 -
#   params heads hidden layers t p  GPUs batch TFLOP/s  (N21 table 1)
n21 1.7    24  2304  24  1 1  32   512  137
n21 3.6    32  3072  30  2 1  64   512  138
n21 7.5    32  4096  36  4 1  128  512  142
n21 18.4   48  6144  40  8 1  256  1024 135
n21 39.1   64  8192  48  8 2  512  1536 138
n21 76.1   80  10240 60  8 4  1024 1792 140
n21 145.6  96  12288 80  8 8  1536 2304 148
n21 310.1  128 16384 96  8 16 1920 2160 155
n21 529.6  128 20480 105 8 35 2520 2520 163
n21 1008.0 160 25600 128 8 64 3072 3072 163
echo "within ${TOL}%: calibration rows (K22) ${WITHIN[K22]:-0} of ${ROWS[K22]:-0}, held-out rows (N21) ${WITHIN[N21]:-0} of ${ROWS[N21]:-0}"
exit "$FAILED"
