#!/usr/bin/env bash
# plan: --reproduce passes; the enumerator ranks and rejects; --fit recovers
# alpha and B (within 5%) from synthetic sweeps generated with known values and
# predicts synthetic dp/tp/pp/3D/FSDP/CP/MoE rows; bad inputs exit 2, missing data exits 3.
# No MPI needed.
source "$(dirname "$0")/lib.sh"
PLAN=$BIN/plan
[ -x "$PLAN" ] || { echo "FAIL: $PLAN not built" >&2; exit 1; }

# ---- --reproduce ----
expect_rc 0 "plan --reproduce" -- "$PLAN" --reproduce
cp "$TMP/out" "$TMP/repro"
expect_in "$TMP/repro" "every figure the model should reproduce matches" "reproduce: verdict line"
expect_in "$TMP/repro" "2*7/8*14 = 24.50 GB" "reproduce: exact ring volume at n=8"
expect_in "$TMP/repro" "exact ring 2(n-1)/n*S/B = 0.490 s" "reproduce: exact ring time"
expect_in "$TMP/repro" "with the exact ring volume it is 9.8% (0.49 s / 5 s)" "reproduce: DP overhead with the exact ring time"
expect_in "$TMP/repro" "82.05%" "reproduce: pipeline efficiency 32/39"
expect_in "$TMP/repro" "8.75e9 per stage" "reproduce: 70B over 8 stages"
expect_in "$TMP/repro" "8.33 ms < 10 ms" "reproduce: 5 GB over NVLink"
# 7e9 params x 16 B (mixed-precision Adam) = 112 GB; bf16 weights 2 B = 14 GB; with grads 4 B = 28 GB
expect_in "$TMP/repro" "112 GB > 80 GB (bf16 weights alone 14 GB; weights+grads 28 GB)" "reproduce: the 7B fit's bytes"
expect_in "$TMP/repro" "(x16 B = 140 GB of weights+grads+Adam per stage, 17.5 GB per GPU at t=8)" \
    "reproduce: 8.75e9 params x 16 B per stage, over 8 GPUs"
expect_in "$TMP/repro" "assumes" "reproduce: prints assumptions"
if grep -q "DIFFERS (model should" "$TMP/repro"; then fail "reproduce: a must-match figure differs"; else pass "reproduce: no must-match figure differs"; fi

# ---- enumeration ----
expect_rc 0 "plan llama-70b on 256 A100" -- "$PLAN" --model llama-70b --cluster a100 --gpus 256 --top 5 --json "$TMP/e70.json"
cp "$TMP/out" "$TMP/e70"
# --top 1 still shows the documents' own configuration (t 8, p 8, d 4), marked, at its rank below the top
"$PLAN" --model llama-70b --cluster a100 --gpus 256 --top 1 >"$TMP/top1" || fail "plan --top 1: exit $?"
[ "$(grep -cE '^[ *] +([0-9]+ +){5}[tdp]-' "$TMP/top1")" = 2 ] && grep -qE '^\* +[0-9]+ +8 +8 +4 ' "$TMP/top1" &&
    pass "--top 1: the top row and the documented 8/8/4, marked" || { fail "--top 1: rows"; cat "$TMP/top1" >&2; }
# the presets' nominal sizes, as their papers give them, reach the job exactly
python3 -c "import json, sys; j = json.load(open(sys.argv[1]))['job']; assert (j['model'], j['params']) == ('llama-70b', 70e9), j" \
    "$TMP/e70.json" && pass "70B: the job's params are the preset's 70e9" || fail "70B: the job's params differ from 70e9"
# LLaMA's batch is 4M tokens: 4 * 2^20 / 4096 = 1024 sequences of the 70B preset's length
python3 -c "import json, sys; j = json.load(open(sys.argv[1]))['job']; assert j['global_batch'] == 1024, j" "$TMP/e70.json" \
    && pass "70B: the default global batch is 4M tokens, 1024 sequences" || fail "70B: the default global batch is not 1024"
# every configuration's step is its parts: compute, TP, PP, bubble and DP (the slowest stage's, in seconds)
python3 - "$TMP/e70.json" <<'PY' && pass "70B JSON: step_s = compute + tp + pp + bubble + dp for every configuration" || fail "70B JSON: a step is not the sum of its parts"
import json, sys
doc = json.load(open(sys.argv[1]))
confs = [c for c in doc["configurations"] if "rejected" not in c]
assert len(confs) >= 5, confs
for c in confs:
    assert c["micro_batches"] * c["d"] == doc["job"]["global_batch"], c  # m = global batch / (d x b), b = 1 for llama-70b
    parts = c["compute_s"] + c["tp_comm_s"] + c["pp_comm_s"] + c["bubble_s"] + c["dp_comm_s"]
    assert abs(parts - c["step_s"]) <= 1e-9 * c["step_s"], c
    assert min(c["compute_s"], c["tp_comm_s"], c["pp_comm_s"], c["bubble_s"], c["dp_comm_s"]) >= 0, c
    assert (c["tp_comm_s"] > 0) == (c["t"] > 1) and (c["pp_comm_s"] > 0) == (c["p"] > 1), c
PY
# every configuration's links follow from its placement: ranks t-major, then d and p in its order,
# nodes of 8 consecutive GPUs; an axis is intra when its group of n ranks `stride` apart fits a node
expect_rc 0 "plan llama-7b on 32 A100, top 40, both orders" -- "$PLAN" --model llama-7b --cluster a100 --gpus 32 --top 40 \
    --json "$TMP/e7.json"
python3 - "$TMP/e7.json" <<'PY' && pass "7B JSON: link_t, link_p, link_d follow from t, p, d and the order" || fail "7B JSON: a link class does not follow from the placement"
import json, sys
confs = [c for c in json.load(open(sys.argv[1]))["configurations"] if "rejected" not in c]
def axis(stride, n):
    return "intra" if n <= 1 or stride * n <= 8 else "inter"
seen = set()
for c in confs:
    t, p, d = c["t"], c["p"], c["d"]
    stride_d, stride_p = (t, t * d) if c["order"] == "t-d-p" else (t * p, t)
    assert (c["link_t"], c["link_p"], c["link_d"]) == (axis(1, t), axis(stride_p, p), axis(stride_d, d)), c
    seen.add((c["order"], c["link_p"], c["link_d"]))
