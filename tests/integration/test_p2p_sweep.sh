#!/usr/bin/env bash
# p2p_sweep under mpirun with 2, 3 and 4 ranks: all modes, chosen pairs, output files, bad options.
source "$(dirname "$0")/lib.sh"
COLS=mode,bytes,rank_a,rank_b,host_a,host_b,link_class,iters,window,time_us,time_us_min,time_us_max,time_us_median,time_us_p99,bw_GBps,wrong,round,rail

for np in 2 3 4; do
    expect_rc 0 "p2p_sweep all modes, $np ranks" -- \
        mpi $np "$BIN/p2p_sweep" --mode all -b 1 -e 64K -f 16 -n 20 -w 2 --csv "$TMP/p$np.csv" --json "$TMP/p$np.json"
    # 3 modes x sizes 1, 16, 256, 4K, 64K; default pair 0 and the last rank.
    python3 "$TESTS_DIR/results.py" "$TMP/p$np.csv" "$TMP/p$np.json" --columns $COLS --rows 15 --zero-wrong \
        --complete --expect rank_a=0 --expect rank_b=$((np - 1)) --expect link_class=intra --expect rail=-1 \
        && pass "CSV/JSON of $np ranks" || fail "CSV/JSON of $np ranks"
    python3 - "$TMP/p$np.csv" <<'PY' && pass "bandwidth = messages x size / time per mode ($np ranks)" || fail "bandwidth formula ($np ranks)"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
# latency: one message per half round trip; bw: a window of W; bibw: W each way
per = {"latency": lambda w: 1, "bw": lambda w: w, "bibw": lambda w: 2 * w}
assert {r["mode"] for r in rows} == set(per), rows
for r in rows:
    w = int(r["window"])
    assert w == (1 if r["mode"] == "latency" else 64), r  # OSU's window of 64 by default
    want = per[r["mode"]](w) * int(r["bytes"]) / float(r["time_us"]) / 1e3
    assert abs(float(r["bw_GBps"]) - want) <= 1e-4 * want + 1e-9, (r, want)
PY
done

# OSU's 8 KiB split: latency up to 8192 B is timed in batches of 16 round
# trips (-n 20 rounds down to 16), from 8193 B one by one (all 20).
expect_rc 0 "latency at 8192 and 8193 B" -- \
    mpi 2 "$BIN/p2p_sweep" --mode latency --sizes 8192,8193 -n 20 -w 1 --json "$TMP/split.json"
python3 - "$TMP/split.json" <<'PY' && pass "8192 B batched (16 iterations), 8193 B not (20)" || fail "latency batching at 8 KiB"
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print([(r["bytes"], r["iters"]) for r in rows])
assert [(r["bytes"], r["iters"]) for r in rows] == [(8192, 16), (8193, 20)]
PY

# A pair that does not include rank 0: the result still reaches rank 0's report.
expect_rc 0 "pair 2,1 of 4 ranks" -- mpi 4 "$BIN/p2p_sweep" --pair 2,1 --sizes 8,1K -n 10 -w 1 --csv "$TMP/pair.csv"
grep -qx "# pair: rank 2 ($(hostname)) <-> rank 1 ($(hostname)), intra-node" "$TMP/out" &&
    pass "the table names the pair it measures" || { fail "pair header"; grep "^# pair" "$TMP/out" >&2; }
python3 - "$TMP/pair.csv" <<'PY' && pass "pair 2,1 rows" || fail "pair 2,1 rows"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
assert len(rows) == 2 and all(r["rank_a"] == "2" and r["rank_b"] == "1" for r in rows), rows
import socket  # every rank of this one-machine run names this machine
assert all(r["host_a"] == r["host_b"] == socket.gethostname() for r in rows), (socket.gethostname(), rows)
assert all(float(r["time_us"]) > 0 and r["wrong"] == "0" for r in rows), rows
# latency mode: bw is size / half round trip
for r in rows:
    assert abs(float(r["bw_GBps"]) - int(r["bytes"]) / float(r["time_us"]) / 1e3) < 1e-3, r
PY

# Bandwidth grows with size: 1 MiB messages are faster per byte than 8 B messages.
expect_rc 0 "bw mode 8 B and 1 MiB" -- mpi 2 "$BIN/p2p_sweep" --mode bw --sizes 8,1M -n 10 -w 2 --csv "$TMP/bw.csv"
python3 - "$TMP/bw.csv" <<'PY' && pass "bw rises with size" || fail "bw rises with size"
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
assert float(rows[1]["bw_GBps"]) > 10 * float(rows[0]["bw_GBps"]), rows
PY

expect_rc 1 "corrupted p2p payload exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/p2p_sweep" --sizes 64 -n 5 -w 1
expect_in "$TMP/out" "FAILED" "the footer says FAILED"

# --matrix: every pair, N x N matrices, a summary per link class.
expect_rc 0 "p2p_sweep --matrix on 3 ranks" -- \
    mpi 3 "$BIN/p2p_sweep" --matrix --sizes 8,64K -n 10 -w 1 --csv "$TMP/m.csv" --matrix-csv "$TMP/m"
expect_in "$TMP/out" "intra pairs: 3" "the summary counts 3 intra pairs"
python3 - "$TMP" <<'PY' && pass "matrix files" || fail "matrix files"
import csv, sys
d = sys.argv[1]
rows = [r for r in csv.DictReader(l for l in open(d + "/m.csv") if not l.startswith("#"))]
assert len(rows) == 6, rows                      # 3 pairs x (latency, bw)
assert {(r["rank_a"], r["rank_b"]) for r in rows} == {("0", "1"), ("0", "2"), ("1", "2")}
for kind in ("latency", "bw"):
    m = [l.strip().split(",") for l in open(f"{d}/m-{kind}.csv") if not l.startswith("#")]
    assert m[0] == ["rank", "0", "1", "2"], m[0]
    for i in range(3):
        for j in range(3):
            v = m[i + 1][j + 1]
            assert (v == "") == (i == j), (kind, i, j, v)
            if i != j:
                assert float(v) > 0 and v == m[j + 1][i + 1], (kind, i, j)
pairs = list(csv.DictReader(open(d + "/m-pairs.csv")))
assert len(pairs) == 3 and all(p["slow"] in ("0", "1") for p in pairs), pairs
PY

while IFS='|' read -r args fragment; do
    # shellcheck disable=SC2086
    expect_rc 2 "bad option: $args" -- mpi 3 "$BIN/p2p_sweep" $args
    expect_in "$TMP/err" "$fragment" "message for '$args' names '$fragment'"
done <<'CASES'
--pair 0,3|--pair
--pair 1,1|--pair
--pair 0|--pair
--pair a,b|--pair
--mode pingpong|--mode
--window 0|--window
-b 0|-b/--minbytes
-d float|-d
CASES
finish
