#!/usr/bin/env bash
# scripts/report.py on fabricated results directories (no MPI, no gnuplot:
# --no-plots): the order a cluster operator reads (acceptance verdict with its
# failing rules, headline figures against expected values, the documents'
# figures from reproduce.csv, then steps, figures, tables), the same order in
# report.md and index.html, the reproduce section's verdicts and counts, its
# absence without reproduce.csv, the PASS banner, and a page without scripts.
# Then on a 9-rank run over 3 nodes: every line of summary.txt and every cell
# of the headline table equal to what the test recomputes from the CSVs
# (busbw, not algbw; p2p bw, not bibw; the slowest group and its ratio).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
R=$TMP/run
mark_run "$R"
cat >"$R/coll_sweep.csv" <<'EOF'
# command: fabricated
collective,bytes,nranks,link_class,time_us,algbw_GBps,busbw_GBps,wrong
allreduce,8,2,intra,0.9,0.01,0.01,0
allreduce,262144,2,intra,128.8,2.036,2.036,0
# complete
EOF
cat >"$R/pp_pipeline.csv" <<'EOF'
schedule,stages,micro_batches,link_class,step_us,efficiency,efficiency_theory,bubble_fraction,peak_act_bytes,wrong
1f1b,2,8,intra,19000,0.80,0.8889,0.2,786432,0
EOF
cat >"$R/dp_allreduce.csv" <<'EOF'
nranks,link_class,grad_bytes,overlap,compute_us,comm_us,step_us,overhead,predicted_overhead,busbw_GBps,wrong
2,intra,4194304,none,4480,1191,5694,0.27,0.25,3.5,0
EOF
printf 'coll_sweep\tok\t0\t1\t\nacceptance\tfailed\t1\t0\tthresholds missed\n' >"$R/steps.tsv"
cat >"$R/acceptance.txt" <<'EOF'
 line  rule                                                             measured        threshold  result
    1  busbw coll=allreduce size=256K link=intra >= 0.2 GB/s          2.036 GB/s      >= 0.2 GB/s  PASS
    2  busbw coll=allreduce size=64K link=intra >= 500 GB/s           1.273 GB/s      >= 500 GB/s  FAIL  measured 1.273, required >= 500 GB/s
acceptance: 1 passed, 1 failed, 0 skipped of 2 rules: FAIL
EOF
cat >"$R/reproduce.csv" <<'EOF'
# reproduce: the documents' figures against this run (fabricated)
figure,unit,document_value,formula_value,measured_value,ratio,verdict,configuration,note
docs/plan.md ring all-reduce time,us,120,118,121,1.01,reproduced,n=8 64M,
README busbw,GB/s,400,410,210,0.53,differs,8 ranks,"shared <b>VM</b> | loaded"
docs/pp_pipeline.md bubble,%,11,11,,,simulated,p=4 m=32,no pipeline here
docs/gpu.md GEMM,TFLOP/s,600,,,,skipped,needs a GPU,
DP bucketing,fraction,,,,,not judged,2 ranks,2 cores for 2 ranks on a node
EOF
cp -r "$R" "$TMP/norepro"
rm "$TMP/norepro/reproduce.csv"
printf 'acceptance: 2 passed, 0 failed, 0 skipped of 2 rules: PASS\n' >"$TMP/norepro/acceptance.txt"

# Not one results directory: usage (exit 2), nothing written.
expect_rc 2 "report.py with no directory" -- python3 "$ROOT/scripts/report.py" --quiet
expect_in "$TMP/err" "report.py: give one results directory" "report.py's usage message"
expect_rc 2 "report.py on a directory that does not exist" -- python3 "$ROOT/scripts/report.py" "$TMP/no-such-run"
expect_rc 2 "report.py with two directories" -- python3 "$ROOT/scripts/report.py" "$R" "$TMP"
[ -e "$R/summary.txt" ] && fail "report.py wrote summary.txt after a usage error" || pass "a usage error writes nothing"
expect_rc 0 "report.py on a fabricated run" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$R"
expect_rc 0 "report.py without reproduce.csv" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$TMP/norepro"

