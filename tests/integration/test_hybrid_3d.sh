#!/usr/bin/env bash
# hybrid_3d on 4 ranks: grids TP x PP x DP, placements, rank maps, the DP
# gradient check (the all-reduced gradient against the sum of the replicas'
# local gradients, on distinct data per replica), output columns and bad input. (The placement *effect* is
# tested on the emulated cluster, test_emulated_cluster.sh.)
source "$(dirname "$0")/lib.sh"
export OMPI_MCA_mpi_yield_when_idle=1
COLS=placement,tp,pp,dp,nranks,micro_batches,schedule,tp_mode,tp_link,pp_link,dp_link,step_us,step_us_max,compute_us,tp_comm_us,pp_wait_us,dp_comm_us,tp_bytes,pp_bytes,dp_bytes,wrong
SMALL="--layers 4 --hidden 64 --heads 2 --seq 32 -n 2 -w 1"

expect_rc 0 "2x2x1 with --compare-placements" -- \
    mpi 4 "$BIN/hybrid_3d" --tp 2 --pp 2 $SMALL --compare-placements --csv "$TMP/a.csv" --json "$TMP/a.json"
# Communicators: TP, DP and the 2-stage pipeline's 2, for each of the 3 placements, freed before the
# next (docs/gpu.md, "Communicators"); NCCL_NVLS_ENABLE recorded as the ranks saw it.
python3 - "$TMP/a.json" <<'PY' >"$TMP/comms" 2>&1 && pass "communicators: $(cat "$TMP/comms")" || { fail "communicators"; cat "$TMP/comms" >&2; }
import json, os, sys
meta = json.load(open(sys.argv[1]))["meta"]
got = meta["communicators_measured"]
assert meta["communicators"]["per_rank"] == 4, meta["communicators"]
assert (got["created"], got["peak_live"], got["live_at_end"]) == (12, 4, 0), got
assert meta["nccl_nvls_enable"] == os.environ.get("NCCL_NVLS_ENABLE", "unset"), meta["nccl_nvls_enable"]
print("4 a rank per placement, 12 created, 4 at most at once")
PY
expect_in "$TMP/out" "# communicators: 12 created, at most 4 live at once, 0 live at the end, per rank" "the counts printed"
PARABENCH_MAX_COMMS=3 expect_rc 3 "4 communicators over PARABENCH_MAX_COMMS=3" -- \
    mpi 4 -x PARABENCH_MAX_COMMS "$BIN/hybrid_3d" --tp 2 --pp 2 $SMALL
expect_in "$TMP/err" "hybrid_3d's grid of 2 x 2 x 1 needs 4 communicators per rank, more than the 3" "names the grid"
expect_rc 0 "NCCL_NVLS_ENABLE=0 recorded" -- mpi 2 -x NCCL_NVLS_ENABLE=0 "$BIN/hybrid_3d" --tp 2 $SMALL --json "$TMP/nvls.json"
python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["meta"]["nccl_nvls_enable"] == "0"' "$TMP/nvls.json" &&
    pass "meta.nccl_nvls_enable: 0" || fail "meta.nccl_nvls_enable not 0"
n=$(grep -c '^# engine: ' "$TMP/out")
[ "$n" -eq 1 ] && pass "one '# engine:' line once the engine runs" || fail "$n '# engine:' lines, expected 1"
# An engine that cannot start (cuBLAS with no GPU, or not built) is exit 3 with a message, not a
# crash on the engine it does not have (the header is printed only once an engine runs).
if ! nvidia-smi >/dev/null 2>&1; then
    expect_rc 3 "--engine cublas without a GPU exits 3" -- mpi 2 "$BIN/hybrid_3d" --tp 2 --pp 1 $SMALL --engine cublas
    if grep -q '^# engine: ' "$TMP/out"; then fail "no engine, yet an engine line was printed"; else pass "no engine line without an engine"; fi
fi
python3 "$TESTS_DIR/results.py" "$TMP/a.csv" "$TMP/a.json" --columns $COLS --rows 3 --zero-wrong --complete \
    --expect tp=2 --expect pp=2 --expect dp=1 --expect tp_link=intra --positive step_us --positive tp_bytes \
    --positive pp_bytes && pass "CSV/JSON of 2x2x1" || fail "CSV/JSON of 2x2x1"