assert {o for o, _, _ in seen} == {"t-d-p", "t-p-d"} and {l for _, l, _ in seen} == {"intra", "inter"}, seen
PY
# TP wider than a node crosses the network: its link is inter, and the configuration is refused
expect_rc 1 "t=16 on nodes of 8 GPUs" -- "$PLAN" --model llama-7b --cluster a100 --gpus 32 --tp 16 --pp 1 --dp 2
expect_in "$TMP/out" "links t inter, p intra, d inter" "t=16 on nodes of 8 GPUs: TP's link is inter"
expect_in "$TMP/out" "REJECTED: t=16 larger than a node (8 GPUs)" "t=16 on nodes of 8 GPUs: rejected, with why"
# no preset: the default global batch is 4M tokens of sequences, and at least one sequence
expect_rc 0 "a sequence longer than 4M tokens" -- "$PLAN" --hidden 64 --layers 2 --heads 1 --seq 8388608 --vocab 10 \
    --cluster h100 --gpus 1 --json "$TMP/long.json"
python3 -c "import json, sys; j = json.load(open(sys.argv[1]))['job']; assert j['global_batch'] == 1, j" "$TMP/long.json" \
    && pass "global batch of a 8M-token sequence: 1" || fail "global batch of a 8M-token sequence is not 1"
if awk '{sub(/^\*/, "")} $2==8 && $3==8 && $4==4 {f=1} END {exit !f}' "$TMP/e70"; then pass "70B: 8x8x4 in the top 5"; else fail "70B: 8x8x4 not in the top 5"; sed 's/^/  | /' "$TMP/e70" | head -20 >&2; fi
expect_in "$TMP/e70" "do not fit in GPU memory" "70B: rejects what does not fit"
expect_in "$TMP/e70" "have t larger than a node" "70B: rejects t larger than a node"
expect_in "$TMP/e70" "the seed documents' configuration (marked *): (8,8,4) ranks" "70B: explains the documented configuration"
expect_rc 0 "plan gpt-175b on 512 A100" -- "$PLAN" --model gpt-175b --cluster a100 --gpus 512 --top 5
if awk '{sub(/^\*/, "")} $2==8 && $3==16 && $4==4 {f=1} END {exit !f}' "$TMP/out"; then pass "175B: 8x16x4 in the top 5"; else fail "175B: 8x16x4 not in the top 5"; fi
expect_rc 0 "plan full rejection list" -- "$PLAN" --model llama-70b --cluster h100 --gpus 64
expect_in "$TMP/out" "t=1   p=1   d=64   does not fit:" "full list: t=1 p=1 d=64 does not fit"
expect_rc 1 "nothing fits exits 1" -- "$PLAN" --model llama-70b --cluster a100 --gpus 8
expect_in "$TMP/err" "no configuration is valid and fits" "nothing fits: message"
expect_rc 0 "one configuration" -- "$PLAN" --model gpt-1.3b --cluster a100-eth100 --gpus 16 --tp 2 --pp 2 --dp 4
expect_in "$TMP/out" "memory per GPU: weights" "one configuration: memory breakdown"
expect_rc 0 "custom model and cluster overrides, JSON" -- "$PLAN" --hidden 1024 --layers 8 --heads 16 --seq 512 \
    --vocab 1000 --global-batch 64 --cluster h100 --inter-bw 3 --inter-lat 20 --tflops 50 --gpus 16 --json "$TMP/p.json"
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['configurations'][0]['step_s']>0" "$TMP/p.json"; then
    pass "JSON output parses"; else fail "JSON output does not parse"; fi
# --vocab overrides a preset's vocabulary: the model line shows it, and the parameters counted
# from the shape count it, twice for LLaMA's untied embeddings (llama-7b: h 4096, L 32, SwiGLU 11008).
expect_rc 0 "--vocab on a preset" -- "$PLAN" --model llama-7b --vocab 1000 --gpus 8
want=$(python3 -c 'print("%.2fe9" % ((32 * (4 * 4096**2 + 3 * 4096 * 11008) + 2 * 1000 * 4096) / 1e9))')
expect_in "$TMP/out" "V=1000 untied b=1;" "--vocab 1000: the model line's V"
expect_in "$TMP/out" "counted from the shape: $want)" "--vocab 1000: the shape's $want params"
# A model file: its shape, and a line plan cannot read named with FILE:LINE (exit 2).
printf 'name my-13b\nhidden = 5120\nlayers 40\nheads 40\nkv_heads 8\nffn 13824\nmlp swiglu\nseq 4096\nvocab 32000\ntied 0\n' >"$TMP/my.model"
expect_rc 0 "--model-file" -- "$PLAN" --model-file "$TMP/my.model" --cluster h100 --gpus 64
expect_in "$TMP/out" "my-13b: h=5120 L=40 heads=40 kv_heads=8 ffn=13824 (swiglu) s=4096 V=32000 untied" "--model-file: its shape"
printf 'hidden 5120\nlayers 40\nheads 40\nseq 4096\nkv_heads 7\n' >"$TMP/bad.model"
expect_rc 2 "--model-file: KV heads that do not divide the heads" -- "$PLAN" --model-file "$TMP/bad.model" --gpus 8
expect_in "$TMP/err" "7 KV heads do not divide the 40 query heads" "--model-file: kv_heads refused with its reason"
printf 'hidden 5120\nlayers 40\nheads 40\nseq 4096\nmlp relu\n' >"$TMP/bad.model"
expect_rc 2 "--model-file: an unknown MLP" -- "$PLAN" --model-file "$TMP/bad.model" --gpus 8
expect_in "$TMP/err" "bad.model:5" "--model-file: the bad line named FILE:LINE"
printf 'hidden 5120\nlayers 40\nseq 4096\n' >"$TMP/bad.model"
expect_rc 2 "--model-file: no heads" -- "$PLAN" --model-file "$TMP/bad.model" --gpus 8
expect_in "$TMP/err" "key 'heads' is required" "--model-file: a missing key named"