if python3 - "$R" "$TMP/norepro" <<'PY'
import os, re, sys
run, norepro = sys.argv[1:]
md = open(os.path.join(run, "report.md")).read()
page = open(os.path.join(run, "index.html")).read()

def in_order(text, marks, what):
    at = [text.find(m) for m in marks]
    assert all(a >= 0 for a in at), (what, [m for m, a in zip(marks, at) if a < 0])
    assert at == sorted(at), (what, "out of order", sorted(zip(at, marks)))

in_order(md, ["**Acceptance: FAIL**", "| 2 | busbw coll=allreduce size=64K", "## Headline figures",
              "## The documents' figures", "## Steps", "## Acceptance: every rule", "## Figures", "## Tables"], "md")
in_order(page, ["Acceptance: FAIL", "busbw coll=allreduce size=64K", "id='headlines'", "id='reproduce'",
                "id='steps'", "id='acceptance'", "id='figures'", "id='tables'"], "html")
assert "<script" not in page.lower(), "the report must read without JavaScript"
# the failing rule only, in the banner's table (the passing one appears later, in every rule)
head = md[:md.index("## Headline figures")]
assert "size=256K" not in head, "a passing rule in the failing-rules table"
assert "1 passed, 1 failed, 0 skipped of 2 rules" in head, head
# headline figures with their expected values
assert re.search(r"\| pipeline efficiency, 1f1b, m=8, p=2 \| 0\.80 \| 0\.89 \| 90% \| m/\(m\+p-1\) \|", md), md
assert re.search(r"\| data-parallel overhead, 4 MiB of gradients, overlap none \| 27% \| 25% \| 108% \|", md), md
# the documents' figures: every row, verdict counts, '#' lines skipped, cells escaped
repro = md[md.index("## The documents' figures"):md.index("## Steps")]
assert "1 reproduced, 1 differs, 1 not judged, 1 simulated, 1 skipped" in repro, repro
for fig in ("docs/plan.md ring all-reduce time", "README busbw", "docs/pp_pipeline.md bubble", "docs/gpu.md GEMM",
            "DP bucketing"):
    assert fig in repro, fig
