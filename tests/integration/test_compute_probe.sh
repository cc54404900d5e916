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
assert rows[2]["unit"] == "GB/s" and rows[2]["size"] == str(16 << 20), rows
PY
# The most sizes a list takes (16): the memory check looks at those 16 and nothing past them.
expect_rc 0 "compute_probe, 16 sizes" -- "$BIN/compute_probe" --sizes 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16 -n 1 \
    --copy-bytes 16M --csv "$TMP/p16.csv"
[ "$(grep -c '^gemm,' "$TMP/p16.csv")" = 16 ] && pass "16 GEMM rows" || fail "16 sizes: $(grep -c '^gemm,' "$TMP/p16.csv") GEMM rows"
if [ -n "$(ldd "$BIN/compute_probe" | grep -i cublas)" ] && ! nvidia-smi >/dev/null 2>&1; then
    expect_rc 3 "--engine cublas without a GPU exits 3" -- "$BIN/compute_probe" --engine cublas
    expect_in "$TMP/err" "GPU" "the message says why"
fi
finish
