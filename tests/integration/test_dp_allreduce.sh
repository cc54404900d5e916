#!/usr/bin/env bash
# dp_allreduce under mpirun with 2 and 3 ranks on the tiny model: validated
# gradients, overhead consistent with its measured components, bucket overlap
# giving the same gradients as none, decoupled gradient sizes, exit codes.
# Timings are never asserted (shared, noisy machine): only structure and arithmetic.
source "$(dirname "$0")/lib.sh"
COLS=nranks,link_class,grad_bytes,compute_us,comm_us,step_us,exposed_us,overhead,layers,hidden,seq,micro_batch,dtype,overlap,bucket_bytes,predicted_overhead,hidden_fraction,busbw_GBps,gflops,wrong
RUN=(--model tiny -n 3 -w 1)

# Consistency of every row: the derived columns follow from the measured ones.
consistent() {
    python3 - "$1" "$2" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
n = int(sys.argv[2])
# a relative tolerance: the check does not rest on how many digits the CSV keeps
close = lambda a, b, scale=0: abs(a - b) <= 1e-4 * max(1.0, abs(a), abs(b)) + 1e-5 * scale
for r in rows:
    f = {k: float(v) for k, v in r.items() if k not in ("link_class", "model", "compute_dtype", "dtype", "overlap", "grad_hash")
         and not (k == "target_ratio" and v == "")}
    assert close(f["exposed_us"], f["step_us"] - f["compute_us"], f["step_us"] + f["compute_us"]), r          # step = compute + exposed
    assert close(f["overhead"], f["exposed_us"] / f["compute_us"]), r
    assert close(f["predicted_overhead"], f["comm_us"] / f["compute_us"]), r
    # hidden = 1 - exposed/comm, clamped to [0, 1]: a no-overlap row whose step
    # exceeds compute + comm must read 0, one that hides everything 1
    want = min(1.0, max(0.0, 1 - f["exposed_us"] / f["comm_us"]))
    assert close(f["hidden_fraction"], want), (r, want)
    assert close(f["busbw_GBps"], f["grad_bytes"] / f["comm_us"] / 1e3 * 2 * (n - 1) / n), r
    # GFLOP/s = the model's forward + backward FLOPs (3x forward) over compute
    # time: per layer 2bs*12h^2 for the GEMMs and 4bs^2h for the attention scores
    b, s, h, L = (int(r[k]) for k in ("micro_batch", "seq", "hidden", "layers"))
    flops = 3 * L * (2 * b * s * 12 * h * h + 4 * b * s * s * h)
    assert close(f["gflops"], flops / f["compute_us"] / 1e3), (r, flops)
    assert f["wait_us"] <= f["step_us"] * 1.001, r
    assert (r["overlap"] == "bucket") == (f["bucket_bytes"] > 0), r
PY
}

# 2 ranks, both overlap modes on the real gradients (12 MiB).
expect_rc 0 "2 ranks, none and bucket" -- mpi 2 "$BIN/dp_allreduce" "${RUN[@]}" --overlap none,bucket --bucket-mb 2 \
    --csv "$TMP/a.csv" --json "$TMP/a.json"
python3 "$TESTS_DIR/results.py" "$TMP/a.csv" "$TMP/a.json" --columns $COLS --rows 2 --zero-wrong --complete \
    --expect nranks=2 --expect link_class=intra --expect grad_bytes=12582912 --expect layers=4 --expect hidden=256 \
    && pass "CSV/JSON columns and metadata (2 ranks)" || fail "CSV/JSON columns and metadata (2 ranks)"
consistent "$TMP/a.csv" 2 && pass "step = compute + exposed, overhead, prediction, busbw (2 ranks)" \
    || fail "derived columns inconsistent (2 ranks)"
expect_in "$TMP/out" "# wrong values: 0 OK" "footer: no wrong values"
# The machine's load during the run, which plan --reproduce reads to judge DP-3 (or not).
grep -qE "^# note: load: (other processes used [0-9]+% of the busiest node's CPU time during the run, steal [0-9]+%|unknown)" \
    "$TMP/a.csv" && pass "the CSV notes the load during the run" || fail "no load note in the CSV"