# ---- bad inputs: exit 2 with a message naming the option ----
expect_rc 2 "unknown cluster" -- "$PLAN" --model llama-70b --cluster v100 --gpus 8
expect_in "$TMP/err" "option --cluster: unknown cluster 'v100'" "unknown cluster: message"
expect_rc 2 "unknown model" -- "$PLAN" --model gpt-5 --gpus 8
expect_in "$TMP/err" "option --model" "unknown model: message"
expect_rc 2 "zero GPUs" -- "$PLAN" --model llama-7b --gpus 0
expect_in "$TMP/err" "option --gpus: '0' is out of range" "zero GPUs: message"
expect_rc 2 "non-numeric GPUs" -- "$PLAN" --model llama-7b --gpus abc
expect_in "$TMP/err" "option --gpus: 'abc' is not an integer" "non-numeric: message"
expect_rc 2 "non-numeric bandwidth" -- "$PLAN" --model llama-7b --gpus 8 --inter-bw fast
expect_rc 2 "missing --gpus" -- "$PLAN" --model llama-7b
expect_rc 2 "partial --tp/--pp/--dp" -- "$PLAN" --model llama-7b --gpus 8 --tp 8
expect_rc 2 "tp*pp*dp != gpus" -- "$PLAN" --model llama-7b --gpus 8 --tp 2 --pp 2 --dp 4
expect_rc 2 "bad --schedule" -- "$PLAN" --model llama-7b --gpus 8 --schedule zigzag
expect_rc 2 "no mode" -- "$PLAN"
expect_rc 2 "two modes" -- "$PLAN" --reproduce --fit /tmp
expect_rc 2 "unknown option" -- "$PLAN" --frobnicate
expect_rc 2 "--fit on a missing directory" -- "$PLAN" --fit "$TMP/nope"
mark_run "$TMP/empty"
expect_rc 3 "--fit with no sweep data" -- "$PLAN" --fit "$TMP/empty"
expect_in "$TMP/err" "no sweep data to fit" "--fit empty: message"

# ---- --fsdp: the job as sharded data parallelism ----
# llama3-8b over 64 H100s, one shard group: the step and its parts follow from the printed per-layer terms
# (prefetch off: m L (2g + f + b + s)), the sharded state is 16 B x params / 64, exposed = step - compute.
expect_rc 0 "--fsdp world: 8B on 64 GPUs fits" -- "$PLAN" --model llama3-8b --cluster h100-ib400 --gpus 64 --fsdp world --global-batch 512
if python3 - "$TMP/out" <<'PY'
import re, sys
t = open(sys.argv[1]).read()
m = int(re.search(r"(\d+) micro-batches a GPU a step", t).group(1))
f, b, g, s = (float(x) for x in re.search(r"fwd ([0-9.]+) ms, bwd ([0-9.]+) ms, all-gather of [0-9.]+ MB ([0-9.]+) ms, "
                                           r"reduce-scatter ([0-9.]+) ms", t).groups())
off, on, comp, exp = (float(x) for x in re.search(r"prefetch off ([0-9.e+]+) s, prefetch on ([0-9.e+]+) s; compute "
                                                  r"([0-9.e+]+) s; exposed with prefetch ([0-9.e+]+) s", t).groups())
L = 32
assert m == 512 // 64, m
assert abs(off / (m * L * (2 * g + f + b + s) / 1e3) - 1) < 2e-3, (off, m, L, f, b, g, s)
assert abs(comp / (m * L * (f + b) / 1e3) - 1) < 2e-3, comp
assert comp <= on < off, (comp, on, off)  # prefetch hides some, never more than all
assert abs(exp - (on - comp)) < 2e-3 * on, exp
sharded = float(re.search(r"sharded weights, grads and optimizer ([0-9.]+)", t).group(1))
assert abs(sharded - 16 * 8.0e9 / 64 / 1e9) < 0.01, sharded
assert "shard group of 64 (inter)" in t and "replicas" not in t, t
PY
then pass "--fsdp world: step, compute, exposed and sharded memory follow from the printed terms"
else fail "--fsdp world: the printed terms do not add up"; sed 's/^/  | /' "$TMP/out" >&2; fi
# A node a shard group: 8 replicas on the inter-node link; the 70B does not fit 80 GB that way: exit 1, saying why.
expect_rc 1 "--fsdp node: 70B sharded 8 ways does not fit" -- "$PLAN" --model llama3-70b --cluster h100-ib400 --gpus 64 --fsdp node
expect_in "$TMP/out" "shard group of 8 (intra), 8 replicas (inter; hybrid sharding)" "--fsdp node: a node a shard group"
expect_in "$TMP/err" "FSDP on 64 GPUs: does not fit" "--fsdp: what does not fit is said"
expect_rc 0 "--fsdp world with full recomputation: 70B fits 64 GPUs" -- \
    "$PLAN" --model llama3-70b --cluster h100-ib400 --gpus 64 --fsdp world --recompute full
expect_rc 2 "--fsdp with --tp" -- "$PLAN" --model llama3-8b --gpus 8 --fsdp world --tp 8 --pp 1 --dp 1
expect_in "$TMP/err" "option --fsdp: plans the job as sharded data parallelism" "--fsdp with a grid: refused, naming --fsdp"
expect_rc 2 "--fsdp rack" -- "$PLAN" --model llama3-8b --gpus 8 --fsdp rack
expect_in "$TMP/err" "--fsdp" "--fsdp rack: names the option"

