#!/usr/bin/env bash
# cp_attention under mpirun at 2, 4 and 8 ranks: O, dQ, dK and dV of every
# rank validated against attention over the whole sequence (-c 1, 0 wrong),
# or O and dQ of a sample of rows (--check-rows N),
# grouped-query attention on 2 rings, the derived columns consistent with the
# measured ones and the planner's step wired to them; overlap hiding a slow
# rank's exchanges (PARABENCH_TEST_SLOW: each of its exchanges starts 20 ms
# late) where a block's attention is longer; a corrupted output caught; bad
# rings refused naming the option.
source "$(dirname "$0")/lib.sh"
unset OMPI_MCA_mpi_yield_when_idle # the benchmark's own choice is checked below, not a caller's
COLS=nranks,cp,groups,overlap,block_tokens,compute_us,comm_us,step_us,exposed_us,overhead,predicted_step_us,wait_us,transfer_bytes,transfers,wrong
SMALL=(--layers 1 --hidden 64 --heads 4 --seq 64 -n 2 -w 1)

# Every row: exposed = step - compute, overhead = exposed/compute, the host's
# wait within the step, a block's bytes 2 b (s/c) kv_heads (h/heads) 4 (fp32),
# 3c - 2 transfers per layer, and without overlap the planner's step =
# compute + every transfer.
consistent() {
    python3 - "$1" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
close = lambda a, b, scale=0: abs(a - b) <= 1e-4 * max(1.0, abs(a), abs(b)) + 1e-5 * scale
assert rows
for r in rows:
    f = {k: float(v) for k, v in r.items() if k not in ("link_class", "model", "compute_dtype", "overlap")}
    c, L = int(r["cp"]), int(r["layers"])
    assert close(f["exposed_us"], f["step_us"] - f["compute_us"], f["step_us"] + f["compute_us"]), r
    assert close(f["overhead"], f["exposed_us"] / f["compute_us"]), r
    assert f["wait_us"] <= f["step_us"] * 1.001, r
    assert int(r["block_tokens"]) * c == int(r["seq"]), r
    hd = int(r["hidden"]) // int(r["heads"])
    want = 2 * int(r["micro_batch"]) * int(r["block_tokens"]) * int(r["kv_heads"]) * hd * 4
    assert int(r["transfer_bytes"]) == want, (r, want)
    assert int(r["transfers"]) == (3 * c - 2) * L, r
    assert int(r["groups"]) * c == int(r["nranks"]), r
    if r["overlap"] == "off":
        want = f["compute_us"] + f["comm_us"]
        assert close(f["predicted_step_us"], want, want), (r, want)
    else:
        assert f["predicted_step_us"] <= f["compute_us"] + f["comm_us"] * 1.0001, r
PY
}

for np in 2 4 8; do
    expect_rc 0 "$np ranks, one ring, overlap off and on" -- \
        mpi $np "$BIN/cp_attention" "${SMALL[@]}" -c 1 --csv "$TMP/r$np.csv" --json "$TMP/r$np.json"
    python3 "$TESTS_DIR/results.py" "$TMP/r$np.csv" "$TMP/r$np.json" --rows 2 --zero-wrong --complete \
        --columns $COLS --positive step_us && pass "$np ranks: 2 rows, 0 wrong" || fail "$np ranks: rows"
    expect_in "$TMP/out" "wrong values: 0 OK" "$np ranks: the footer says 0 wrong"
    consistent "$TMP/r$np.csv" && pass "$np ranks: columns consistent" || fail "$np ranks: columns"
done

expect_rc 0 "4 ranks, 2 rings of 2, grouped-query attention, 2 sequences" -- \
    mpi 4 "$BIN/cp_attention" --model tiny-gqa --layers 2 --seq 32 --cp 2 --micro-batch 2 -n 1 -w 0 -c 1 \
    --check-rows all --csv "$TMP/g.csv"
expect_in "$TMP/out" "wrong values: 0 OK (O, dQ, dK and dV" "GQA: 16 query heads on 8 KV heads, each ring validated"
expect_in "$TMP/out" "2 rings of 2 ranks" "GQA: the rings note"
consistent "$TMP/g.csv" && pass "GQA: columns consistent" || fail "GQA: columns"

# Overlap hides a slow rank's exchanges under the blocks' attention: without
# it the host waits at least 3 x 20 ms per layer (the forward exchange, the
# backward one and the accumulators' last transfer home); with it only the
# last one stays exposed. A 768-token block makes each block's attention
# longer than a delayed exchange. On a machine of fewer than 4 processors the
# benchmark makes MPI's waits yield the core to the compute (2 ranks, 2
# threads each; checked below). The exposed times come from
# two phases each, which other load moves: up to 3 runs, the first that holds.
overlap_holds() {
    mpi 2 -x PARABENCH_TEST_SLOW=1 "$BIN/cp_attention" --layers 2 --seq 1536 \
        -n 2 -w 1 --csv "$TMP/slow.csv" >/dev/null 2>&1 || { echo "cp_attention failed"; return 1; }
    python3 - "$TMP/slow.csv" <<'PY'
import csv, sys
rows = {r["overlap"]: r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))}
(woff, eoff), (won, eon) = ((float(rows[k]["wait_us"]), float(rows[k]["exposed_us"])) for k in ("off", "on"))
print("host waits %.0f us and %.0f us are exposed with overlap, %.0f us and %.0f us without" % (won, eon, woff, eoff))
sys.exit(0 if woff >= 6 * 20000 and won < woff - 2 * 20000 and eon < eoff else 1)
PY
}
held=0
for _ in 1 2 3; do overlap_holds >"$TMP/verdict" && { held=1; break; }; done
[ "$held" = 1 ] && pass "overlap: $(cat "$TMP/verdict")" || fail "overlap (3 runs, the last): $(cat "$TMP/verdict")"