assert "fabricated" not in repro, "a '#' line was read as a row"
assert "shared &lt;b&gt;VM&lt;/b&gt; \\| loaded" in repro, repro
assert "<td class='differs'>differs</td>" in page and "<td class='reproduced'>reproduced</td>" in page, "verdict colours"
assert "<b>VM</b>" not in page, "a CSV cell reached the page unescaped"
# without reproduce.csv: no such section; a PASS banner
md2 = open(os.path.join(norepro, "report.md")).read()
page2 = open(os.path.join(norepro, "index.html")).read()
assert "documents' figures" not in md2 and "id='reproduce'" not in page2, "reproduce section without reproduce.csv"
assert "**Acceptance: PASS**: 2 passed, 0 failed, 0 skipped of 2 rules" in md2, md2[:600]
assert "banner pass" in page2 and "banner fail" not in page2
PY
then pass "order (verdict, headlines, documents' figures, details) in report.md and index.html; reproduce section"
else fail "report order or reproduce section"; fi
expect_in "$R/summary.txt" "PP efficiency at m=8, p=2: 1f1b 0.80 vs theory 0.89 (90%)" "summary.txt keeps its lines"
# ---- every headline number against the CSVs: a 9-rank run over 3 nodes (algbw != busbw), its
# 3 node groups (distinct busbw; the slowest at the largest size is not the slowest at 1 MiB), p2p
# with bw below bibw, and every other headline source. The expected lines and cells are computed
# here from the CSVs; run_all.sh prints summary.txt as its end-of-run summary.
H=$TMP/headlines
mark_run "$H"
cat >"$H/coll_sweep.csv" <<'EOF'
# command: fabricated, 9 ranks on 3 nodes
collective,bytes,nranks,nnodes,link_class,time_us,algbw_GBps,busbw_GBps,wrong,group
allreduce,8,9,3,inter,45.2,0.0002,0.0003,0,world
allreduce,1048576,9,3,inter,2100.5,0.4992,0.8875,0,world
allreduce,16777216,9,3,inter,24500,0.6848,1.2174,0,world
allgather,16777216,9,3,inter,15000,1.1185,0.9942,0,world
# complete
EOF
cat >"$H/coll_sweep_intra.csv" <<'EOF'
collective,bytes,nranks,nnodes,link_class,time_us,algbw_GBps,busbw_GBps,wrong,group
allreduce,8,3,1,intra,6.0,0.0013,0.0018,0,node0
allreduce,8,3,1,intra,6.0,0.0013,0.0018,0,node1
allreduce,8,3,1,intra,6.0,0.0013,0.0018,0,node2
allreduce,1048576,3,1,intra,400,2.6214,3.4953,0,node0
allreduce,1048576,3,1,intra,300,3.4953,4.6603,0,node1
allreduce,1048576,3,1,intra,320,3.2768,4.3691,0,node2
allreduce,16777216,3,1,intra,3000,5.5924,7.4565,0,node0
allreduce,16777216,3,1,intra,4800,3.4953,4.6603,0,node1
allreduce,16777216,3,1,intra,3300,5.0840,6.7787,0,node2
allgather,16777216,3,1,intra,2100,7.9892,5.3261,0,node0
allgather,16777216,3,1,intra,2000,8.3886,5.5924,0,node1
allgather,16777216,3,1,intra,2600,6.4528,4.3019,0,node2
EOF
cat >"$H/p2p_sweep.csv" <<'EOF'
mode,bytes,rank_a,rank_b,link_class,time_us,bw_GBps,wrong
latency,8,0,3,inter,12.5,0.0006,0
latency,1024,0,3,inter,15.25,0.0671,0
bw,1048576,0,3,inter,9000,0.1165,0
bw,4194304,0,3,inter,35800,0.1172,0
bibw,1048576,0,3,inter,4600,0.4559,0
bibw,4194304,0,3,inter,17900,0.4686,0
EOF
cat >"$H/dp_allreduce.csv" <<'EOF'
nranks,link_class,grad_bytes,overlap,compute_us,comm_us,step_us,overhead,predicted_overhead,busbw_GBps,wrong
9,inter,1048576,none,4480,300,4780,0.067,0.06,1.2,0
9,inter,4194304,none,4480,1210,5690,0.27,0.25,1.2,0
9,inter,4194304,bucket,4480,1210,4880,0.089,0.25,1.2,0
EOF
cat >"$H/tp_layer.csv" <<'EOF'
tp,link_class,mode,hidden,compute_us,comm_us,step_us,comm_fraction,comm_bytes_per_rank,speedup,wrong
3,intra,allreduce,256,100,40,140,0.286,174763,1.9,0
3,intra,allreduce,512,300,90,390,0.231,349525,2.3,0
3,intra,sp,512,300,80,380,0.211,349525,2.4,0
EOF
cat >"$H/pp_pipeline.csv" <<'EOF'
schedule,stages,micro_batches,link_class,step_us,efficiency,efficiency_theory,bubble_fraction,peak_act_bytes,wrong
1f1b,3,4,intra,30000,0.6,0.6667,0.4,786432,0
gpipe,3,4,intra,31000,0.58,0.6667,0.42,1572864,0
1f1b,3,8,intra,50000,0.75,0.8,0.25,786432,0
gpipe,3,8,intra,52000,0.72,0.8,0.28,3145728,0
EOF
cat >"$H/fsdp_step.csv" <<'EOF'
nranks,shard_group,replicas,link_class,prefetch,compute_us,comm_us,step_us,exposed_us,overhead,predicted_exposed_us,dp_overhead,wrong
9,3,3,intra,off,8000,2400,10400,2400,0.3,2200,0.125,0
9,3,3,intra,on,8000,2400,8800,800,0.1,640,0.125,0
EOF
cat >"$H/cp_attention.csv" <<'EOF'
nranks,cp,link_class,seq,overlap,compute_us,comm_us,step_us,exposed_us,overhead,predicted_exposed_us,transfer_bytes,wrong
9,3,intra,384,off,5000,2000,7000,2000,0.4,2100,65536,0
9,3,intra,384,on,5000,2000,5500,500,0.1,300,65536,0
EOF
cat >"$H/moe_layer.csv" <<'EOF'
nranks,ep_group,link_class,model,skew,imbalance,step_us,dispatch_us,combine_us,a2a_share,dispatch_vs_even,bw_vs_even,slowest_rank,predicted_step_us,wrong
9,3,intra,tiny-moe,1,1,10000,500,600,0.11,1.01,0.99,2,9000,0
9,3,intra,tiny-moe,2,1.5,12000,800,900,0.14,1.45,0.7,0,10000,0
9,9,mixed,tiny-moe,1,1,11000,900,1000,0.17,0.98,1.02,4,10500,0
9,9,mixed,tiny-moe,2,1.8,15000,1700,1800,0.23,1.9,0.55,0,13000,0
EOF
cat >"$H/plan_fit.csv" <<'EOF'
benchmark,row,predicted_us,measured_us,rel_error
coll_sweep,allreduce 1M,1500,2100.5,-0.2859
dp_allreduce,none 4M,5000,5690,-0.1213
pp_pipeline,1f1b m=8,20000,17000,0.1765
tp_layer,t=3 h=512,0,0,nan
hybrid_3d,t=3 p=3,,,
EOF
expect_rc 0 "report.py on a 9-rank run with groups and every headline source" -- \
    python3 "$ROOT/scripts/report.py" --quiet --no-plots "$H"
