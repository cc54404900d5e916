#!/usr/bin/env bash
# compute_probe on the BLAS engine: GEMM rates and copy bandwidth, CSV rows for
# the sizes asked, in their units. How the rate grows with size is a measurement
# (docs/compute.md), not something a test on a shared machine can assert.
source "$(dirname "$0")/lib.sh"
expect_rc 0 "compute_probe, BLAS" -- "$BIN/compute_probe" --sizes 64,1024 -n 3 --copy-bytes 16M --csv "$TMP/p.csv"
python3 - "$TMP/p.csv" <<'PY' && pass "GEMM and copy rows" || fail "GEMM and copy rows"
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
assert [r["test"] for r in rows] == ["gemm", "gemm", "copy"], rows
assert all(float(r["rate"]) > 0 for r in rows), rows
assert [r["size"] for r in rows[:2]] == ["64", "1024"], rows
assert all(r["unit"] == "GFLOP/s" and r["engine"] == "blas" for r in rows[:2]), rows
assert all(float(r["rate"]) < 1e6 for r in rows), rows          # finite, not a unit slip
# Real multiplications: one thread's fp32 GEMM cannot beat the core's peak, 2 FMA units x 16
# lanes x 2 flops x ~4 GHz = 256 GFLOP/s with AVX-512. 2000 is far above it; a GEMM that
# skipped its work (alpha 0 lets BLAS only scale C) reports tens of thousands at 1024.
assert all(float(r["rate"]) < 2000 for r in rows[:2]), rows
assert rows[2]["unit"] == "GB/s" and rows[2]["size"] == str(16 << 20), rows
assert all(r["iters"] == "3" for r in rows), rows                # -n 3: each rate over 3 timed runs
PY
# Without -n, 10 timed GEMMs (and copies) a row (docs/compute.md).
expect_rc 0 "compute_probe, default iterations" -- "$BIN/compute_probe" --sizes 64 --copy-bytes 1M --csv "$TMP/d.csv"
python3 -c 'import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
sys.exit(not (len(rows) == 2 and all(r["iters"] == "10" for r in rows)))' "$TMP/d.csv" \
    && pass "default: 10 iterations a row" || fail "default iterations: $(grep -v '^#' "$TMP/d.csv" | tr '\n' ' ')"
# The most sizes a list takes (16): the memory check looks at those 16 and nothing past them.
expect_rc 0 "compute_probe, 16 sizes" -- "$BIN/compute_probe" --sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 -n 1 \
    --copy-bytes 16M --csv "$TMP/p16.csv"
[ "$(grep -c '^gemm,' "$TMP/p16.csv")" = 16 ] && pass "16 GEMM rows" || fail "16 sizes: $(grep -c '^gemm,' "$TMP/p16.csv") GEMM rows"
# --warmup-ms: GEMMs of the largest size for at least that long before timing. The line
# it prints must describe real GEMMs: at least the time asked, and a rate (2 n^3 flops a
# GEMM) no higher than the one then measured at that size allows, not a count of loop
# turns. (Lower is expected: each warm-up GEMM also allocates and fills its matrices.)
expect_rc 0 "compute_probe --warmup-ms 100" -- "$BIN/compute_probe" --sizes 64,256 -n 3 --copy-bytes 16M \
    --warmup-ms 100 --csv "$TMP/w.csv"
python3 - "$TMP/out" "$TMP/w.csv" <<'PY' && pass "warm-up: real GEMMs of the largest size for >= 100 ms" || fail "warm-up line"
import csv, re, sys
m = re.search(r"^# warm-up (\d+) GEMMs of (\d+) in (\d+) ms \(at least 100 ms\)$", open(sys.argv[1]).read(), re.M)
assert m, open(sys.argv[1]).read()
count, n, ms = int(m[1]), int(m[2]), int(m[3])
assert n == 256 and count >= 1 and ms >= 100, m[0]
rows = [r for r in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith("#")) if r["test"] == "gemm"]
measured = float(next(r["rate"] for r in rows if r["size"] == "256"))
warm = count * 2.0 * n ** 3 / (ms * 1e-3) / 1e9
assert warm <= 10 * measured, (warm, measured)
print(f"warm-up {warm:.1f} GFLOP/s, measured {measured:.1f}")
PY
if [ -n "$(ldd "$BIN/compute_probe" | grep -i cublas)" ] && ! nvidia-smi >/dev/null 2>&1; then
    expect_rc 3 "--engine cublas without a GPU exits 3" -- "$BIN/compute_probe" --engine cublas
    expect_in "$TMP/err" "GPU" "the message says why"
fi
finish