python3 - "$TMP/a.csv" <<'PY' && pass "per-axis bytes follow the formulas" || fail "per-axis bytes"
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
for r in rows:
    b, s, h, t, m, layers, p = 1, 32, 64, 2, int(r["micro_batches"]), 4, 2
    tp = 8 * b * s * h * (t - 1) / t * 4 * (layers // p) * m     # Megatron volume, fp32, per rank per step
    assert abs(float(r["tp_bytes"]) - tp) <= 1e-6 * tp, (r["tp_bytes"], tp)
    assert float(r["dp_bytes"]) == 0, r["dp_bytes"]                # D = 1: no gradient traffic
    assert set(r["placement"] for r in rows) == {"tp-inner", "dp-inner", "naive"}
PY

expect_rc 0 "2x1x2: each replica's gradient is the sum of the replicas' local gradients" -- \
    mpi 4 "$BIN/hybrid_3d" --tp 2 --dp 2 $SMALL --tp-comm sp --csv "$TMP/b.csv"
python3 - "$TMP/b.csv" <<'PY' && pass "2x1x2 row" || fail "2x1x2 row"
import csv, sys
r = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))[0]
assert r["dp"] == "2" and r["tp_mode"] == "sp" and r["wrong"] == "0", r
# DP: ring all-reduce sends 2(D-1)/D of the stage's gradient: 4 layers * 12h^2/t fp32
grad = 4 * 12 * 64 * 64 / 2 * 4
assert abs(float(r["dp_bytes"]) - grad) < 1e-6 * grad, (r["dp_bytes"], grad)
# the all-reduce takes time, and the step's parts, one after another inside it, sum to at most the step
parts = [float(r[k]) for k in ("compute_us", "tp_comm_us", "pp_wait_us", "dp_comm_us")]
assert parts[3] > 0 and sum(parts) <= float(r["step_us"]), (parts, r["step_us"])
PY
expect_rc 1 "a corrupted replica is detected" -- \
    mpi 4 -x PARABENCH_TEST_CORRUPT=3 "$BIN/hybrid_3d" --tp 2 --dp 2 $SMALL --csv "$TMP/c3.csv"
expect_in "$TMP/out" "FAILED" "the footer says FAILED"
# #wrong counts ranks: one whose gradient is wrong, and one whose replica no longer matches
# its DP group's first rank bit for bit. Rank 3 is second in its group {1, 3}: itself only;
# rank 1 is first: itself, and rank 3, whose right gradient now differs from rank 1's.
expect_rc 1 "a corrupted first replica is detected" -- \
    mpi 4 -x PARABENCH_TEST_CORRUPT=1 "$BIN/hybrid_3d" --tp 2 --dp 2 $SMALL --csv "$TMP/c1.csv"
got=$(for f in c3 c1; do grep -v '^#' "$TMP/$f.csv" | python3 -c "import csv, sys; print(*[r['wrong'] for r in csv.DictReader(sys.stdin)])"; done | tr '\n' ' ')
[ "$got" = "1 2 " ] && pass "#wrong: 1 for the second replica corrupted, 2 for the first" ||
    fail "#wrong for ranks 3 and 1 corrupted: '$got', expected '1 2 '"

expect_rc 0 "1x4x1 with GPipe" -- mpi 4 "$BIN/hybrid_3d" --pp 4 --schedule gpipe --micro-batches 4 $SMALL

# An explicit rank map: stages on ranks 3,2 and 1,0 (reversed).
printf '# rank t p d\n3 0 0 0\n2 1 0 0\n1 0 1 0\n0 1 1 0\n' >"$TMP/map"
expect_rc 0 "--rankmap" -- mpi 4 "$BIN/hybrid_3d" --tp 2 --pp 2 $SMALL --rankmap "$TMP/map" --csv "$TMP/m.csv"
expect_in "$TMP/m.csv" "rankmap" "the row names the rankmap placement"

printf '0 0 0 0\n1 1 0 0\n2 0 1 0\n2 1 1 0\n' >"$TMP/badmap"
while IFS='|' read -r args fragment; do
    # shellcheck disable=SC2086
    expect_rc 2 "bad option: $args" -- mpi 4 "$BIN/hybrid_3d" $args
    expect_in "$TMP/err" "$fragment" "message for '$args' names '$fragment'"
done <<CASES
--tp 3|--tp/--pp/--dp
--tp 2 --pp 2 --dp 2|--tp/--pp/--dp
--pp 4 --layers 6|--pp
--tp 4 --heads 2 --hidden 66|--tp
--placement ring|--placement
--schedule zigzag|--schedule
--tp-comm ring|--tp-comm
--micro-batches 0|--micro-batches
--tp 2 --pp 2 --rankmap $TMP/badmap|--rankmap
--tp 2 --pp 2 --rankmap /nonexistent|--rankmap
--tp 2 --pp 2 --rankmap $TMP/map --compare-placements|--compare-placements
CASES
# The default iteration counts (docs/placement.md: 10 timed steps, 2 warm-up, 10 s cap) are the metadata's.
expect_rc 0 "default iterations" -- mpi 2 "$BIN/hybrid_3d" --tp 2 --layers 4 --hidden 64 --heads 2 --seq 32 --json "$TMP/d.json"
python3 -c 'import json, sys; it = json.load(open(sys.argv[1]))["meta"]["iterations"]; print(it)
assert it == "10 (+2 warm-up) per configuration; at most 10 s per configuration, warm-up included", it' "$TMP/d.json" \
    >"$TMP/it" 2>&1 && pass "metadata: $(head -1 "$TMP/it")" || { fail "metadata: iterations"; cat "$TMP/it" >&2; }

finish