if python3 - "$H" >"$TMP/heads" 2>&1 <<'PY'
import csv, os, statistics, sys
run = sys.argv[1]
def rows(name):
    with open(os.path.join(run, name + ".csv")) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))
def v(r, k):
    return float(r[k])
SIZE = {8: "8 B", 1024: "1 KiB", 1048576: "1 MiB", 4194304: "4 MiB", 16777216: "16 MiB"}
def size(r, k="bytes"):
    return SIZE[int(r[k])]
lines, cells = [], {}  # summary.txt, in order; the headline table: figure -> (measured, expected, ratio)
coll = rows("coll_sweep") + rows("coll_sweep_intra")
for link in ("intra", "inter"):
    ar = [r for r in coll if r["collective"] == "allreduce" and r["link_class"] == link]
    peak = max(ar, key=lambda r: v(r, "busbw_GBps"))  # bus bandwidth, not algbw: they differ on 3 and 9 ranks
    small = min(ar, key=lambda r: v(r, "bytes"))
    lines.append(f"allreduce busbw, {link}-node: {v(peak, 'busbw_GBps'):.2f} GB/s peak at {size(peak)} "
                 f"({peak['nranks']} ranks); {v(small, 'time_us'):.1f} us at {size(small)}")
    cells[f"allreduce bus bandwidth, {link}-node, peak ({size(peak)}, {peak['nranks']} ranks)"] = (
        f"{v(peak, 'busbw_GBps'):.2f} GB/s", "-", "-")
    cells[f"allreduce time, {link}-node, {size(small)}"] = (f"{v(small, 'time_us'):.2f} us", "-", "-")
p2p = rows("p2p_sweep")
lat = min((r for r in p2p if r["mode"] == "latency"), key=lambda r: v(r, "bytes"))
uni = max((r for r in p2p if r["mode"] == "bw"), key=lambda r: v(r, "bw_GBps"))  # one direction, not bibw
lines.append(f"p2p (inter): {v(lat, 'time_us'):.2f} us at {size(lat)}; {v(uni, 'bw_GBps'):.2f} GB/s at {size(uni)}")
cells[f"point-to-point latency, inter, {size(lat)}"] = (f"{v(lat, 'time_us'):.2f} us", "-", "-")
cells[f"point-to-point bandwidth, inter, {size(uni)}"] = (f"{v(uni, 'bw_GBps'):.2f} GB/s", "-", "-")
dp = rows("dp_allreduce")
big = max(v(r, "grad_bytes") for r in dp)
at = [r for r in dp if v(r, "grad_bytes") == big]
lines.append(f"DP overhead at {size(at[0], 'grad_bytes')} of gradients: " + ", ".join(
    f"{r['overlap']} {100 * v(r, 'overhead'):.0f}% (predicted {100 * v(r, 'predicted_overhead'):.0f}%)" for r in at))
