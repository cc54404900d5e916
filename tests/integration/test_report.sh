#!/usr/bin/env bash
# scripts/report.py on fabricated results directories (no MPI, no gnuplot:
# --no-plots): the order a cluster operator reads (acceptance verdict with its
# failing rules, headline figures against expected values, the documents'
# figures from reproduce.csv, then steps, figures, tables), the same order in
# report.md and index.html, the reproduce section's verdicts and counts, its
# absence without reproduce.csv, the PASS banner, and a page without scripts.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
R=$TMP/run
mkdir -p "$R"
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
EOF
cp -r "$R" "$TMP/norepro"
rm "$TMP/norepro/reproduce.csv"
printf 'acceptance: 2 passed, 0 failed, 0 skipped of 2 rules: PASS\n' >"$TMP/norepro/acceptance.txt"

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
assert "1 reproduced, 1 differs, 1 simulated, 1 skipped" in repro, repro
for fig in ("docs/plan.md ring all-reduce time", "README busbw", "docs/pp_pipeline.md bubble", "docs/gpu.md GEMM"):
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
finish