# ---- --fit on synthetic data from known alpha and B ----
# intra: a = 0.5 us, B = 8 GB/s; inter: a = 12 us, B = 0.6 GB/s; +-2% noise.
R=$TMP/run; mark_run "$R"
awk -v seed=42 '
function nz() { return 1 + 0.04 * (rand() - 0.5) }
BEGIN {
    srand(seed); a["intra"] = 0.5e-6; B["intra"] = 8e9; a["inter"] = 12e-6; B["inter"] = 0.6e9
    f = "'"$R"'/p2p_sweep.csv"; g = "'"$R"'/coll_sweep_allreduce.csv"
    print "# p2p_sweep synthetic" > f
    print "link_class,mode,bytes,rank_a,rank_b,host_a,host_b,iters,window,time_us,time_us_min,time_us_max,time_us_median,time_us_p99,bw_GBps" > f
    print "# coll_sweep synthetic" > g
    print "collective,bytes,count,dtype,redop,root,nranks,nnodes,link_class,iters,time_us,time_us_min,time_us_max,time_us_median,time_us_p99,time_us_rankmax,algbw_GBps,busbw_GBps,wrong" > g
    for (k in a) for (S = 8; S <= 67108864; S *= 4) {
        t = (a[k] + S / B[k]) * 1e6 * nz()
        printf "%s,latency,%d,0,1,h0,h1,100,1,%.4f,%.4f,%.4f,%.4f,%.4f,\n", k, S, t, t, t, t, t > f
        if (S >= 1048576) printf "%s,bw,%d,0,1,h0,h1,100,64,,,,,,%.5f\n", k, S, B[k] / 1e9 * nz() > f
        for (n = 2; n <= 8; n *= 2) {
            tc = (2 * (n - 1) * a[k] + 2 * (n - 1) / n * S / B[k]) * 1e6 * nz()
            printf "allreduce,%d,%d,float,sum,0,%d,1,%s,20,%.4f,,,,,,,,0\n", S, S / 4, n, k, tc > g
        }
    }
    # A wrong row must be ignored by the fit.
    printf "allreduce,1048576,262144,float,sum,0,8,1,intra,20,999999,,,,,,,,3\n" > g
    d = "'"$R"'/dp_allreduce.csv"; print "nranks,link_class,grad_bytes,compute_us,comm_us,step_us,exposed_us,overhead" > d
    for (n = 2; n <= 8; n *= 2) for (S = 1048576; S <= 67108864; S *= 8) {
        c = (2 * (n - 1) * a["intra"] + 2 * (n - 1) / n * S / B["intra"]) * 1e6
        printf "%d,intra,%d,50000,%.2f,%.2f,%.2f,%.4f\n", n, S, c, (50000 + c) * nz(), c, c / 50000 > d
    }
    tp = "'"$R"'/tp_layer.csv"; print "tp,nranks,link_class,mode,batch,seq,hidden,compute_us,comm_us,step_us,comm_bytes_per_rank,layers,dtype" > tp
    for (t = 2; t <= 4; t *= 2) for (m = 0; m < 2; m++) {
        by = 8 * 4 * 512 * 1024 * (t - 1) / t * 4; c = (8 * (t - 1) * a["intra"] + by / B["intra"]) * 1e6
        printf "%d,%d,intra,%s,4,512,1024,20000,%.2f,%.2f,%d,1,float\n", t, t, m ? "sp" : "allreduce", c, (20000 + c) * nz(), by > tp
    }
    # Rows of 4 layers, every time and byte count per layer (as tp_layer writes them), across the
    # slow link so that communication dominates; the second of each pair has no comm_bytes_per_rank
    # (an older file): its bytes come from the shape, 2-byte bfloat16 elements.
    for (t = 2; t <= 4; t *= 2) for (k = 0; k < 2; k++) {
        by = 8 * 1 * 16 * 64 * (t - 1) / t * (k ? 2 : 4); c = (8 * (t - 1) * a["inter"] + by / B["inter"]) * 1e6
        printf "%d,%d,inter,allreduce,1,16,64,100,%.2f,%.2f,%s,4,%s\n", t, t, c, (100 + c) * nz(), k ? "" : by, k ? "bfloat16" : "float" > tp
    }
    pp = "'"$R"'/pp_pipeline.csv"; print "stages,micro_batches,schedule,link_class,act_bytes,t_fwd_us,t_bwd_us,step_us,efficiency,efficiency_theory" > pp
    for (p = 2; p <= 4; p *= 2) for (m = 4; m <= 16; m *= 4) {
        S = 4194304; c = 2 * (a["inter"] + S / B["inter"]) * 1e6
        st = (m + p - 1) * (2000 + 4000 + c)
        printf "%d,%d,1f1b,inter,%d,2000,4000,%.1f,%.4f,%.4f\n", p, m, S, st * nz(), m * 6000 / st, m / (m + p - 1) > pp
    }
    # 3D: TP intra, PP and DP inter; step = (m+p-1)/m (compute + TP + PP) + DP (docs/plan.md).
    h = "'"$R"'/hybrid_3d.csv"
    print "placement,tp,pp,dp,nranks,micro_batches,layers,tp_link,pp_link,dp_link,step_us,compute_us,tp_bytes,pp_bytes,dp_bytes" > h
    for (p = 2; p <= 4; p *= 2) for (m = 4; m <= 16; m *= 4) {
        t = 2; d = 2; L = 8; tb = 16777216 * m / 4; pb = 1048576 * m; db = 33554432
        ctp = m * (L / p) * 8 * (t - 1) * a["intra"] + tb / B["intra"]
        cpp = 2 * m * (a["inter"] + pb / m / B["inter"])
        cdp = 2 * (d - 1) * a["inter"] + db / B["inter"]
        st = (m + p - 1) / m * (40000 * m + (ctp + cpp) * 1e6) + cdp * 1e6
        printf "tp-inner,%d,%d,%d,%d,%d,%d,intra,inter,inter,%.1f,%d,%d,%d,%d\n", t, p, d, t * p * d, m, L, st * nz(), 40000 * m, tb, pb, db > h
    }
    # t = 1: no TP communication at all, however fast the link (the planner adds none)
    p = 2; d = 2; m = 4; L = 8; pb = 1048576 * m; db = 33554432
    cpp = 2 * m * (a["inter"] + pb / m / B["inter"]); cdp = 2 * (d - 1) * a["inter"] + db / B["inter"]
    st = (m + p - 1) / m * (40000 * m + cpp * 1e6) + cdp * 1e6
    printf "dp-inner,1,%d,%d,%d,%d,%d,intra,inter,inter,%.1f,%d,0,%d,%d\n", p, d, p * d, m, L, st * nz(), 40000 * m, pb, db > h
    # FSDP: a shard group of n (intra), r replicas (the shard all-reduce inter), L layers of S-element
    # shards; a layer forward f = compute/(3L), backward 2f; the step as docs/fsdp_step.md writes it.
    fs = "'"$R"'/fsdp_step.csv"
    print "nranks,shard_group,replicas,link_class,layers,compute_dtype,dtype,prefetch,shard_elems,compute_us,step_us" > fs
    for (n = 2; n <= 4; n *= 2) for (r = 1; r <= 2; r++) for (pf = 0; pf < 2; pf++) {
        L = 4; S = 16777216; comp = 60000; f = comp / (3 * L) * 1e-6; b = 2 * f
        g = (n - 1) * a["intra"] + (n - 1) / n * n * S * 2 / B["intra"]
        s = (n - 1) * a["intra"] + (n - 1) / n * n * S * 4 / B["intra"]
        if (r > 1) s += 2 * (r - 1) * a["inter"] + 2 * (r - 1) / r * S * 4 / B["inter"]
        if (!pf) st = L * (g + f) + L * (g + b + s)
        else st = g + L * (f > g ? f : g) + (b > g ? b : g) + (L - 2) * (b > g + s ? b : g + s) + (b > s ? b : s) + s
        printf "%d,%d,%d,intra,%d,bfloat16,float,%s,%d,%d,%.1f\n", n * r, n, r, L, pf ? "on" : "off", S, comp, st * 1e6 * nz() > fs
    }
    # CP: rings of c across the slow link, L layers of c ring steps; a block forward f = compute/(3.5 L c),
    # backward 2.5 f; K/V moves at steps 0..c-2, the accumulators at 1..c-1, then home once.
    cf = "'"$R"'/cp_attention.csv"
    print "nranks,cp,link_class,layers,overlap,compute_us,step_us,transfer_bytes" > cf
    for (c = 2; c <= 4; c *= 2) for (ov = 0; ov < 2; ov++) {
        L = 2; X = 1048576; comp = 400000; f = comp / (3.5 * L * c) * 1e-6; b = 2.5 * f; x = a["inter"] + X / B["inter"]
        st = 0
        for (k = 0; k < c; k++) {
            kv = k < c - 1 ? x : 0; dkv = k >= 1 ? x : 0
            st += ov ? (f > kv ? f : kv) + (b > kv + dkv ? b : kv + dkv) : f + kv + b + kv + dkv
        }
        st = L * (st + x)
        printf "%d,%d,inter,%d,%s,%d,%.1f,%d\n", c, c, L, ov ? "on" : "off", comp, st * 1e6 * nz(), X > cf
    }
    # MoE: EP groups of n (intra), L layers of 4 all-to-alls, the heaviest rank moving imbalance x S.
    mf = "'"$R"'/moe_layer.csv"
    print "nranks,ep_group,link_class,layers,skew,imbalance,compute_us,step_us,bytes_per_a2a" > mf
    for (n = 2; n <= 8; n *= 2) for (sk = 1; sk <= 2; sk++) {
        L = 2; S = 8388608; comp = 30000; F = sk == 1 ? 1 : 1.6
        st = comp + 4 * L * ((n - 1) * a["intra"] + (n - 1) / n * F * S / B["intra"]) * 1e6
        printf "%d,%d,intra,%d,%d,%.2f,%d,%.1f,%d\n", n, n, L, sk, F, comp, st * nz(), S > mf
    }
}'
expect_rc 0 "--fit synthetic run" -- "$PLAN" --fit "$R" --csv "$TMP/fit.csv"
cp "$TMP/out" "$TMP/fit"
# check_fit CLASS SOURCE ALPHA_US B_GBPS: the fitted row is within 5% of the truth.
check_fit() {
    if awk -v c="$1" -v s="$2" -v a="$3" -v b="$4" '
        $1 == c && $2 == s { f = 1; ea = ($5 - a) / a; eb = ($6 - b) / b
            if (ea < 0) ea = -ea; if (eb < 0) eb = -eb; ok = ea <= 0.05 && eb <= 0.05 }
        END { exit !(f && ok) }' "$TMP/fit"; then pass "fit $1/$2 within 5% of a=$3 us, B=$4 GB/s"
    else fail "fit $1/$2 not within 5% of a=$3 us, B=$4 GB/s"; grep -E "^(class|$1)" "$TMP/fit" | sed 's/^/  | /' >&2; fi
}
check_fit intra p2p 0.5 8
check_fit inter p2p 12 0.6
check_fit intra coll 0.5 8
check_fit inter coll 12 0.6
expect_in "$TMP/fit" "coll_sweep_allreduce.csv: 73 rows, 1 not used for the fit" "fit: skips the wrong row"
for b in dp_allreduce tp_layer pp_pipeline hybrid_3d fsdp_step cp_attention moe_layer; do
    n=$(grep -c "^$b," "$TMP/fit.csv")
    if [ "$n" -ge 4 ]; then pass "--csv has $n $b rows"; else fail "--csv has $n $b rows, expected >= 4"; fi