for r in at:
    cells[f"data-parallel overhead, {size(r, 'grad_bytes')} of gradients, overlap {r['overlap']}"] = (
        f"{100 * v(r, 'overhead'):.0f}%", f"{100 * v(r, 'predicted_overhead'):.0f}%",
        f"{100 * v(r, 'overhead') / v(r, 'predicted_overhead'):.0f}%")
tp = rows("tp_layer")
h = max(int(r["hidden"]) for r in tp)
at = [r for r in tp if int(r["hidden"]) == h]
lines.append(f"TP communication fraction at h={h} (t={at[0]['tp']}): "
             + ", ".join(f"{r['mode']} {100 * v(r, 'comm_fraction'):.0f}%" for r in at))
for r in at:
    cells[f"tensor-parallel communication fraction, h={h}, t={r['tp']}, {r['mode']}"] = (
        f"{100 * v(r, 'comm_fraction'):.0f}%", "-", "-")
pp = rows("pp_pipeline")
last = {}
for r in pp:  # each schedule at its most micro-batches
    if r["schedule"] not in last or v(r, "micro_batches") > v(last[r["schedule"]], "micro_batches"):
        last[r["schedule"]] = r
lines.append("PP efficiency at m=8, p=3: " + ", ".join(
    f"{s} {v(r, 'efficiency'):.2f} vs theory {v(r, 'efficiency_theory'):.2f} "
    f"({100 * v(r, 'efficiency') / v(r, 'efficiency_theory'):.0f}%)" for s, r in last.items()))
for s, r in last.items():
    cells[f"pipeline efficiency, {s}, m={r['micro_batches']}, p={r['stages']}"] = (
        f"{v(r, 'efficiency'):.2f}", f"{v(r, 'efficiency_theory'):.2f}",
        f"{100 * v(r, 'efficiency') / v(r, 'efficiency_theory'):.0f}%")
fs = rows("fsdp_step")  # exposed over compute, against the step model's exposed over the same compute
lines.append(f"FSDP exposed communication over compute (shard group of 3 x 3 replicas): " + ", ".join(
    f"prefetch {r['prefetch']} {100 * v(r, 'overhead'):.0f}% "
    f"(predicted {100 * v(r, 'predicted_exposed_us') / v(r, 'compute_us'):.0f}%)" for r in fs)
    + f"; DP's all-reduce of the same gradient {100 * v(fs[0], 'dp_overhead'):.0f}%")
for r in fs:
    e = v(r, "predicted_exposed_us") / v(r, "compute_us")
    cells[f"FSDP exposed communication over compute, shard group of 3 x 3 replicas, prefetch {r['prefetch']}"] = (
        f"{100 * v(r, 'overhead'):.0f}%", f"{100 * e:.0f}%", f"{100 * v(r, 'overhead') / e:.0f}%")
cp = rows("cp_attention")
lines.append(f"CP exposed communication over compute (rings of 3, 384 tokens): " + ", ".join(
    f"overlap {r['overlap']} {100 * v(r, 'overhead'):.0f}% "
    f"(predicted {100 * v(r, 'predicted_exposed_us') / v(r, 'compute_us'):.0f}%)" for r in cp))
for r in cp:
    e = v(r, "predicted_exposed_us") / v(r, "compute_us")
    cells[f"CP exposed communication over compute, rings of 3, 384 tokens, overlap {r['overlap']}"] = (
        f"{100 * v(r, 'overhead'):.0f}%", f"{100 * e:.0f}%", f"{100 * v(r, 'overhead') / e:.0f}%")
