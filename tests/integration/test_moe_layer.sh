#!/usr/bin/env bash
# moe_layer under mpirun at 2, 4 and 8 ranks: every row dispatched and combined
# validated (-c 1, 0 wrong), the derived columns consistent with the measured
# ones and the routing, the planner's step wired to them; EP groups smaller
# than the world; a skewed dispatch slower than the uniform one by about its
# imbalance, within one run; a corrupted row caught; bad input refused naming
# the option.
source "$(dirname "$0")/lib.sh"
COLS=nranks,ep_group,ep_groups,experts,top_k,tokens,skew,imbalance,step_us,dispatch_us,combine_us,a2a_share,compute_us,slowest_rank,dispatch_vs_even,a2a_vs_even,a2a_busbw_GBps,even_busbw_GBps,bw_vs_even,predicted_a2a_us,predicted_step_us,wrong
SMALL=(--layers 1 --hidden 64 --heads 4 --seq 32 -n 2 -w 1)

# Every row: the share of the step, the bandwidths from the times alone, the
# routing's imbalance (expert 0 gets F times the mean, the other experts of
# its rank the rest evenly), and the planner's all-to-alls = imbalance x the
# uniform ones' (bandwidth from them, latency neglected).
consistent() {
    python3 - "$1" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
close = lambda a, b, scale=0: abs(a - b) <= 1e-4 * max(1.0, abs(a), abs(b)) + 1e-5 * scale
assert rows
for r in rows:
    f = {k: float(v) for k, v in r.items() if k not in ("link_class", "model", "compute_dtype")}
    n, E, k, T, F = int(r["ep_group"]), int(r["experts"]), int(r["top_k"]), int(r["tokens"]), f["skew"]
    assert int(r["ep_groups"]) * n == int(r["nranks"]), r
    assert close(f["a2a_share"], (f["dispatch_us"] + f["combine_us"]) / f["step_us"]), r
    alone, even = f["alone_dispatch_us"] + f["alone_combine_us"], f["even_dispatch_us"] + f["even_combine_us"]
    assert close(f["bw_vs_even"], f["a2a_busbw_GBps"] / f["even_busbw_GBps"]), r
    factor = (n - 1) / n
    assert close(f["a2a_busbw_GBps"], 4 * f["layers"] * f["bytes_per_a2a"] / (alone * 1e3) * factor), r
    assert int(r["bytes_per_a2a"]) == T * k * int(r["hidden"]) * 4, r  # fp32 on the CPU
    mean = T * k // E
    hot = min(max(int(F * mean + 0.5), mean), T * k)
    rest = T * k - hot
    others = [rest // (E - 1) + (1 if i < rest % (E - 1) else 0) for i in range(E - 1)] if E > 1 else []
    loads = [hot] + others
    per = E // n
    imb = max(n * sum(loads[d * per:(d + 1) * per]) for d in range(n)) / (T * k)
    assert close(f["imbalance"], imb), (r, imb)
    assert close(f["predicted_a2a_us"], imb * even, even), (r, imb * even)
    assert f["predicted_step_us"] >= f["predicted_a2a_us"] * 0.999, r
    assert 0 <= int(r["slowest_rank"]) < int(r["nranks"]), r
PY
}

for np in 2 4 8; do
    expect_rc 0 "$np ranks, EP over the world, uniform and skew 2" -- \
        mpi $np "$BIN/moe_layer" "${SMALL[@]}" -c 1 --experts 8 --top-k 2 --skew uniform,2 \
        --csv "$TMP/w$np.csv" --json "$TMP/w$np.json"
    python3 "$TESTS_DIR/results.py" "$TMP/w$np.csv" "$TMP/w$np.json" --rows 2 --zero-wrong --complete \
        --columns $COLS --positive step_us && pass "$np ranks: 2 rows, 0 wrong" || fail "$np ranks: rows"
    expect_in "$TMP/out" "wrong values: 0 OK" "$np ranks: the footer says 0 wrong"
    consistent "$TMP/w$np.csv" && pass "$np ranks: columns consistent" || fail "$np ranks: columns"
done

expect_rc 0 "4 ranks, EP groups of 2 and of the world in one run, GELU experts, 3 layers" -- \
    mpi 4 "$BIN/moe_layer" --model tiny --experts 4 --top-k 1 --layers 3 --hidden 64 --heads 4 --seq 32 -n 2 -w 1 \
    -c 1 --ep-group 2,world --skew 1.5 --csv "$TMP/g.csv"
expect_in "$TMP/out" "wrong values: 0 OK" "EP groups: every row back at its origin"
python3 - "$TMP/g.csv" <<'PY' && pass "EP groups: a row per group size, 2 groups of 2 then 1 of 4" || fail "EP groups: rows"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
assert [(r["ep_group"], r["ep_groups"]) for r in rows] == [("2", "2"), ("4", "1")], rows
PY
consistent "$TMP/g.csv" && pass "EP groups: columns consistent" || fail "EP groups: columns"

# The skewed all-to-alls against the uniform ones of the same bytes, in the
# same iterations: one expert per rank and top-1, so the experts' skew F = 2
# is the ranks' (rank 0 receives twice the mean); its fastest dispatch takes
# about twice the uniform one's, while uniform against uniform is about 1 (the
# combine need not: on one host the receivers copy, so the hot rank's sends
# are spread over them). A load spike from the tests beside it can still
# spoil a run: up to 3 runs.
skew_ratio() {
    python3 - "$TMP/skew.csv" >"$TMP/verdict" <<'PY'
import csv, sys
rows = {float(r["skew"]): r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))}
u, s = float(rows[1.0]["dispatch_vs_even"]), float(rows[2.0]["dispatch_vs_even"])
imb = float(rows[2.0]["imbalance"])
print("skewed/uniform dispatch %.2f at imbalance %.2f, uniform/uniform %.2f" % (s, imb, u))
sys.exit(0 if imb == 2.0 and 0.65 * imb <= s <= 1.6 * imb and 0.6 <= u <= 1.5 and s > 1.3 * u else 1)
PY
}
for try in 1 2 3; do
    expect_rc 0 "2 ranks, uniform and skew 2, 4 MiB all-to-alls (run $try)" -- \
        mpi 2 "$BIN/moe_layer" --experts 2 --top-k 1 --skew uniform,2 --layers 1 --hidden 1024 --ffn 256 --seq 512 \
        -n 8 -w 1 --csv "$TMP/skew.csv"
    skew_ratio && break
    echo "note: run $try: $(cat "$TMP/verdict")"
