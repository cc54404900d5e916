#!/usr/bin/env bash
# coll_sweep --groups: the collective in every group at once, a row per group
# and size with its group, the groups' own rank counts, validated results.
# On one machine there is one node, so node groups are the world and rail
# groups hold one rank each; the emulated-cluster test covers several nodes.
source "$(dirname "$0")/lib.sh"

for kind in world node rail; do
    expect_rc 0 "coll_sweep --groups $kind on 4 ranks" -- \
        mpi 4 "$BIN/coll_sweep" --groups $kind --coll allreduce,allgather,broadcast --sizes 64,64K -n 10 -w 1 \
        --json "$TMP/$kind.json"
    expect_in "$TMP/out" "# wrong values: 0 OK" "--groups $kind: every group's results are right"
done
python3 - "$TMP" <<'PY' && pass "rows per group, named, with the group's rank count" || fail "group rows"
import json, sys
d = sys.argv[1]
want = {"world": (["world"], 4), "node": (["node0"], 4), "rail": (["rail0", "rail1", "rail2", "rail3"], 1)}
for kind, (names, nranks) in want.items():
    doc = json.load(open(f"{d}/{kind}.json"))
    assert doc["meta"]["groups"] == kind and doc["meta"]["group_count"] == len(names), doc["meta"]
    rows = doc["rows"]
    assert len(rows) == 3 * 2 * len(names), (kind, len(rows))
    for i in range(0, len(rows), len(names)):  # each size: one row per group, in group order
        assert [r["group"] for r in rows[i:i + len(names)]] == names, (kind, rows[i:i + len(names)])
    assert all(r["nranks"] == nranks and r["wrong"] == 0 and r["iters"] == 10 for r in rows), kind
    # busbw of a 1-rank group is 0 (factor (n-1)/n); of 4 ranks, algbw x the collective's factor
    for r in rows:
        f = {"allreduce": 2 * (nranks - 1) / nranks, "allgather": (nranks - 1) / nranks, "broadcast": 1}[r["collective"]]
        assert abs(r["busbw_GBps"] - r["algbw_GBps"] * f) <= 1e-6 * max(1, r["busbw_GBps"]), r
PY
expect_rc 2 "--groups with a bad value" -- mpi 2 "$BIN/coll_sweep" --groups racks
expect_in "$TMP/err" "--groups" "the message names --groups"
expect_rc 2 "a root beyond the smallest group" -- mpi 4 "$BIN/coll_sweep" --groups rail --coll broadcast -r 1
expect_in "$TMP/err" "does not exist in every rail group" "the message says the root is outside the groups"
finish
