#!/usr/bin/env bash
# A model file with experts (docs/models.md): run_all's moe_layer step runs the file's own MoE
# model, by the file (a binary reads it; its name is no preset); the binary's rows name the file's
# model and its experts; top_k beyond the experts, or one without the other, is refused by run_all
# and by the binaries alike (exit 2, naming --model-file and what is accepted).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
RA=$ROOT/run_all.sh
[ -x "$BIN/moe_layer" ] || fail "$BIN/moe_layer is missing; build it first (make)"

printf 'name my-moe\nhidden 2048\nlayers 16\nheads 16\nkv_heads 4\nffn 1408\nmlp swiglu\nseq 2048\nexperts 16\ntop_k 2\n' >"$TMP/moe.model"
expect_rc 0 "--dry-run --model-file with experts" -- env BUILD="$BUILD" "$RA" --dry-run --np 16 --ranks-per-node 8 \
    --gpus-per-node 8 --model-file "$TMP/moe.model"
grep -q -- "moe_layer --compute-dtype bfloat16 --grad-dtype bfloat16 --model-file $TMP/moe.model --ep-group node,world " "$TMP/out" \
    && pass "dry run: moe_layer runs the file's MoE model (16 experts, EP in a node and across both)" \
    || fail "dry run: moe_layer's line: $(grep -o 'moe_layer .*' "$TMP/out" | head -1)"
expect_in "$TMP/out" "my-moe (16 experts, top 2): EP inside a node (8 ranks, 2 experts each)" "dry run: the file's experts and top_k"
printf 'name small-moe\nhidden 128\nlayers 1\nheads 4\nkv_heads 2\nffn 256\nmlp swiglu\nseq 32\nexperts 4\ntop_k 2\n' >"$TMP/small-moe.model"
expect_rc 0 "moe_layer --model-file with experts, 2 ranks, -c 1" -- mpi 2 "$BIN/moe_layer" --model-file "$TMP/small-moe.model" \
    -n 1 -w 0 -c 1 --csv "$TMP/moe.csv" --json "$TMP/moe.json"
python3 "$TESTS_DIR/results.py" "$TMP/moe.csv" "$TMP/moe.json" --columns model,experts,top_k,hidden,wrong --zero-wrong --complete \
    --expect model=small-moe --expect experts=4 --expect top_k=2 --expect hidden=128 &&
    pass "its rows: the file's model by name, its 4 experts, top 2, nothing wrong" || fail "moe_layer's rows with --model-file"
for bad in "experts 4:top_k 5:top_k 5 is more than the 4 experts; expected 1 <= top_k <= experts" \
    "experts 4::experts and top_k go together (an MoE model sets both, a dense one neither)"; do
    IFS=: read -r e k msg <<<"$bad"
    printf 'hidden 128\nlayers 1\nheads 4\nseq 32\n%s\n%s\n' "$e" "$k" >"$TMP/bad-moe.model"
    expect_rc 2 "run_all.sh --model-file: $e${k:+, $k}" -- env BUILD="$BUILD" "$RA" --dry-run --model-file "$TMP/bad-moe.model"
    expect_in "$TMP/err" "option --model-file: $TMP/bad-moe.model: $msg" "run_all.sh says why"
    expect_rc 2 "moe_layer --model-file: $e${k:+, $k}" -- mpi 2 "$BIN/moe_layer" --model-file "$TMP/bad-moe.model"
    expect_in "$TMP/err" "option --model-file: $TMP/bad-moe.model: $msg" "the binary says the same"
done
# Each key's range is the binaries': run_all refuses up front what they would refuse.
printf 'hidden 128\nlayers 1\nheads 4\nseq 32\nexperts 70000\ntop_k 2\n' >"$TMP/big-moe.model"
expect_rc 2 "run_all.sh --model-file: experts 70000" -- env BUILD="$BUILD" "$RA" --dry-run --model-file "$TMP/big-moe.model"
expect_in "$TMP/err" "experts '70000' is out of range; expected an integer in [0, 65536]" "run_all.sh names the key and its range"
expect_rc 2 "moe_layer --model-file: experts 70000" -- mpi 2 "$BIN/moe_layer" --model-file "$TMP/big-moe.model"
expect_in "$TMP/err" "'70000' is out of range; expected an integer in [0, 65536]" "the binary gives the same range"
finish
