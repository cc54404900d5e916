#!/usr/bin/env bash
# Figures at scale, on fabricated results (no MPI; gnuplot, else skipped).
# The all-pairs heat map: 40 ranks on 5 nodes (ranks dealt round-robin, rank r
# on node r % 5) are drawn as the 5 x 5 node grid, p2p_matrix-{bw,latency}-nodes.csv,
# whose cells are the medians the test computes from the pairs itself (the
# diagonal: the pairs inside a node), named by host; the per-rank CSVs stay.
# 32 ranks (the limit) and 8 ranks keep per-rank cells and write no node grid.
# The report's caption says which (nodes or ranks).
# The concurrent-groups figure: in its SVG the slowest lines are dashed and the
# median lines solid, and the legend names each collective's slowest group at
# its largest size with its host (not the slowest at a smaller size).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
command -v gnuplot >/dev/null || { echo "skip: gnuplot is not installed"; exit 77; }

# matrix DIR NRANKS NNODES: p2p_matrix-{latency,bw}.csv with rank r on node r % NNODES (meta.json's
# hosts pbnode0..), node 3's pairs slower; values from a fixed seed, exact at 4 digits.
matrix() {
    python3 - "$@" <<'PY'
import json, random, sys
out, n, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(n)
hosts = [{"name": f"pbnode{k}", "ranks": [r for r in range(n) if r % nodes == k]} for k in range(nodes)]
json.dump({"machine": {"hosts": hosts}}, open(out + "/meta.json", "w"))
for which, lo, hi in (("latency", 2.0, 9.0), ("bw", 5.0, 25.0)):
    m = {}
    for a in range(n):
        for b in range(a + 1, n):
            v = rng.uniform(lo, hi) * (0.5 if 3 in (a % nodes, b % nodes) and which == "bw" else 1)
            m[a, b] = m[b, a] = float(f"{v:.4g}")
    with open(f"{out}/p2p_matrix-{which}.csv", "w") as f:
        f.write(f"# {which}\nrank," + ",".join(map(str, range(n))) + "\n")
        for a in range(n):
            f.write(f"{a}," + ",".join("" if a == b else f"{m[a, b]:g}" for b in range(n)) + "\n")
PY
}
for case in 40:5 32:4 8:2; do
    mkdir -p "$TMP/m${case%:*}"
    matrix "$TMP/m${case%:*}" "${case%:*}" "${case#*:}"
done
expect_rc 0 "report.py draws 40 ranks on 5 nodes" -- python3 "$ROOT/scripts/report.py" --quiet "$TMP/m40"
expect_rc 0 "report.py draws 8 ranks on 2 nodes" -- python3 "$ROOT/scripts/report.py" --quiet "$TMP/m8"
(cd "$ROOT/scripts" && python3 -c "import figure_data, sys; figure_data.write(sys.argv[1])" "$TMP/m32")

if python3 - "$TMP" >"$TMP/out" 2>&1 <<'PY'
import csv, os, sys
tmp = sys.argv[1]
def grid(path):
    with open(path) as f:
        return list(csv.reader(l for l in f if not l.startswith("#")))
