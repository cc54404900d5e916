#!/usr/bin/env bash
# p2p_sweep --matrix: concurrent rounds (the default) against --matrix-serial on
# 4 and 5 ranks: the same pairs, each once, disjoint within a round, the round
# count in the metadata; the pairs file's rail and slow_against columns; the sampled
# schedule of large worlds on 16 ranks of 4 emulated nodes; a combination that cannot apply is refused.
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

# Sampled pairs (docs/placement.md, "The matrix at scale"), forced at 16 ranks on 4 emulated nodes
# of 4 (PARABENCH_TEST_RANKS_PER_NODE): every node pair's 4 rails, one cross-rail shift in each
# of the first 3 node rounds (all 3 node rounds here: shifts 1, 2, 3), every pair inside a node.
# 3 + 3 + 3 = 9 rounds, 24 + 24 + 24 = 72 of the 120 pairs, 9 peers a rank; the pairs left out
# are empty in the N x N files, never 0.
expect_rc 0 "p2p_sweep --matrix --matrix-pairs sampled, 16 ranks on 4 nodes of 4" -- \
    mpi 16 -x PARABENCH_TEST_RANKS_PER_NODE=4 "$BIN/p2p_sweep" --matrix --matrix-pairs sampled --sizes 8,4K -n 3 -w 1 \
    --json "$TMP/sampled.json" --matrix-csv "$TMP/sampled"
expect_in "$TMP/out" "# matrix: sampled pairs (the default above 64 ranks; --matrix-pairs all for every pair): 72 of the 120 pairs in 9 rounds" \
    "the output says what is sampled"
expect_in "$TMP/out" "# matrix: up to 9 peers a rank; NCCL connection buffers expected 144 MiB a rank (16 MiB a peer" \
    "and the NCCL memory a rank is expected to hold"
python3 - "$TMP/sampled.json" "$TMP/sampled-bw.csv" <<'PY' && pass "sampled: rails of every node pair, shifts 1-3, every pair inside a node, 9 rounds" || fail "sampled schedule"
import csv, json, sys
doc = json.load(open(sys.argv[1]))
meta = doc["meta"]
assert (meta["matrix_pairs"], meta["matrix_rounds"], meta["matrix_pairs_measured"], meta["matrix_pairs_every"],
        meta["matrix_peers_per_rank"], meta["nnodes"]) == ("sampled", 9, 72, 120, 9, 4), meta
assert meta["matrix_nccl_bytes_expected"] == 9 * meta["matrix_nccl_peer_bytes_expected"] == 9 * 16 * 2 ** 20, meta
lat = [r for r in doc["rows"] if r["mode"] == "latency"]
pairs = {(r["rank_a"], r["rank_b"]) for r in lat}
assert len(pairs) == len(lat) == 72, len(lat)
node, local = (lambda r: r // 4), (lambda r: r % 4)
for a in range(16):
    for b in range(a + 1, 16):
        if node(a) == node(b) or local(a) == local(b):
            assert (a, b) in pairs, (a, b)  # inside a node, or a rail of a node pair
cross = {(local(b) - local(a)) % 4 for a, b in pairs if node(a) != node(b) and local(a) != local(b)}
assert cross == {1, 2, 3}, cross
for r in lat:  # the rail column: inter-node pairs of one local rank
    want = local(r["rank_a"]) if node(r["rank_a"]) != node(r["rank_b"]) and local(r["rank_a"]) == local(r["rank_b"]) else -1
    assert r["rail"] == want, r
by_round = {}  # no rank twice in a round
for r in lat:
    by_round.setdefault(r["round"], []).extend((r["rank_a"], r["rank_b"]))
assert sorted(by_round) == list(range(9)) and all(len(v) == len(set(v)) for v in by_round.values()), by_round
m = list(csv.reader(l for l in open(sys.argv[2]) if not l.startswith("#")))
empty = sum(1 for i in range(16) for j in range(16) if i != j and m[i + 1][j + 1] == "")
assert empty == 2 * (120 - 72), empty
PY
expect_rc 0 "--matrix on 16 ranks: every pair below 65 ranks" -- mpi 16 -x PARABENCH_TEST_RANKS_PER_NODE=4 "$BIN/p2p_sweep" --matrix --sizes 8,64 -n 1 -w 0
expect_in "$TMP/out" "# matrix: every pair, 120 in 15 rounds" "the default below the threshold: every pair"
expect_rc 2 "--matrix-pairs sampled with --matrix-serial is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix-serial --matrix-pairs sampled
expect_in "$TMP/err" "--matrix-pairs: sampled does not apply to --matrix-serial" "names both"
expect_rc 2 "--matrix-pairs without --matrix is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix-pairs all
expect_in "$TMP/err" "--matrix-pairs: does not apply without --matrix" "names --matrix-pairs"
expect_rc 2 "--matrix-pairs some is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix --matrix-pairs some
expect_in "$TMP/err" "--matrix-pairs" "names --matrix-pairs"

expect_rc 2 "--matrix with --pair is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix --pair 0,1
expect_in "$TMP/err" "--pair: does not apply to --matrix" "the message names --pair and --matrix"
expect_rc 2 "--matrix with --mode is refused" -- mpi 2 "$BIN/p2p_sweep" --matrix --mode bw
expect_in "$TMP/err" "--mode: does not apply to --matrix" "the message names --mode and --matrix"
finish
