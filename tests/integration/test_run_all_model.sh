#!/usr/bin/env bash
# run_all.sh's model (docs/models.md): --model and --model-file refused with exit 2 naming what
# is wrong; --gpus-per-node only for a dry run; a dry run for 8-GPU nodes prints the model's
# bytes and memory per GPU; and on GPUs (a stand-in nvidia-smi reporting H100s) a step the
# model does not fit is skipped naming why, and the run ends with exit 3 without launching it.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
RA=$ROOT/run_all.sh
[ -x "$BIN/coll_sweep" ] || fail "$BIN/coll_sweep is missing; build it first (make)"

expect_rc 2 "--model unknown" -- env BUILD="$BUILD" "$RA" --dry-run --model gpt-5
expect_in "$TMP/err" "option --model: 'gpt-5' is not accepted; expected one of tiny, tiny-gqa" "--model: the accepted names"
printf 'hidden 4096\nlayers 32\nheads 32\nseq 4096\nmlp relu\n' >"$TMP/bad.model"
expect_rc 2 "--model-file with a bad line" -- env BUILD="$BUILD" "$RA" --dry-run --model-file "$TMP/bad.model"
expect_in "$TMP/err" "bad.model:5" "--model-file: the bad line as FILE:LINE"
expect_rc 2 "--gpus-per-node without --dry-run" -- env BUILD="$BUILD" "$RA" --gpus-per-node 8 --no-install
expect_in "$TMP/err" "only with --dry-run" "--gpus-per-node: says when it applies"

# A model file reaches every workload's launch line; with --model too it is refused.
printf 'name my-1b\nhidden 2048\nlayers 16\nheads 16\nkv_heads 4\nffn 5632\nmlp swiglu\nseq 2048\nvocab 32000\n' >"$TMP/my.model"
expect_rc 2 "--model and --model-file together" -- env BUILD="$BUILD" "$RA" --dry-run --model tiny --model-file "$TMP/my.model"
expect_in "$TMP/err" "--model and --model-file together: choose one" "--model with --model-file: says to choose"
expect_rc 0 "--dry-run --model-file" -- env BUILD="$BUILD" "$RA" --dry-run --np 16 --ranks-per-node 8 --gpus-per-node 8 \
    --model-file "$TMP/my.model"
expect_in "$TMP/out" "model my-1b: h 2048, 16 layers, 16 heads, 4 KV heads, swiglu MLP of 5632" "dry run: the file's model"
# every shaped workload (suite/shapes.py's roles but the intra-node sweep) runs the model, but
# moe_layer, which runs an MoE preset when the file's model has no experts
workloads=$(cd "$TESTS_DIR/../.." && python3 -c 'from suite import shapes; print(len(set(shapes.ROLES) - {shapes.INTRA, shapes.EP}))')
moe=$(cd "$TESTS_DIR/../.." && python3 -c 'from suite import shapes; print(shapes.MOE_MODEL_GPU)')
grep -q -- "moe_layer --compute-dtype bfloat16 --grad-dtype bfloat16 --model $moe " "$TMP/out" \
    && pass "dry run: moe_layer runs $moe in bf16 beside a dense model file" \
    || fail "dry run: moe_layer's line: $(grep -o 'moe_layer .*' "$TMP/out" | head -1)"
[ "$(grep -c -- "--model-file $TMP/my.model --compute-dtype bfloat16 --grad-dtype bfloat16" "$TMP/out")" = "$workloads" ] \
    && pass "dry run: the $workloads workloads run the file's model in bf16" ||
    fail "dry run: $(grep -c -- --model-file "$TMP/out") workload lines name the file, expected $workloads"

# The dry run of a 70B on 8 nodes of 8 H100s: what a GPU would send and hold.
expect_rc 0 "--dry-run llama-70b, 64 GPUs" -- env BUILD="$BUILD" "$RA" --dry-run --np 64 --ranks-per-node 8 \
    --gpus-per-node 8 --gpu h100 --model llama-70b
expect_in "$TMP/out" "(H100, 80 GiB each)" "dry run: the GPU it plans for"
expect_in "$TMP/out" "precision bf16 GEMMs and gradients; job TP 8 x PP 8 x DP 1" "dry run: precision and job"
expect_in "$TMP/out" "bytes: TP call 67108864 (64.0 MiB, b*s*h*2); gradients a rank 2155479040 (2.01 GiB, params/(t*p)*2); PP message 67108864" \
    "dry run: the bytes a 70B sends"
expect_in "$TMP/out" "memory a GPU of 79.65 GiB: dp_allreduce" "dry run: memory per GPU, per step"
expect_in "$TMP/out" "-e 8G" "dry run: collective sweeps to 8 GiB on GPUs"
expect_in "$TMP/out" "compute_probe --engine cublas -d bfloat16 --sizes 4096,8192,16384" "dry run: the bf16 GEMM probe"

# On "GPUs" too small for the model: skipped with the reason, exit 3, nothing launched for it.
# run_all counts GPUs only for a build that links NCCL: a CPU-only build (CUDA=0, as `make
# sanitize` and tests/mutate.py make) has none to stand in for. Everything above has run and must hold.
if ! grep -q -- '-DPB_HAVE_CUDA=1' "$BIN/../.flags" 2>/dev/null; then
    [ "$FAILS" -eq 0 ] || finish
    skip_test "$BIN is a CPU-only build (CUDA=0): run_all sees no GPU to stand in for (make CUDA=1)"
fi
mkdir -p "$TMP/gpu"
cat >"$TMP/gpu/nvidia-smi" <<'SMI'
#!/bin/sh
case "$*" in
*-L*) echo "GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-0)"; echo "GPU 1: NVIDIA H100 80GB HBM3 (UUID: GPU-1)" ;;
*memory.total*) echo "81559, NVIDIA H100 80GB HBM3"; echo "81559, NVIDIA H100 80GB HBM3" ;;
esac
SMI
chmod +x "$TMP/gpu/nvidia-smi"
expect_rc 3 "a 70B's gradients on 2 GPUs" -- env BUILD="$BUILD" PATH="$TMP/gpu:$PATH" "$RA" --quick --no-install \
    --model llama3-70b --steps dp_allreduce --out "$TMP/run"
expect_in "$TMP/err" "dp_allreduce(does not fit the GPU)" "exit 3 names the step that does not fit"
expect_in "$TMP/run/steps.tsv" "does not fit: the gradient buffer and 1 layer with full recomputation needs" "steps.tsv: the skip says what does not fit"
[ ! -e "$TMP/run/logs/dp_allreduce.err" ] && pass "the step was never launched" || fail "dp_allreduce was launched"
python3 -c "import json, sys; m = json.load(open(sys.argv[1]))['model']; assert (m['name'], m['precision']) == ('llama3-70b', 'bf16'), m" \
    "$TMP/run/meta.json" && pass "meta.json: the model and bf16" || fail "meta.json: model record"
finish
