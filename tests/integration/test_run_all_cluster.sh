#!/usr/bin/env bash
# test-runner: exclusive (one emulated cluster per machine; shaped-link rates)
# run_all.sh --hostfile on an emulated 4-node cluster (scripts/emulate-cluster.sh,
# 2 ranks per node, 1 Gbit/s uplinks), reached through `emulate-cluster.sh env`:
# --quick exits 0, meta says 4 nodes, the sweep and the matrix have inter-node
# rows, the matrix pairs across nodes are on the rail of their local rank,
# tp_layer runs TP 2 inside every node at once with a row naming the slowest
# of the 4 TP groups, pp_pipeline one stage per node (4 stages, 2 replicas),
# hybrid_3d compares placements, the groups summary names a slowest node, and
# every figure the report shows exists. Then one node's uplink is slowed to a
# quarter (`emulate-cluster.sh slow`): the all-pairs matrix, one rank per
# node, finds that node's pairs slow and the report's suspects section names
# it first. Needs root and network namespaces: skips (exit 77) without them,
# as test_emulated_cluster.sh does. Always tears the cluster down.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)

command -v python3 >/dev/null || skip_test "python3 not found (parses the results)"
emu_up --nodes 4 --rate 1gbit --slots 2
pass "emulated cluster up: 4 nodes of 2 slots"
eval "$("$EMU" env)" || { fail "emulate-cluster.sh env"; finish; }
export OMPI_MCA_mpi_yield_when_idle=1 # 8 ranks on this machine's cores: idle ranks yield

RUN=$TMP/run
expect_rc 0 "run_all.sh --hostfile (4 nodes x 2) --quick" -- \
    timeout 400 env BUILD="$BUILD" "$ROOT/run_all.sh" --hostfile "$PB_EMU_HOSTFILE" --quick --bind none --no-install --quiet --out "$RUN"
[ -d "$RUN" ] || { fail "no results folder"; finish; }
python3 - "$RUN" <<'PY' && pass "4 nodes; inter-node rows; rails; TP in every node with its slowest group; a stage per node; placements; groups; every figure listed exists" || fail "results of the cluster run"
import csv, json, os, re, sys
run = sys.argv[1]
def rows(name):
    return list(csv.DictReader(l for l in open(os.path.join(run, name)) if l.strip() and not l.startswith("#")))