done
expect_in "$TMP/fit.csv" "benchmark,row,predicted_us,measured_us,rel_error" "--csv header"
if awk -F, '!/^#/ && NR > 1 && $5 != "rel_error" { e = $5 < 0 ? -$5 : $5; if (e > 0.05) bad++ } END { exit bad > 0 }' "$TMP/fit.csv"; then
    pass "every prediction within 5% of the synthetic measurement"; else fail "some prediction off by more than 5%"; sed 's/^/  | /' "$TMP/fit.csv" >&2; fi
# check_rel_err FILE WHAT: each rel_err --fit printed is 100 (predicted / measured - 1) of its own columns.
check_rel_err() {
    if awk '$1 ~ /^(dp_allreduce|tp_layer|pp_pipeline|hybrid_3d|fsdp_step|cp_attention|moe_layer)$/ && $NF ~ /%$/ {
            n++; e = substr($NF, 1, length($NF) - 1); want = 100 * ($(NF - 2) / $(NF - 1) - 1)
            # 0.05 for the printed %+.1f, and what the columns printed %.1f (+-0.05 us each) move it
            d = e - want; if (d < 0) d = -d; if (d > 0.06 + 10 / $(NF - 1)) { bad++; print "row " NR ": " e "% printed, " want "% from its columns" } }
            END { exit !(n >= 16 && bad == 0) }' "$1"; then pass "--fit ($2): each printed rel_err follows from its predicted and measured columns"
    else fail "--fit ($2): a printed rel_err does not follow from its columns"; fi
}
check_rel_err "$TMP/fit" "fitted links"
# A garbled line (a NUL byte) in one sweep file: named with its line, on stdout, once; the rows
# before it still fit, and stderr stays empty (the line reader does not speak for --fit).
cp -r "$R" "$TMP/garbled"
g=$TMP/garbled/coll_sweep_allreduce.csv
nul_at=$(($(wc -l <"$g") + 1))
printf 'x\0y\n' >>"$g"
expect_rc 0 "--fit with a NUL byte in a sweep file" -- "$PLAN" --fit "$TMP/garbled"
n=$(grep -c "coll_sweep_allreduce.csv:$nul_at: line holds a NUL byte" "$TMP/out")
[ "$n" = 1 ] && pass "--fit names the garbled line, once" || fail "--fit names the garbled line $n times"
if [ -s "$TMP/err" ]; then fail "--fit on a garbled file writes to stderr:"; sed 's/^/  | /' "$TMP/err" >&2
else pass "--fit on a garbled file: stderr empty (the reader does not speak for it)"; fi
if grep -q "sure to be read" "$TMP/fit"; then fail "--fit on intact files names a garbled line:"; grep "sure to be read" "$TMP/fit" >&2
else pass "--fit on intact files names no garbled line"; fi
# --fit with --cluster FILE: the rows predicted from a calibration's links, not this run's fit.
printf 'name = truth\nintra_alpha_us = 0.5\nintra_bw_GBps = 8\ninter_alpha_us = 12\ninter_bw_GBps = 0.6\ntflops = 1\n' >"$TMP/truth.txt"
# fsdp_step rows without a compute_dtype column (an older run): not predicted, and nothing said about a dtype
mkdir -p "$TMP/nodt" && cp -r "$R"/. "$TMP/nodt/"
python3 - "$TMP/nodt/fsdp_step.csv" <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines(True)
head = [l for l in lines if l.startswith("#")]
rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
keep = [k for k in rows[0] if k != "compute_dtype"]
with open(sys.argv[1], "w", newline="") as f:
    f.writelines(head)
    w = csv.DictWriter(f, keep, extrasaction="ignore")
    w.writeheader(), w.writerows(rows)