moe, parts = rows("moe_layer"), []
for g in ("3", "9"):  # each EP group: the skewed dispatch against the rank imbalance, the uniform row's share
    even, hot = [r for r in moe if r["ep_group"] == g]
    parts.append(f"EP group of {g}: dispatch at skew {hot['skew']} {v(hot, 'dispatch_vs_even'):.2f}x uniform (rank "
                 f"imbalance {v(hot, 'imbalance'):.2f}), all-to-alls {100 * v(even, 'a2a_share'):.0f}% of the layer")
    cells[f"MoE dispatch under skew 2 over uniform, EP group of {g}"] = (
        f"{v(hot, 'dispatch_vs_even'):.2f} x", f"{v(hot, 'imbalance'):.2f} x",
        f"{100 * v(hot, 'dispatch_vs_even') / v(hot, 'imbalance'):.0f}%")
    cells[f"MoE all-to-alls' share of the layer, EP group of {g}, uniform load"] = (
        f"{100 * v(even, 'a2a_share'):.0f}%", "-", "-")
lines.append("MoE layer of tiny-moe: " + "; ".join(parts))
fit = [abs(v(r, "rel_error")) for r in rows("plan_fit") if r["rel_error"] not in ("", "nan")]  # no error: no data
lines.append(f"plan --fit: median |error| {100 * statistics.median(fit):.0f}% over {len(fit)} rows")
cells[f"plan --fit: median |predicted - measured| / measured, {len(fit)} rows"] = (
    f"{100 * statistics.median(fit):.0f}%", "-", "-")
groups = rows("coll_sweep_intra")
lines.append("groups (coll_sweep_intra.csv, 3 groups), at each collective's largest size: "
             "median group busbw, slowest group, ratio")
for c in ("allreduce", "allgather"):
    cr = [r for r in groups if r["collective"] == c]
    top = max(v(r, "bytes") for r in cr)
    at = {r["group"]: v(r, "busbw_GBps") for r in cr if v(r, "bytes") == top}
    slow = min(at, key=at.get)
    med = statistics.median(at.values())
    lines.append(f"{c} at {SIZE[int(top)]}: median {med:.3f} GB/s; slowest {slow} {at[slow]:.3f} GB/s; "
                 f"ratio {at[slow] / med:.2f}")
got = open(os.path.join(run, "summary.txt")).read().splitlines()
for w, g in zip(lines, got):
    assert w == g, f"summary.txt:\n  got  {g}\n  want {w}"
assert len(got) == len(lines), f"summary.txt has {len(got)} lines, expected {len(lines)}:\n" + "\n".join(got)
md = open(os.path.join(run, "report.md")).read()
start = md.index("## Headline figures")
shown = {}
for l in md[start:md.index("\n## ", start)].splitlines()[4:]:
    if l.startswith("| "):
        c = [x.replace("\\|", "|") for x in l[2:-2].split(" | ")]
        shown[c[0]] = tuple(c[1:4])
for fig in cells.keys() | shown.keys():
    assert cells.get(fig) == shown.get(fig), f"headline '{fig}': shown {shown.get(fig)}, expected {cells.get(fig)}"
print(f"{len(lines)} summary lines and {len(cells)} headline figures as recomputed from the CSVs")
PY
then pass "$(cat "$TMP/heads")"
else fail "headlines against the CSVs"; sed 's/^/  | /' "$TMP/heads" >&2; fi
# Figures: a gnuplot that fails (exit 3, no PNG) leaves a note naming its exit and log, and so
# does one that exits 0 with no PNG; a "skip:" line leaves its reason, a drawn PNG is shown; a
# stand-in gnuplot does each by script name.
G=$TMP/gnuplot-bin; mkdir -p "$G"; cp -r "$R" "$TMP/drawn"
cat >"$G/gnuplot" <<'SH'
#!/bin/sh
name=$(basename "$2" .gp)
case $name in
    busbw) mkdir -p "$3/plots" && : >"$3/plots/busbw.png" ;;
    latency) echo "skip: latency: no latency rows in this run" ;;
    algbw_busbw) exit 0 ;;
    *) echo "stand-in: $name fails" >&2; exit 3 ;;
