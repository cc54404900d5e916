#!/usr/bin/env bash
# test-runner: exclusive (one emulated cluster per machine; shaped-link rates)
# run_all.sh --hostfile on an emulated 2-node cluster (scripts/emulate-cluster.sh,
# 2 ranks per node, 1 Gbit/s uplinks), reached through `emulate-cluster.sh env`:
# --quick exits 0, meta says 2 nodes, the sweep and the matrix have inter-node
# rows, the matrix pairs k <-> k across the nodes are on rail k, tp_layer runs
# TP 2 inside the nodes and pp_pipeline one stage per node, hybrid_3d compares
# placements, the groups summary names a slowest node, and every figure the
# report shows exists. Needs root and network namespaces: skips
# (exit 77) without them, as test_emulated_cluster.sh does. Always tears the
# cluster down.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)

command -v python3 >/dev/null || skip_test "python3 not found (parses the results)"
emu_up --nodes 2 --rate 1gbit --slots 2
pass "emulated cluster up: 2 nodes of 2 slots"
eval "$("$EMU" env)" || { fail "emulate-cluster.sh env"; finish; }
export OMPI_MCA_mpi_yield_when_idle=1 # 4 ranks on this machine's cores: idle ranks yield

RUN=$TMP/run
expect_rc 0 "run_all.sh --hostfile (2 nodes x 2) --quick" -- \
    timeout 300 env BUILD="$BUILD" "$ROOT/run_all.sh" --hostfile "$PB_EMU_HOSTFILE" --quick --bind none --no-install --quiet --out "$RUN"
[ -d "$RUN" ] || { fail "no results folder"; finish; }
python3 - "$RUN" <<'PY' && pass "2 nodes; inter-node rows; rails; TP in a node, a stage per node; placements; groups; every figure listed exists" || fail "results of the cluster run"
import csv, json, os, re, sys
run = sys.argv[1]
def rows(name):
    return list(csv.DictReader(l for l in open(os.path.join(run, name)) if l.strip() and not l.startswith("#")))
meta = json.load(open(os.path.join(run, "meta.json")))
assert meta["machine"]["nnodes"] == 2, meta["machine"].get("nnodes")
assert all(s["status"] == "ok" for s in meta["steps"]), meta["steps"]
assert any(r["link_class"] in ("inter", "mixed") for r in rows("coll_sweep.csv")), "coll_sweep: no inter-node rows"
assert any(r["link_class"] == "inter" for r in rows("p2p_sweep.csv")), "p2p_sweep: no inter-node rows"
pairs = rows("p2p_matrix-pairs.csv")
assert len(pairs) == 6 and sum(p["link_class"] == "inter" for p in pairs) == 4, pairs
rail = {(int(p["a"]), int(p["b"])): int(p["rail"]) for p in pairs}
assert rail == {(0, 1): -1, (2, 3): -1, (0, 2): 0, (1, 3): 1, (0, 3): -1, (1, 2): -1}, rail
assert len({r["placement"] for r in rows("hybrid_3d.csv")}) >= 2, "hybrid_3d: no placement comparison"
assert {r["group"] for r in rows("coll_sweep_intra.csv")} == {"node0", "node1"}
# shaped from the run's placement (suite/shapes.py): TP inside each node, one stage per node
assert meta["shapes"]["pp_pipeline"]["args"][:4] == ["--stages", "2", "--pp-stride", "2"], meta["shapes"]["pp_pipeline"]
assert {(r["tp"], r["link_class"]) for r in rows("tp_layer.csv")} == {("2", "intra")}
assert {(r["stages"], r["link_class"]) for r in rows("pp_pipeline.csv")} == {("2", "inter")}
summary = open(os.path.join(run, "summary.txt")).read()
assert re.search(r"allreduce at [0-9]+ \w+: median [0-9.]+ GB/s; slowest node[01] ", summary), summary
md = open(os.path.join(run, "report.md")).read()
figs = re.findall(r"\]\((plots/[^)]+)\)", md)
for want in ("intra_inter", "p2p_matrix", "groups"):
    assert f"plots/{want}.png" in figs, (want, figs)
missing = [f for f in figs if not os.path.exists(os.path.join(run, f))]
assert not missing, missing
PY
finish