PY
expect_rc 0 "--fit with fsdp_step rows lacking compute_dtype" -- "$PLAN" --fit "$TMP/nodt" --csv "$TMP/nodt.csv"
if grep -q "datatype" "$TMP/err"; then fail "--fit parsed a missing dtype cell: $(grep datatype "$TMP/err" | head -1)"
else pass "--fit: a missing dtype cell is no usage message"; fi
[ "$(grep -c '^fsdp_step,' "$TMP/nodt.csv")" = 0 ] && pass "--fit: those rows are not predicted" || fail "--fit predicted fsdp rows without their dtype"
expect_rc 0 "--fit with --cluster FILE" -- "$PLAN" --fit "$R" --cluster "$TMP/truth.txt" --csv "$TMP/fitc.csv"
expect_in "$TMP/out" "links from cluster truth (not fitted from" "says where the links come from"
within5() { awk -F, '!/^#/ && $5 != "rel_error" { n++; e = $5 < 0 ? -$5 : $5; if (e > 0.05) bad++ } END { exit !(n >= 16 && bad == 0) }' "$1"; }
within5 "$TMP/fitc.csv" && pass "the true links predict every row within 5%" || fail "the true links: some row off by more than 5%"
sed 's/^intra_bw_GBps = 8/intra_bw_GBps = 2/' "$TMP/truth.txt" >"$TMP/wrong.txt"
expect_rc 0 "--fit with a wrong calibration" -- "$PLAN" --fit "$R" --cluster "$TMP/wrong.txt" --csv "$TMP/fitw.csv"
within5 "$TMP/fitw.csv" && fail "a 4x slower intra link still predicts every row within 5%" || pass "a wrong calibration shows in the errors"
check_rel_err "$TMP/out" "a wrong calibration, errors of tens of %"
sed 's/^inter_bw_GBps = 0.6/inter_bw_GBps = 0.15/' "$TMP/truth.txt" >"$TMP/wrong-inter.txt"
expect_rc 0 "--fit with a wrong inter-node link" -- "$PLAN" --fit "$R" --cluster "$TMP/wrong-inter.txt" --csv "$TMP/fitx.csv"
within5 "$TMP/fitx.csv" && fail "a 4x slower inter link still predicts every row within 5%" || pass "a wrong inter-node link shows in the errors"
# The prediction file says how it was made: its first line is the command, every argument of it.
line=$(head -1 "$TMP/fitx.csv")  # (the binary's path is quoted if it holds a blank: not compared)
[ "${line#\# command: }" != "$line" ] && [ "${line%" --fit $R --cluster $TMP/wrong-inter.txt --csv $TMP/fitx.csv"}" != "$line" ] &&
    pass "--fit --csv: the command line heads the file" || { fail "--fit --csv: command line"; head -1 "$TMP/fitx.csv" >&2; }
# A collective sweep without a wrong column (nothing flagged) is fitted like one whose column says 0.
C=$TMP/nowrong; mark_run "$C"
awk -F, -v OFS=, '/^#/ { print; next } $NF != "3" { NF--; print }' "$R/coll_sweep_allreduce.csv" >"$C/coll_sweep_allreduce.csv"
expect_rc 0 "--fit without a wrong column" -- "$PLAN" --fit "$C"
expect_in "$TMP/out" "coll_sweep_allreduce.csv: 72 rows, 0 not used for the fit" "every row fitted when no row is flagged wrong"
# --calibrate takes each link from the coll fit, else from the p2p fit.
K=$TMP/cal; mark_run "$K"
printf 'test,rate\ngemm,2000\n# complete\n' >"$K/compute_probe.csv"
cp "$R/p2p_sweep.csv" "$K/"
expect_rc 0 "--calibrate from p2p rows only" -- "$PLAN" --calibrate "$K" -o "$TMP/cal.txt"
expect_in "$TMP/cal.txt" "intra from the p2p fit, inter from the p2p fit" "calibration from the p2p fit"
awk -F' = ' '$1 == "intra_bw_GBps" { i = $2 } $1 == "inter_bw_GBps" { x = $2 } END { exit !(i > 7.6 && i < 8.4 && x > 0.57 && x < 0.63) }' "$TMP/cal.txt" \
    && pass "p2p-calibrated links within 5% of 8 and 0.6 GB/s" || { fail "p2p-calibrated links"; sed 's/^/  | /' "$TMP/cal.txt" >&2; }
