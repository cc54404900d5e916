#!/usr/bin/env bash
# p2p_sweep --matrix: concurrent rounds (the default) against --matrix-serial on
# 4 and 5 ranks: the same pairs, each once, disjoint within a round, the round
# count in the metadata; the pairs file's rail and slow_against columns; a combination that cannot apply is refused.
source "$(dirname "$0")/lib.sh"

for np in 4 5; do
    for mode in matrix matrix-serial; do
        expect_rc 0 "p2p_sweep --$mode on $np ranks" -- \
            mpi $np "$BIN/p2p_sweep" --$mode --sizes 8,64K -n 20 -w 2 --json "$TMP/$mode-$np.json"
    done
    # single node: a round-robin tournament, N - 1 rounds for even N, N for odd N
    want=$((np % 2 ? np : np - 1))
    python3 - "$TMP/matrix-$np.json" "$TMP/matrix-serial-$np.json" "$np" "$want" <<'PY' \
        && pass "$np ranks: concurrent rounds cover the serial pairs, disjoint per round" || fail "$np ranks: schedules"
import json, sys
conc, ser = (json.load(open(p)) for p in sys.argv[1:3])
n, want = int(sys.argv[3]), int(sys.argv[4])
assert conc["meta"]["matrix_mode"] == "concurrent" and conc["meta"]["matrix_rounds"] == want, conc["meta"]
assert ser["meta"]["matrix_mode"] == "serial" and ser["meta"]["matrix_rounds"] == n * (n - 1) // 2, ser["meta"]
def pairs(doc):
    return {(r["rank_a"], r["rank_b"]) for r in doc["rows"]}
everyone = {(a, b) for a in range(n) for b in range(a + 1, n)}
assert pairs(conc) == pairs(ser) == everyone, (pairs(conc), pairs(ser))
assert len(conc["rows"]) == 2 * len(everyone)  # latency and bw per pair, once
by_round = {}
for r in conc["rows"]:
    if r["mode"] == "latency":
        by_round.setdefault(r["round"], []).append((r["rank_a"], r["rank_b"]))
assert sorted(by_round) == list(range(want)), sorted(by_round)
for k, ps in by_round.items():
    ranks = [x for p in ps for x in p]
    assert len(ranks) == len(set(ranks)), (k, ps)  # no rank twice in a round
assert all(r["round"] == -1 or r["round"] >= 0 for r in ser["rows"])
assert sorted({r["round"] for r in ser["rows"]}) == list(range(len(everyone)))
PY
done

# The pairs file: every pair once, with its rail and what a slow pair was slow against;
# on one node no pair is on a rail (rails are inter-node pairs k <-> k:
# test_run_all_cluster.sh sees them on two nodes).
expect_rc 0 "p2p_sweep --matrix --matrix-csv on 4 ranks" -- \
    mpi 4 "$BIN/p2p_sweep" --matrix --sizes 8,64K -n 20 -w 2 --matrix-csv "$TMP/m" --json "$TMP/m.json"
python3 - "$TMP/m-pairs.csv" "$TMP/out" "$TMP/m.json" <<'PY' && pass "pairs file: rail -1 on one node, slow_against matches slow; the slow-pair count and notes agree with it" || fail "pairs file"
import csv, json, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 6, rows
assert list(rows[0]) == ["a", "b", "link_class", "latency_us", "bw_GBps", "slow", "rail", "slow_against"], list(rows[0])
for r in rows:
    assert r["rail"] == "-1", r
    assert (r["slow"] == "1") == (r["slow_against"] in ("class", "rail", "class+rail")), r
# Whatever this noisy machine made slow, the summary counts exactly those pairs, and a note names each.
slow = sorted((r["a"], r["b"]) for r in rows if r["slow"] == "1")
out = open(sys.argv[2]).read()
assert re.search(r"^# Slow pairs: (\d+)$", out, re.M).group(1) == str(len(slow)), out
assert json.load(open(sys.argv[3]))["summary"]["slow_pairs"] == len(slow)
assert sorted(re.findall(r"^# SLOW pair (\d+)-(\d+) ", out, re.M)) == slow, out
PY

# A known slow rank (PARABENCH_TEST_SLOW: rank 4 sleeps 20 ms before each iteration): all 4 of
# its 10 pairs are flagged, in the pairs file, the count and a note each, and have a higher
# latency than every other pair (10 ms and more, where a loaded machine's noise reached 2.6 ms). (Rank 4, so that the first pair the schedule measures, 1-4, is one.) The 6 others are the majority, so the medians are theirs. (Noise may flag
# one of them too on a loaded machine: that side is the emulated cluster's, with a shaped link.)
expect_rc 0 "p2p_sweep --matrix on 5 ranks, rank 4 slowed" -- \
    mpi 5 -x PARABENCH_TEST_SLOW=4 "$BIN/p2p_sweep" --matrix --sizes 8,64K -n 10 -w 1 --matrix-csv "$TMP/s" \
    --json "$TMP/s.json"
python3 - "$TMP/s-pairs.csv" "$TMP/out" "$TMP/s.json" <<'PY' && pass "rank 4 slowed: its 4 pairs flagged and named, slower than the rest; the matrices hold the pairs file's figures" || fail "rank 4 slowed"
import csv, json, re, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 10, rows
mine = {r["a"] + "-" + r["b"] for r in rows if "4" in (r["a"], r["b"])}
assert mine == {"0-4", "1-4", "2-4", "3-4"}, mine
slow = {r["a"] + "-" + r["b"] for r in rows if r["slow"] == "1"}
assert mine <= slow, (mine, slow)
out = open(sys.argv[2]).read()
assert set(re.findall(r"^# SLOW pair (\d+-\d+) ", out, re.M)) == slow, out
assert json.load(open(sys.argv[3]))["summary"]["slow_pairs"] == len(slow)
lat = lambda rs: [float(r["latency_us"]) for r in rs]
theirs = [r for r in rows if "4" not in (r["a"], r["b"])]
ours = [r for r in rows if "4" in (r["a"], r["b"])]
assert min(lat(ours)) > max(lat(theirs)), rows
# The N x N matrices hold the pairs file's figures, each in both cells (a,b) and (b,a), to 6 digits.
for kind, col in (("latency", "latency_us"), ("bw", "bw_GBps")):
    m = list(csv.reader(l for l in open(sys.argv[1].replace("-pairs.csv", f"-{kind}.csv")) if not l.startswith("#")))
    assert m[0] == ["rank", "0", "1", "2", "3", "4"] and len(m) == 6, m
    for r in rows:
        a, b, want = int(r["a"]), int(r["b"]), float(r[col])
        for got in (float(m[a + 1][b + 1]), float(m[b + 1][a + 1])):
            assert abs(got - want) <= 1e-5 * abs(want), (kind, a, b, got, want)
PY

expect_rc 2 "--matrix with --pair is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix --pair 0,1
expect_in "$TMP/err" "--pair: does not apply to --matrix" "the message names --pair and --matrix"
expect_rc 2 "--matrix with --mode is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix --mode bw
expect_in "$TMP/err" "--mode: does not apply to --matrix" "the message names --mode and --matrix"
finish