done
skew_ratio && pass "skew: $(cat "$TMP/verdict")" || fail "skew: $(cat "$TMP/verdict")"

expect_rc 1 "a corrupted row exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/moe_layer" "${SMALL[@]}" -c 1 --skew uniform
expect_in "$TMP/out" "wrong values: 1 FAILED" "and is counted once"

expect_rc 2 "8 experts over an EP group of 3" -- mpi 3 "$BIN/moe_layer" "${SMALL[@]}"
expect_in "$TMP/err" "option --experts: 8 experts do not spread evenly over an EP group of 3 ranks" "names the option"
expect_rc 2 "top-k above the experts" -- mpi 2 "$BIN/moe_layer" "${SMALL[@]}" --top-k 9
expect_in "$TMP/err" "option --top-k" "names the option"
expect_rc 2 "a skew no routing reaches" -- mpi 2 "$BIN/moe_layer" "${SMALL[@]}" --skew 5
expect_in "$TMP/err" "option --skew: 5: an expert would get" "names the option and why"
expect_rc 2 "an EP group that does not divide the world" -- mpi 4 "$BIN/moe_layer" "${SMALL[@]}" --ep-group 3
expect_in "$TMP/err" "option --ep-group: an EP group of 3 ranks does not divide the 4 ranks" "names the option"
expect_rc 2 "a dense model without --experts" -- mpi 2 "$BIN/moe_layer" --model tiny "${SMALL[@]}"
expect_in "$TMP/err" "option --experts: model tiny is dense" "names the option"
finish