cp "$R/coll_sweep_allreduce.csv" "$K/"
expect_rc 0 "--calibrate with collective rows" -- "$PLAN" --calibrate "$K" -o "$TMP/cal.txt"
expect_in "$TMP/cal.txt" "intra from the coll fit, inter from the coll fit" "calibration prefers the coll fit"
# GPUs per node: the most ranks of an intra-node coll_sweep row (a mixed row spans nodes).
printf '# parabench coll_sweep\ncollective,bytes,nranks,link_class\nallreduce,8,8,intra\nallreduce,8,4,intra\nallreduce,8,16,mixed\n# complete\n' \
    >"$K/coll_sweep.csv"
expect_rc 0 "--calibrate with coll_sweep rows of 8 and 4 ranks in a node, 16 across" -- \
    "$PLAN" --calibrate "$K" -o "$TMP/cal.txt"
expect_in "$TMP/cal.txt" "gpus_per_node = 8" "GPUs per node from the largest intra-node group"
# Memory per GPU: the host's memory shared by the node's 8 ranks (there is no GPU to ask).
awk -F' = ' -v kb="$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)" '$1 == "mem_GB" { m = $2 }
    END { want = kb * 1024 / 8 / 1e9; exit !(m > 0.98 * want && m < 1.02 * want) }' "$TMP/cal.txt" \
    && pass "mem_GB: the host's memory over 8 ranks" || { fail "mem_GB is not MemTotal / 8"; grep mem_GB "$TMP/cal.txt" >&2; }
# --fit on sweeps alone: links fitted, no workload row to predict, and it says so.
expect_rc 0 "--fit on a directory of sweeps only" -- "$PLAN" --fit "$K"
expect_in "$TMP/out" "(no dp_allreduce, tp_layer, pp_pipeline, hybrid_3d, fsdp_step, cp_attention or moe_layer rows to predict)" "nothing to predict: said"
expect_rc 0 "--fit with workload rows" -- "$PLAN" --fit "$R"
grep -q "rows to predict)" "$TMP/out" && fail "--fit with rows to predict says it has none" \
    || pass "rows to predict: no 'nothing to predict' line"
rm "$R/tp_layer.csv"
expect_rc 0 "--fit with a benchmark file missing" -- "$PLAN" --fit "$R"
expect_in "$TMP/out" "note: no tp_layer*.csv" "missing file noted"

# ---- --pp-simulate: without transfer time, 1F1B takes (m+p-1) slots, the ideal m
expect_rc 0 "--pp-simulate 4,8,100,200,0" -- "$PLAN" --pp-simulate 4,8,100,200,0 --schedule 1f1b
expect_in "$TMP/out" "step_us 3300.000 ideal_us 2400.000 efficiency 0.72727 efficiency_theory 0.72727" \
    "step (8+3) x 300 us, ideal 8 x 300 us, efficiency 8/11"
# Interleaved over v chunks: the bubble shrinks v-fold, (8 + 3/2) x 300 us at v = 2, (8 + 3/4) x 300 us at v = 4.
expect_rc 0 "--pp-simulate 4,8,100,200,0 interleaved" -- "$PLAN" --pp-simulate 4,8,100,200,0 --schedule interleaved
expect_in "$TMP/out" "step_us 2850.000 ideal_us 2400.000 efficiency 0.84211 efficiency_theory 0.84211" \
    "interleaved, v = 2 by default: step (8+1.5) x 300 us, efficiency 16/19"
expect_rc 0 "--pp-simulate 4,8,100,200,0 interleaved v=4" -- "$PLAN" --pp-simulate 4,8,100,200,0 --schedule interleaved --interleave 4
expect_in "$TMP/out" "step_us 2625.000 ideal_us 2400.000 efficiency 0.91429" "interleaved, v = 4: step (8+0.75) x 300 us"

# Every cluster override lands in its own field of the cluster line (a preset's values replaced).
expect_rc 0 "plan with every cluster override" -- "$PLAN" --model gpt-1.3b --gpus 16 --cluster a100 --intra-bw 123 \
    --intra-lat 4.5 --inter-bw 11 --inter-lat 7 --hbm-bw 1500 --gpu-mem 40 --gpus-per-node 4 --tflops 100
expect_in "$TMP/out" "cluster a100-ib200: 4 GPU/node, intra 123.0 GB/s 4.5 us, inter 11.00 GB/s 7.0 us, 100 TFLOP/s sustained GEMM, 1500 GB/s memory, 40 GB" \
    "each override in its field"

# ---- published runs: the calibration rows hold, every other row within 15%,
# the median within 7%; and the check can fail ----
PUB=$TESTS_DIR/../../tools/dev/plan-published.sh
expect_rc 0 "planner vs published A100 runs" -- "$PUB" "$PLAN"
expect_in "$TMP/out" "calibration rows (K22) within 10%: 9 of 9" "every calibration row within 10%"
expect_in "$TMP/out" "N21  1008.0B t=8 p=64 n=3072" "held-out rows listed"
expect_in "$TMP/out" "B22  176B t=4 p=12 d=8" "BLOOM row listed"
expect_in "$TMP/out" "S22  530B t=8 p=35 d=12" "MT-NLG rows listed"
expect_in "$TMP/out" "every row: 23 of 23 within 15%" "every published row within 15%"
# The node-aware DP all-reduce on N21's 1.7B run: 8 members a node, and a shorter step than the flat ring's.
expect_rc 0 "plan-dp-node-aware.sh" -- "$TESTS_DIR/../../tools/dev/plan-dp-node-aware.sh" "$PLAN"
expect_in "$TMP/out" "d inter (8 a node)" "t = 1 on 8-GPU nodes: 8 DP members a node"
[ "$(grep -c 'a node)' "$TMP/out")" -eq 1 ] && grep -qE '^configuration .*, d inter$' "$TMP/out" \
    && pass "one GPU a node: the flat ring, no members a node shown" || fail "the flat ring's configuration line"