def middle(vs):
    vs = sorted(vs)
    k = len(vs)
    return vs[k // 2] if k % 2 else (vs[k // 2 - 1] + vs[k // 2]) / 2
run = os.path.join(tmp, "m40")
for which in ("bw", "latency"):
    ranks = grid(os.path.join(run, f"p2p_matrix-{which}.csv"))
    pair = {}
    for row in ranks[1:]:
        for b, v in enumerate(row[1:]):
            if v:
                pair[int(row[0]), b] = float(v)
    nodes = grid(os.path.join(run, f"p2p_matrix-{which}-nodes.csv"))
    names = [f"pbnode{k}" for k in range(5)]
    assert nodes[0] == ["node"] + names and [r[0] for r in nodes[1:]] == names, nodes
    for i in range(5):
        for j in range(5):
            want = middle([v for (a, b), v in pair.items() if a % 5 == i and b % 5 == j and (i != j or a < b)])
            got = float(nodes[1 + i][1 + j])
            assert abs(got - want) <= 1e-5 * want, (which, i, j, got, want)
    assert len(ranks) == 41, "the per-rank CSV is kept"
for n in ("m32", "m8"):
    left = [f for f in os.listdir(os.path.join(tmp, n)) if f.endswith("-nodes.csv")]
    assert not left, (n, left)
svg40 = open(os.path.join(run, "plots", "p2p_matrix.svg")).read()
svg8 = open(os.path.join(tmp, "m8", "plots", "p2p_matrix.svg")).read()
assert ">pbnode4<" in svg40 and ">node A<" in svg40 and ">rank A<" not in svg40, "40 ranks: node cells named by host"
assert ">rank A<" in svg8 and ">node A<" not in svg8 and ">7<" in svg8, "8 ranks: rank cells"
md40, md8 = (open(os.path.join(d, "report.md")).read() for d in (run, os.path.join(tmp, "m8")))
assert "Every pair of nodes (median of its rank pairs)" in md40 and "Every pair of ranks" not in md40, "40 ranks: caption"
assert "Every pair of ranks" in md8 and "Every pair of nodes" not in md8, "8 ranks: caption"
print("40 ranks: 5 x 5 node grids with the medians recomputed here, named by host, and captioned so; 32 and 8 ranks: per rank")
PY
then pass "$(cat "$TMP/out")"
else fail "the heat map at scale"; sed 's/^/  | /' "$TMP/out" >&2; fi

# Three node groups on hosts pbnode7, pbnode3, pbnode5. At 16 MiB the slowest allreduce group is
# node2 (pbnode5) and the slowest allgather group node1 (pbnode3); at 1 MiB node0 is the slowest.
G=$TMP/groups
mark_run "$G"
{
    echo '# hosts [{"name":"pbnode7","ranks":[0,1]},{"name":"pbnode3","ranks":[2,3]},{"name":"pbnode5","ranks":[4,5]}]'
    echo "collective,bytes,nranks,nnodes,link_class,time_us,algbw_GBps,busbw_GBps,wrong,group"
    for coll in allreduce:9:10:6 allgather:8:4.5:7.5; do
        IFS=: read -r c b0 b1 b2 <<<"$coll"
        printf '%s,1048576,2,1,intra,100,1,%s,0,node%s\n' "$c" 2 0 "$c" 3 1 "$c" 3.5 2
        printf '%s,16777216,2,1,intra,100,1,%s,0,node%s\n' "$c" "$b0" 0 "$c" "$b1" 1 "$c" "$b2" 2
    done
} >"$G/coll_sweep_intra.csv"
expect_rc 0 "report.py draws three node groups" -- python3 "$ROOT/scripts/report.py" --quiet "$G"
if python3 - "$G/plots/groups.svg" >"$TMP/out" 2>&1 <<'PY'
import re, sys
svg = open(sys.argv[1]).read()
# each plot's key entry: its title text and its sample line
keys = {}
for block in re.split(r'<g id="gnuplot_plot_\d+"', svg)[1:]:
    t = re.search(r"<text>([^<]*)</text>", block)
    if t:
        keys[t.group(1)] = re.search(r"<path [^>]*stroke-dasharray='[0-9.]+,[0-9.]+'", block) is not None
want = {"allreduce median": False, "allgather median": False,
        "allreduce slowest: node2 (pbnode5)": True, "allgather slowest: node1 (pbnode3)": True}
assert keys == want, f"legend (title: dashed) {keys}, expected {want}"
print("slowest lines dashed, median lines solid; legend: node2 (pbnode5), node1 (pbnode3)")
PY
then pass "$(cat "$TMP/out")"
else fail "the groups figure"; sed 's/^/  | /' "$TMP/out" >&2; fi
finish