esac
SH
chmod +x "$G/gnuplot"
PATH="$G:$PATH" expect_rc 0 "report.py with a failing gnuplot" -- python3 "$ROOT/scripts/report.py" --quiet "$TMP/drawn"
expect_in "$TMP/drawn/report.md" "not drawn: gnuplot failed (exit 3); see plots/gnuplot.log" "a failed figure: note with exit and log"
expect_in "$TMP/drawn/report.md" "not drawn: no latency rows in this run" "a skipped figure: its reason"
expect_in "$TMP/drawn/report.md" "not drawn: gnuplot failed (exit 0); see plots/gnuplot.log" "a figure gnuplot did not draw (exit 0): a note"
expect_in "$TMP/drawn/report.md" "/busbw.png" "a drawn figure is shown"
expect_in "$TMP/drawn/plots/gnuplot.log" "stand-in: dp_overhead fails" "gnuplot.log keeps the failing script's output"
expect_in "$TMP/drawn/plots/gnuplot.log" "== dp_overhead (exit 3)" "gnuplot.log names the script and its exit"
# No gnuplot at all (a GPU node, a container): every figure says so in one sentence, and the report
# is written all the same. A PATH of links to every command but gnuplot.
NG=$TMP/no-gnuplot; mkdir -p "$NG"; cp -r "$R" "$TMP/nognu"; rm -rf "$TMP/nognu/plots"
IFS=: read -r -a dirs <<<"$PATH"
for d in "${dirs[@]}"; do for f in "$d"/*; do
    n=${f##*/}; [ -e "$f" ] && [ "$n" != gnuplot ] && [ ! -e "$NG/$n" ] && ln -s "$f" "$NG/$n"; done; done
PATH="$NG" expect_rc 0 "report.py without gnuplot" -- python3 "$ROOT/scripts/report.py" "$TMP/nognu"
n=$(grep -c '^_not drawn: gnuplot is not installed (not on PATH)_$' "$TMP/nognu/report.md")
[ "$n" -ge 8 ] && ! grep -q 'Errno' "$TMP/nognu/report.md" && pass "no gnuplot: $n figures say so, once each" ||
    fail "no gnuplot: $n figures say 'gnuplot is not installed': $(grep -m2 'not drawn' "$TMP/nognu/report.md")"
expect_in "$TMP/err" "report: gnuplot is not installed (not on PATH): no figure drawn; the tables are in report.md" "no gnuplot: said once on stderr"
# A figure its benchmark marks untrustworthy ("# note: untrustworthy: ...") is shown as such in
# summary.txt and the headline table, never as a finding; the trustworthy one beside it is not.
U=$TMP/untrusted
mkdir -p "$U"
cat >"$U/dp_allreduce.csv" <<'EOF'
nranks,link_class,grad_bytes,overlap,compute_us,comm_us,step_us,overhead,predicted_overhead,busbw_GBps,wrong
2,intra,4194304,none,4480,1191,5694,0.27,0.25,3.5,0
2,intra,4194304,bucket,10,1191,36.9,2.69,0.25,3.5,0
# note: untrustworthy: overhead 2.690 (grad 4194304 B, overlap bucket): exposed = step - compute = 26.9 us: within the spread of the step times; use more iterations (-n) or a bigger model
EOF
cat >"$U/pp_pipeline.csv" <<'EOF'
schedule,stages,micro_batches,link_class,step_us,efficiency,efficiency_theory,bubble_fraction,peak_act_bytes,wrong
1f1b,2,8,intra,19000,1.20,0.8889,0.2,786432,0
# note: untrustworthy: efficiency 1.200 (1f1b, m=8): above 1 (the step measured shorter than the compute it holds); use more iterations (-n) or a bigger model
EOF
cat >"$U/fsdp_step.csv" <<'EOF'
nranks,shard_group,replicas,link_class,prefetch,compute_us,comm_us,step_us,exposed_us,overhead,predicted_exposed_us,dp_overhead,wrong
2,2,1,intra,off,8000,2400,10400,2400,0.3,2200,0.125,0
2,2,1,intra,on,8000,2400,7900,-100,-0.0125,640,0.125,0
# note: untrustworthy: overhead -0.013 (prefetch on, shard group 2): exposed = step - compute = -100 us: negative (the step measured shorter than its compute); use more iterations (-n) or a bigger model
EOF
cat >"$U/cp_attention.csv" <<'EOF'
nranks,cp,link_class,seq,overlap,compute_us,comm_us,step_us,exposed_us,overhead,predicted_exposed_us,transfer_bytes,wrong
2,2,intra,256,off,5000,2000,7000,2000,0.4,2100,65536,0
2,2,intra,256,on,5000,2000,5100,100,0.02,300,65536,0
# note: untrustworthy: overhead 0.020 (overlap on, cp 2): exposed = step - compute = 100 us: within the spread (max - min) of the times it is taken from; use more iterations (-n) or a longer sequence
EOF
printf 'dp_allreduce\tok\t0\t1\t\n' >"$U/steps.tsv"
expect_rc 0 "report.py with untrustworthy rows" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$U"
expect_in "$U/summary.txt" "bucket 269% (untrustworthy: exposed = step - compute = 26.9 us: within the spread of the step times)" \
    "summary.txt: the untrustworthy DP overhead says so, with why"