if awk '/^node-aware: / { na = $2 } /^flat ring: / { fl = $3 } END { exit !(na > 0 && fl > 0 && na < fl) }' "$TMP/out"
then pass "the node-aware step is shorter than the flat ring's"; else fail "node-aware vs flat ring: $(grep -E '^(node-aware|flat ring):' "$TMP/out")"; fi
K22_TOL=1 expect_rc 1 "a 1% tolerance fails the calibration rows" -- "$PUB" "$PLAN"
ROW_TOL=5 expect_rc 1 "a 5% row tolerance fails the held-out rows" -- "$PUB" "$PLAN"
expect_in "$TMP/out" "> 5%" "the drifted rows are flagged"
MEDIAN_TOL=1 expect_rc 1 "a 1% median tolerance fails" -- "$PUB" "$PLAN"
# S22's micro-batch size is the one the scaling of its times points at, and the script says so if it is not.
expect_rc 0 "S22 rows at micro-batch 2" -- "$PUB" "$PLAN"
expect_in "$TMP/out" "S22  530B t=8 p=35 d=8 mb=2" "S22 rows run at micro-batch 2"
expect_in "$TMP/out" "  best 2" "the fit of S22's times points at micro-batch 2"
S22_MB=1 expect_rc 1 "S22 rows at micro-batch 1, against their fit" -- "$PUB" "$PLAN"
expect_in "$TMP/out" "S22 rows use micro-batch 1, the fit of their times points elsewhere" "mismatch: message"
# The fit on times made with a known micro-batch (4: p = 8, B = 512, 0.05 s a sequence slot) finds it.
FIT=$TESTS_DIR/../../tools/dev/microbatch-fit.py
expect_rc 0 "microbatch-fit on synthetic mb=4 times" -- python3 "$FIT" --p 8 --batch 512 --runs 2:14.2,4:7.8,8:4.6
expect_in "$TMP/out" "best 4" "microbatch-fit finds the micro-batch the times were made with"
expect_in "$TMP/out" "  4           0.0500 s            0.0%" "through the origin: 0.05 s a sequence slot, no residual"
expect_rc 2 "microbatch-fit with two runs" -- python3 "$FIT" --p 8 --batch 512 --runs 2:14.2,4:7.8
expect_in "$TMP/err" "--runs: at least 3 runs" "two runs: message"
expect_rc 2 "bad --partition" -- "$PLAN" --model llama-70b --gpus 64 --partition zigzag
expect_in "$TMP/err" "option --partition" "bad --partition: message"
expect_rc 2 "--inter-bw with --inter-bw-node" -- "$PLAN" --model llama-70b --gpus 64 --inter-bw 5 --inter-bw-node 40
expect_in "$TMP/err" "option --inter-bw-node: give --inter-bw (per GPU) or --inter-bw-node (per node), not both" \
    "--inter-bw-node: message"
# --inter-bw-node is the node's network shared by its GPUs: 40 GB/s on 8-GPU nodes is
# --inter-bw 5 per GPU, on 4-GPU nodes 10. The plans must be the same, figure for figure.
same_plan() {  # same_plan GPUS_PER_NODE NODE_BW GPU_BW
    expect_rc 0 "plan --inter-bw-node $2, $1 GPUs a node" -- "$PLAN" --model llama-70b --gpus 64 --cluster h100 \
        --gpus-per-node "$1" --inter-bw-node "$2" --json "$TMP/node.json"
    cp "$TMP/out" "$TMP/node.out"
    expect_rc 0 "plan --inter-bw $3, $1 GPUs a node" -- "$PLAN" --model llama-70b --gpus 64 --cluster h100 \
        --gpus-per-node "$1" --inter-bw "$3" --json "$TMP/gpu.json"
    if cmp -s "$TMP/node.out" "$TMP/out" && python3 -c 'import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:])
sys.exit(any(a[k] != b[k] for k in ("cluster", "configurations")))' "$TMP/node.json" "$TMP/gpu.json"; then
        pass "--inter-bw-node $2 on $1-GPU nodes plans as --inter-bw $3"
    else
        fail "--inter-bw-node $2 on $1-GPU nodes differs from --inter-bw $3: $(diff "$TMP/node.out" "$TMP/out" | head -3)"
    fi
}
same_plan 8 40 5
same_plan 4 40 10

# --dtype: the bytes each element takes on the wire. fp16 plans as bf16 (2 bytes); fp32 (4 bytes)
# doubles the DP and PP traffic: the DP all-reduce time nearly doubles (its alpha term does not).
for d in bf16 fp16 fp32; do
    "$PLAN" --model llama-7b --cluster a100 --gpus 8 --dtype $d --json "$TMP/dt-$d.json" >/dev/null ||
        fail "plan --dtype $d: exit $?"
done
python3 - "$TMP"/dt-{bf16,fp16,fp32}.json <<'PY' && pass "--dtype: fp16 plans as bf16; fp32 doubles the DP and PP bytes" ||
import json, sys
bf16, fp16, fp32 = ({(c["t"], c["p"], c["d"]): c for c in json.load(open(f))["configurations"]} for f in sys.argv[1:])
assert bf16 == fp16, "fp16 differs from bf16"
for k, c in bf16.items():
    r = fp32[k]["dp_comm_s"] / c["dp_comm_s"] if c["dp_comm_s"] else 2
    assert 1.5 < r <= 2, (k, r)  # 4/2 bytes, less the alpha terms that do not grow
    r = fp32[k]["pp_comm_s"] / c["pp_comm_s"] if c["pp_comm_s"] else 2
    assert 1.5 < r <= 2, (k, r)  # 4/2 bytes, less the alpha terms that do not grow
PY
    fail "plan --dtype"

finish