python3 - "$TMP/out" "$TMP/a.csv" <<'PY' && pass "footer's largest overhead is the largest row's" || fail "footer's largest overhead"
import csv, re, sys
got = float(re.search(r"# Largest overhead \(exposed/compute\): (\S+)", open(sys.argv[1]).read()).group(1))
rows = [r for r in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith("#"))]
want = max(float(r["overhead"]) for r in rows)
assert abs(got - want) <= 1e-5 * max(1, abs(want)), (got, want)
PY
python3 - "$TMP/a.csv" <<'PY' && pass "bucket gives the same gradients as none (hash)" || fail "bucket and none gradients differ"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
h = {r["overlap"]: r["grad_hash"] for r in rows}
assert h["none"] == h["bucket"] and len(h["none"]) == 16, h
assert int([r for r in rows if r["overlap"] == "bucket"][0]["buckets"]) == 6
PY

# 3 ranks, decoupled sizes (smaller and larger than the layers'), bf16 gradients.
expect_rc 0 "3 ranks, --grad-bytes sweep, bucket, bf16" -- mpi 3 "$BIN/dp_allreduce" --model tiny -w 1 -n 2 \
    --grad-bytes 1M,20M --overlap bucket --grad-dtype bfloat16 --csv "$TMP/b.csv" --json "$TMP/b.json"
python3 "$TESTS_DIR/results.py" "$TMP/b.csv" "$TMP/b.json" --columns $COLS --rows 2 --zero-wrong --complete \
    --expect nranks=3 --expect dtype=bfloat16 --expect overlap=bucket \
    && pass "CSV/JSON of the sweep (3 ranks)" || fail "CSV/JSON of the sweep (3 ranks)"
consistent "$TMP/b.csv" 3 && pass "derived columns (3 ranks)" || fail "derived columns inconsistent (3 ranks)"
expect_in "$TMP/out" "gradient (decoupled): 20 MiB all-reduced per step" "decoupling printed (larger)"
expect_in "$TMP/out" "kept apart" "decoupling printed (smaller)"

# --target-ratio: each size searched in this run from the all-reduce alone and the
# compute alone. Ratios 10x apart, so the sizes' order survives a loaded machine.
expect_rc 0 "--target-ratio 0.05,0.5 from 1M,1M" -- mpi 2 "$BIN/dp_allreduce" --model tiny --layers 2 -n 3 -w 1 \
    --target-ratio 0.05,0.5 --grad-bytes 1M,1M --overlap none,bucket --bucket-mb 1 --csv "$TMP/t.csv" --json "$TMP/t.json"
python3 "$TESTS_DIR/results.py" "$TMP/t.csv" "$TMP/t.json" --columns $COLS,target_ratio --rows 4 --zero-wrong --complete \
    && pass "CSV/JSON of --target-ratio" || fail "CSV/JSON of --target-ratio"
consistent "$TMP/t.csv" 2 && pass "derived columns (--target-ratio)" || fail "derived columns inconsistent (--target-ratio)"
python3 - "$TMP/t.csv" "$TMP/t.json" "$TMP/a.csv" "$TMP/a.json" <<'PY' && pass "--target-ratio: a searched size per ratio, rows tagged, notes agree" || fail "--target-ratio rows or notes"
import csv, json, re, sys
text = open(sys.argv[1]).read()
rows = [r for r in csv.DictReader(l for l in text.splitlines() if not l.startswith("#"))]
assert [(r["target_ratio"], r["overlap"]) for r in rows] == [("0.05", "none"), ("0.05", "bucket"), ("0.5", "none"), ("0.5", "bucket")], rows
notes = re.findall(r"^# note: target comm/compute (\S+): grad_bytes (\d+) chosen in this run after (\d+) probes? \(each "
                   r"the no-overlap step's own loop: compute alone, the all-reduce alone, the step\), from 1048576; there "
                   r"comm/compute (\S+?)( \(not within 2% of the target: the nearest probe\))?; the overlap=none row is "
                   r"that probe's loop$", text, re.M)
assert [n[0] for n in notes] == ["0.05", "0.5"], notes
chosen = {}
for target, size, probes, ratio, missed in notes:
    chosen[float(target)] = int(size)
    assert int(size) % 1024 == 0 and 1 <= int(probes) <= 12, (size, probes)   # 256 fp32 elements; at most 12 probes
    # "within 2%" means it, up to the note's 4 decimals (0.04902 is within 2% of 0.05 and prints 0.0490)
    assert missed or abs(float(ratio) - float(target)) <= 0.02 * float(target) + 5e-5, (target, ratio)
    assert all(int(r["grad_bytes"]) == int(size) for r in rows if float(r["target_ratio"]) == float(target)), (size, rows)
    # the none row is the chosen probe's own loop: its comm/compute is the one the note gives
    none = [r for r in rows if float(r["target_ratio"]) == float(target) and r["overlap"] == "none"][0]
    assert "%.4f" % float(none["predicted_overhead"]) == ratio, (ratio, none["predicted_overhead"])