# Open MPI's waits yield where a rank's communication thread shares its processors
# (fewer than 2 a rank: 2 unbound ranks here), never in a sweep, and a user's value is kept.
yield_of() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["meta"]["mpi_yield_when_idle"])' "$1"; }
want="unset"; [ "$(nproc)" -lt 4 ] && want="1 (set: "
case "$(yield_of "$TMP/r2.json")" in "$want"*) pass "2 ranks on $(nproc) processors: mpi_yield_when_idle $want" ;;
    *) fail "2 ranks on $(nproc) processors: mpi_yield_when_idle is '$(yield_of "$TMP/r2.json")', expected '$want...'" ;; esac
mpi 2 -x OMPI_MCA_mpi_yield_when_idle=0 "$BIN/cp_attention" "${SMALL[@]}" --json "$TMP/user.json" >/dev/null 2>&1
[ "$(yield_of "$TMP/user.json")" = "0 (set by the user)" ] && pass "the user's mpi_yield_when_idle is kept" ||
    fail "the user's value: '$(yield_of "$TMP/user.json")'"
mpi 2 "$BIN/coll_sweep" -b 8 -e 8 -n 1 -w 0 --json "$TMP/sweep.json" >/dev/null 2>&1
[ "$(yield_of "$TMP/sweep.json")" = unset ] && pass "a sweep (no communication thread) leaves it unset" ||
    fail "coll_sweep: mpi_yield_when_idle '$(yield_of "$TMP/sweep.json")'"

expect_rc 1 "a corrupted output exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/cp_attention" "${SMALL[@]}" -c 1 --overlap on
expect_in "$TMP/out" "wrong values: 2 FAILED" "an element of O and one of dV, each counted once"

# A sample of rows (--check-rows N; what auto does where every row would take too long on the
# host, test_cp pins where): O and dQ of those rows checked, said in the header and the footer,
# a corrupted element of row 0 caught.
expect_rc 0 "4 ranks, --check-rows 3: O and dQ of 3 rows of each block a head" -- \
    mpi 4 "$BIN/cp_attention" --model tiny-gqa --layers 1 --seq 64 --cp 4 -n 1 -w 0 -c 1 --check-rows 3 \
    --json "$TMP/rows.json"
expect_in "$TMP/out" "# validation (-c 1): O and dQ of 3 of each block's 16 rows a head" "sampled rows: the header says so"
expect_in "$TMP/out" "wrong values: 0 OK (O and dQ of 3 of each block's 16 rows a head" "sampled rows: 0 wrong"
expect_in "$TMP/out" "dK and dV not checked (--check-rows:" "sampled rows: dK, dV said unchecked"
python3 -c 'import json, sys; n = json.load(open(sys.argv[1]))["notes"]; sys.exit(not any("O and dQ of 3 of" in x for x in n))' \
    "$TMP/rows.json" && pass "sampled rows: the JSON notes say so" || fail "sampled rows: not in the JSON notes"
expect_rc 1 "--check-rows 3: a corrupted output exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/cp_attention" "${SMALL[@]}" -c 1 --overlap on --check-rows 3
expect_in "$TMP/out" "wrong values: 1 FAILED" "O's element counted once (dV is not checked)"
for bad in 0 some; do
    expect_rc 2 "--check-rows $bad" -- mpi 2 "$BIN/cp_attention" "${SMALL[@]}" --check-rows $bad
    expect_in "$TMP/err" "option --check-rows: '$bad' is not accepted; expected auto, all or a number of rows" "names the option"
done

expect_rc 2 "a ring that does not divide the ranks" -- mpi 4 "$BIN/cp_attention" "${SMALL[@]}" --cp 3
expect_in "$TMP/err" "option --cp: a CP group of 3 ranks does not divide the 4 ranks" "names the option"
expect_rc 2 "a ring that does not divide the sequence" -- mpi 3 "$BIN/cp_attention" "${SMALL[@]}"
expect_in "$TMP/err" "option --cp: 3 ranks do not divide the sequence of 64 tokens" "names the option"
expect_rc 2 "KV heads that do not divide the heads" -- mpi 2 "$BIN/cp_attention" "${SMALL[@]}" --kv-heads 3
expect_in "$TMP/err" "--kv-heads" "names the option"
expect_rc 2 "--cp 0" -- mpi 2 "$BIN/cp_attention" "${SMALL[@]}" --cp 0
expect_in "$TMP/err" "--cp" "names the option"
expect_rc 2 "--overlap maybe" -- mpi 2 "$BIN/cp_attention" "${SMALL[@]}" --overlap maybe
expect_in "$TMP/err" "--overlap" "names the option"
finish