expect_in "$U/summary.txt" "none 27% (predicted 25%)" "summary.txt: the trustworthy DP overhead is a finding"
expect_in "$U/summary.txt" "1f1b 1.20 vs theory 0.89 (untrustworthy: above 1" "summary.txt: the untrustworthy PP efficiency says so"
expect_in "$U/report.md" "overlap bucket (untrustworthy: exposed = step - compute" "report.md: the headline row says untrustworthy"
expect_in "$U/summary.txt" "prefetch off 30% (predicted 28%), prefetch on -1% (untrustworthy: exposed = step - compute = -100 us: negative (the step measured shorter than its compute))" \
    "summary.txt: the untrustworthy FSDP exposure says so, the trustworthy one is a finding"
expect_in "$U/summary.txt" "overlap off 40% (predicted 42%), overlap on 2% (untrustworthy: exposed = step - compute = 100 us: within the spread" \
    "summary.txt: the untrustworthy CP exposure says so, the trustworthy one is a finding"
if grep -F "overlap bucket" "$U/report.md" | grep -qF "1076%"; then
    fail "report.md: an untrustworthy figure still has a measured / expected ratio"
else pass "report.md: no ratio for an untrustworthy figure"; fi
expect_in "$U/index.html" "overlap bucket (untrustworthy" "index.html: the headline row says untrustworthy"

# A table of more rows than the report shows (60): exactly the first 60, and a note with the total.
L=$TMP/long
mkdir -p "$L"
{ echo "collective,bytes,nranks,link_class,time_us,algbw_GBps,busbw_GBps,wrong"
  for i in $(seq 1 61); do echo "allreduce,$((i * 8)),2,intra,1.$i,0.0$i,0.0$i,0"; done
  echo "# complete"; } >"$L/coll_sweep.csv"
printf 'coll_sweep\tok\t0\t1\t\n' >"$L/steps.tsv"
expect_rc 0 "report.py with a 61-row table" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$L"
shown=$(awk '/^### coll_sweep.csv/ {t = 1; next} t && /^\| allreduce/ {n++} t && /^#/ {t = 0} END {print n + 0}' "$L/report.md")
if [ "$shown" = 60 ]; then pass "report.md: the first 60 rows of a 61-row table"
else fail "report.md: $shown rows of a 61-row table shown, expected 60"; fi
expect_in "$L/report.md" "the first 60 of 61 rows; every row is in coll_sweep.csv" "report.md: the note gives the total"

# A p2p sweep of one size (p2p_sweep -b 8 -e 8): one latency row and one bw row make the headline.
P=$TMP/onesize
mkdir -p "$P"
cat >"$P/p2p_sweep.csv" <<'EOF'
mode,bytes,rank_a,rank_b,link_class,time_us,bw_GBps,wrong
latency,8,0,1,intra,0.75,0.0107,0
bw,8,0,1,intra,0.2,0.04,0
# complete
EOF
printf 'p2p_sweep\tok\t0\t1\t\n' >"$P/steps.tsv"
expect_rc 0 "report.py on a one-size p2p sweep" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$P"
expect_in "$P/summary.txt" "p2p (intra): 0.75 us at 8 B; 0.04 GB/s at 8 B" "summary.txt: the one-size p2p headline"
finish