assert chosen[0.5] > 3 * chosen[0.05], chosen   # 10x the share of the compute: several times the bytes
assert [r["target_ratio"] for r in json.load(open(sys.argv[2]))["rows"]] == [0.05, 0.05, 0.5, 0.5]
# without --target-ratio the column is empty (CSV) and null (JSON)
assert all(r["target_ratio"] == "" for r in csv.DictReader(l for l in open(sys.argv[3]) if not l.startswith("#")))
assert all(r["target_ratio"] is None for r in json.load(open(sys.argv[4]))["rows"])
PY

# --params: counts times the gradient element size.
expect_rc 0 "--params 5M" -- mpi 2 "$BIN/dp_allreduce" --model tiny -w 1 -n 2 --params 5M --overlap bucket --csv "$TMP/p.csv"
grep -q ",20000000," "$TMP/p.csv" && pass "--params 5M is 20000000 gradient bytes" || fail "--params 5M size"
rows=$(grep -v '^#' "$TMP/p.csv" | tail -n +2 | grep -c .)
[ "$rows" -eq 1 ] && pass "--params 5M: one row, one size" || fail "--params 5M: $rows rows, expected 1"
# --params preset: the --model preset's parameter count (as plan counts it) times the element size.
params=$("$BIN/plan" --model tiny --gpus 2 --json "$TMP/plan.json" >/dev/null && sed -n 's/.*"params":[[:space:]]*\([0-9]*\).*/\1/p' "$TMP/plan.json" | head -1)
for dt in float:4 bfloat16:2; do
    expect_rc 0 "--params preset, ${dt%:*} gradients" -- mpi 2 "$BIN/dp_allreduce" --model tiny -n 1 -w 0 --params preset \
        --grad-dtype "${dt%:*}" --overlap none --csv "$TMP/preset.csv"
    got=$(grep -v '^#' "$TMP/preset.csv" | python3 -c 'import csv, sys; print(next(csv.DictReader(sys.stdin))["grad_bytes"])')
    [ -n "$params" ] && [ "$got" = "$((params * ${dt#*:}))" ] && pass "--params preset: $got gradient bytes = tiny's $params params x ${dt#*:}" ||
        fail "--params preset with ${dt%:*} gradients: $got gradient bytes, expected ${params:-?} x ${dt#*:}"
done

# Corrupted gradients are counted and exit 1; -c 0 skips the check.
expect_rc 1 "corrupted gradient on rank 1 exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/dp_allreduce" --model tiny -n 1 -w 0 --overlap bucket
expect_in "$TMP/out" "FAILED" "footer says FAILED"
expect_rc 1 "corrupted gradient in the --target-ratio probes exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/dp_allreduce" --model tiny -n 1 -w 0 --overlap none --target-ratio 0.1
expect_rc 0 "-c 0 skips validation" -- mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/dp_allreduce" --model tiny -n 1 -w 0 -c 0

# Sizes beyond memory: refused before allocating, exit 3 with the bytes needed.
expect_rc 3 "a 7B fp32 gradient does not fit" -- mpi 2 "$BIN/dp_allreduce" "${RUN[@]}" --params 7B
expect_in "$TMP/err" "needs" "the refusal gives the bytes needed"
expect_rc 3 "--grad-bytes 60G does not fit" -- mpi 2 "$BIN/dp_allreduce" "${RUN[@]}" --grad-bytes 60G

# Bad input: exit 2 naming the option.
while IFS='|' read -r args fragment; do
    # shellcheck disable=SC2086
    expect_rc 2 "bad input: $args" -- mpi 2 "$BIN/dp_allreduce" --model tiny $args </dev/null # mpirun would eat the list
    expect_in "$TMP/err" "$fragment" "message for '$args' names '$fragment'"
done <<'CASES'
--hidden 250|--hidden
--layers 0|--layers
--heads 0|--heads
--overlap sometimes|--overlap
--bucket-mb 0|--bucket-mb
--grad-bytes 6|--grad-bytes
--grad-bytes 1M --params 1M|--params
--params lots|--params
--target-ratio 0|--target-ratio
--target-ratio 0.1,inf|--target-ratio
--target-ratio 0.1 --params 1M|--target-ratio
--target-ratio 0.1,0.2 --grad-bytes 1M|--grad-bytes
--model huge|--model
CASES
expect_rc 0 "--help" -- mpi 1 "$BIN/dp_allreduce" --help
expect_in "$TMP/out" "--overlap" "help lists --overlap"
finish