meta = json.load(open(os.path.join(run, "meta.json")))
assert meta["machine"]["nnodes"] == 4, meta["machine"].get("nnodes")
assert all(s["status"] == "ok" for s in meta["steps"]), meta["steps"]
assert any(r["link_class"] in ("inter", "mixed") for r in rows("coll_sweep.csv")), "coll_sweep: no inter-node rows"
assert any(r["link_class"] == "inter" for r in rows("p2p_sweep.csv")), "p2p_sweep: no inter-node rows"
pairs = rows("p2p_matrix-pairs.csv")
assert len(pairs) == 28 and sum(p["link_class"] == "inter" for p in pairs) == 24, pairs
# ranks 2k, 2k+1 on node k: a pair across nodes with the same local rank is on that rail
want = {(a, b): (a % 2 if a // 2 != b // 2 and a % 2 == b % 2 else -1) for a in range(8) for b in range(a + 1, 8)}
rail = {(int(p["a"]), int(p["b"])): int(p["rail"]) for p in pairs}
assert rail == want, rail
assert len({r["placement"] for r in rows("hybrid_3d.csv")}) >= 2, "hybrid_3d: no placement comparison"
assert {r["group"] for r in rows("coll_sweep_intra.csv")} == {"node0", "node1", "node2", "node3"}
# shaped from the run's placement (suite/shapes.py): TP inside each node, one stage per node
pp_args = meta["shapes"]["pp_pipeline"]["args"]
assert pp_args[pp_args.index("--stages"):][:4] == ["--stages", "4", "--pp-stride", "2"], meta["shapes"]["pp_pipeline"]
tp = rows("tp_layer.csv")
assert {(r["tp"], r["groups"], r["link_class"]) for r in tp} == {("2", "4", "intra")}, tp
for r in tp:  # the slowest of the 4 TP groups, on its node
    assert r["slowest_group_hosts"] == "pbnode%d" % int(r["slowest_group"]), r
    assert float(r["median_group_step_us"]) <= float(r["slowest_group_step_us"]), r
assert {(r["stages"], r["link_class"]) for r in rows("pp_pipeline.csv")} == {("4", "inter")}
summary = open(os.path.join(run, "summary.txt")).read()
assert re.search(r"allreduce at [0-9]+ \w+: median [0-9.]+ GB/s; slowest node[0-3] ", summary), summary
md = open(os.path.join(run, "report.md")).read()
figs = re.findall(r"\]\((plots/[^)]+)\)", md)
for want in ("intra_inter", "p2p_matrix", "groups"):
    assert f"plots/{want}.png" in figs, (want, figs)
missing = [f for f in figs if not os.path.exists(os.path.join(run, f))]
assert not missing, missing
PY

# One bad uplink: node 2 at a quarter of the others' rate. One rank per node, so
# that the matrix alone judges the links (no node groups: on this one machine
# the emulated nodes share its cores, and concurrent node groups measure the
# scheduler, not the nodes). One size, 1 MiB, for the latency as well as the
# bandwidth: an 8-byte latency on shared cores is the scheduler's too (a
# loaded run once flagged every pair of node 3 by it), a 1 MiB one is the link's.
expect_rc 0 "emulate-cluster.sh slow 2 250mbit" -- "$EMU" slow 2 250mbit
expect_in "$TMP/err" "pbnode2's uplink now 250mbit" "slow: says the rate it set"
# What the kernel shapes to, read back from tc by status: 250 Mbit/s (not 2^20-based) on node 2 only.
expect_rc 0 "emulate-cluster.sh status after slow" -- "$EMU" status
expect_in "$TMP/out" "pbnode2 198.18.0.3: uplink 250Mbit;" "status: node 2 shaped to 250 Mbit/s"
expect_in "$TMP/out" "pbnode1 198.18.0.2: uplink 1Gbit;" "status: node 1 still at the cluster's 1 Gbit/s"
S=$TMP/slow
mkdir -p "$S"
expect_rc 0 "p2p_sweep --matrix, 4 nodes x 1, node 2 slowed" -- timeout 200 mpirun --hostfile "$PB_EMU_HOSTFILE" \
    -np 4 --npernode 1 "$BIN/p2p_sweep" --matrix --sizes 1M --max-seconds-per-size 1 \
    --matrix-csv "$S/p2p_matrix" --json "$S/p2p_matrix.json"
mark_run "$S"  # what report.py reads is a run's folder (the matrix written, it is one)
expect_rc 0 "report.py on the slowed matrix" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$S"
python3 - "$S" <<'PY' && pass "the slowed node ranked first: all its pairs slow, in the report's suspects section" || fail "suspects after slowing node 2"
import csv, os, re, sys
out = sys.argv[1]
ranked = list(csv.DictReader(l for l in open(os.path.join(out, "suspects.csv")) if not l.startswith("#")))
assert ranked[0]["host"] == "pbnode2", ranked
assert "3 of 3 matrix pairs slow" in ranked[0]["reasons"], ranked[0]
# first, and alone at the top (a loaded machine may flag another pair by its latency, never all of a node's)
assert float(ranked[0]["score"]) > 1.0 and all(float(r["score"]) < float(ranked[0]["score"]) for r in ranked[1:]), ranked
md = open(os.path.join(out, "report.md")).read()
section = md[md.index("## Suspects"):]
assert re.search(r"hosts have a score above 1\.0: pbnode2[,.]", section), section  # named first
assert "pbnode2" not in open(os.path.join(out, "good-hosts.txt")).read()
PY
finish
