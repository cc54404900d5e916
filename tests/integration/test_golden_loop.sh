#!/usr/bin/env bash
# The operator's loop (docs/acceptance.md, "The golden-run loop") on one real
# run made here (run_all.sh --quick --np 2, a few steps), reused for every check:
#  - acceptance --derive writes one rule per headline figure, each with the
#    measured value, the run and its date; the file passes on its own run and
#    fails on a copy with one link slowed, on that link's rules only; a row with
#    wrong data is left out as a comment; bad input (not a run, an output among
#    the inputs or inside a run, a bad margin, a run with nothing measured) is
#    refused and writes nothing;
#  - parabench-compare (scripts/compare-runs.py): the run against itself, all
#    "same", exit 0; against the slowed copy, "worse" for the slowed link's
#    bandwidth and "same" for every other figure, exit 1, with its CSV, JSON (the
#    same fields), HTML page and overlay figures; runs of another shape, a run
#    missing a step, a folder that is not a run, an output that is an input:
#    exit 2, nothing written;
#  - run_all.sh --baseline RUN (two short runs, one step each): against a copy of
#    the golden run's p2p_sweep made 100 times as fast, the report's verdict
#    section says WORSE and lists the slowed figures, compare/ holds the
#    comparison, and the run still exits 0; against a baseline that measured
#    another step, or of another shape, the comparison is refused, the report
#    says why and the run exits 0; a baseline that is not a finished run, or is the run's own --out,
#    is refused up front (exit 2, naming --baseline).
# One link slowed for real needs the emulated cluster (root, network namespaces,
# one user at a time: test_emulated_cluster.sh); here the slowed run is a copy of
# the real one whose p2p_sweep.csv and p2p_matrix.csv (the one pair's link) are
# doctored: every time 100 times as long, every bandwidth a hundredth (a link
# fallen from 10 Gbit/s to 100 Mbit/s; compare's noise is each run's own spread,
# which on a loaded 2-core machine can reach 90% of a figure: a smaller factor
# would be "same within the noise" there, as it should). The doctored files are
# exempt from the invariants check (their JSON still holds the real values).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
ACC=$BIN/acceptance
[ -x "$ACC" ] || { echo "FAIL: $ACC not built" >&2; exit 1; }
command -v python3 >/dev/null || skip_test "python3 not found"

G=$TMP/golden
BUILD=$BUILD timeout 300 "$ROOT/run_all.sh" --quick --np 2 --no-install --quiet --out "$G" \
    --steps coll_sweep,p2p_sweep,p2p_matrix,dp_allreduce,tp_layer,pp_pipeline,compute_probe >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
[ "$rc" -eq 0 ] && pass "the golden run (run_all.sh --quick --np 2, 7 steps)" ||
    { fail "the golden run: exit $rc"; tail -15 "$TMP/run.err" | sed 's/^/  | /' >&2; finish; }

# slowed SRC DST [FACTOR]: a copy of run SRC whose p2p_sweep.csv and p2p_matrix.csv say the link is
# FACTOR (default 100) times as slow.
slowed() {
    cp -r "$1" "$2"
    local f
    for f in p2p_sweep p2p_matrix; do
        python3 - "$2/$f.csv" "${3:-100}" <<'PY'
import csv, io, sys
path, factor = sys.argv[1], float(sys.argv[2])
lines = open(path).read().splitlines(keepends=True)
out, header = [], None
for l in lines:
    if l.startswith("#") or not l.strip():
        out.append(l); continue
    row = next(csv.reader([l]))
    if header is None:
        header = row; out.append(l); continue
    r = dict(zip(header, row))
    for k in header:
        if k.startswith("time_us"):
            r[k] = repr(factor * float(r[k]))
    r["bw_GBps"] = repr(float(r["bw_GBps"]) / factor)
    s = io.StringIO(); csv.writer(s, lineterminator="\n").writerow([r[k] for k in header]); out.append(s.getvalue())
open(path, "w").write("".join(out))
PY
        INVARIANTS_EXEMPT="${INVARIANTS_EXEMPT:-} $2/$f.csv $2/$f.json"
    done
}
S=$TMP/slowed
slowed "$G" "$S"

# ---- acceptance --derive ----
expect_rc 0 "acceptance --derive the golden run" -- "$ACC" --derive "$G" -o "$TMP/golden.thr"
expect_in "$TMP/err" "rules derived from $G with a 10% margin" "it says how many rules, from where, at which margin"
for rule in "busbw coll=allreduce size=256K link=intra >=" "coll_latency coll=allreduce size=8 link=intra <=" \
    "p2p_latency size=1 link=intra <=" "p2p_bw size=1M link=intra >=" "tp_comm_fraction link=intra mode=allreduce hidden=256 <=" \
    "gemm_rate size=1K >="; do
    expect_in "$TMP/golden.thr" "$rule" "a rule for each headline figure: $rule"
done
# DP's overhead and PP's efficiency come from differences of times: a loaded machine makes them
# untrustworthy (by the benchmarks' own notes), and then they are comments.
for fig in "dp_overhead size=7M link=intra overlap=none" "pp_efficiency link=intra schedule=1f1b m=8 stages=2"; do
    grep -Eq "^(# untrustworthy, no rule: )?$fig" "$TMP/golden.thr" &&
        pass "${fig%% *}: a rule, or a comment saying why the run cannot give one" || fail "no line for $fig"
done
# Each rule sits at the measured value less 10% (rates) or plus 10% (times), and says so.
if python3 - "$TMP/golden.thr" "$G" >"$TMP/check.out" 2>&1 <<'PY'
import re, sys
rules = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
assert len(rules) >= 12, rules
for l in rules:
    m = re.match(r"^(\S+) .* (>=|<=) ([0-9.e+-]+)(?: \S+)? +# measured ([0-9.e+-]+)(?: \S+)? in (.*), (\d{4}-\d\d-\d\dT\S+)", l)
    assert m, l
    thr, measured = float(m.group(3)), float(m.group(4))
    want = measured * (0.9 if m.group(2) == ">=" else 1.1)
    assert abs(thr - want) <= 1e-3 * want + 1e-12, (l, want)
    assert (thr <= measured) if m.group(2) == ">=" else (thr >= measured), l
    assert m.group(5) == sys.argv[2], l
print(f"{len(rules)} rules, each at the measured value -/+ 10%, naming the run and its date")
PY
then pass "$(cat "$TMP/check.out")"; else fail "derived values:"; sed 's/^/  | /' "$TMP/check.out" >&2; fi
expect_rc 0 "the derived file passes on its own run" -- "$ACC" -t "$TMP/golden.thr" -r "$G"
expect_rc 1 "and fails on the run whose link was slowed" -- "$ACC" -t "$TMP/golden.thr" -r "$S"
grep -E '^ *[0-9]+  .*  FAIL' "$TMP/out" | awk '{print $2}' | sort -u >"$TMP/failed"
if [ "$(tr '\n' ' ' <"$TMP/failed")" = "p2p_bibw p2p_bw p2p_latency " ]; then
    pass "the failing rules are the slowed link's (p2p_latency, p2p_bw, p2p_bibw), no other"
else fail "failing rules: $(tr '\n' ' ' <"$TMP/failed")"; sed 's/^/  | /' "$TMP/out" >&2; fi
expect_rc 0 "--margin 0%: rules at the measured values" -- "$ACC" --derive "$G" --margin 0% -o "$TMP/tight.thr"
expect_rc 0 "still pass on their own run (each rounded away from its value)" -- "$ACC" -t "$TMP/tight.thr" -r "$G"
expect_rc 0 "--margin 60%" -- "$ACC" --derive "$G" --margin 60% -o "$TMP/loose.thr"
expect_rc 1 "does not hide a link at a hundredth of its speed" -- "$ACC" -t "$TMP/loose.thr" -r "$S"
expect_in "$TMP/out" "3 failed" "the three rules of the slowed link fail at 60% too"

# A row with wrong data gives no rule: a comment names it.
W=$TMP/wrong
cp -r "$G" "$W"
python3 - "$W/coll_sweep.csv" <<'PY'
import sys
path = sys.argv[1]
lines = open(path).read().splitlines(keepends=True)
i = next(i for i, l in enumerate(lines) if l.startswith("allgather,262144,"))
cells = lines[i].rstrip("\n").split(",")
head = next(l for l in lines if l.startswith("collective,")).rstrip("\n").split(",")
cells[head.index("wrong")] = "3"
lines[i] = ",".join(cells) + "\n"
open(path, "w").write("".join(lines))
PY
INVARIANTS_EXEMPT="${INVARIANTS_EXEMPT:-} $W/coll_sweep.csv $W/coll_sweep.json"
expect_rc 0 "--derive on a run with a wrong row" -- "$ACC" --derive "$W"
expect_in "$TMP/out" "# untrustworthy, no rule: busbw coll=allgather size=256K link=intra: 3 wrong values" \
    "the wrong row's figure is a comment, with the reason"
grep -q "^busbw coll=allgather" "$TMP/out" && fail "a rule derived from a row with wrong data" ||
    pass "no rule from the row with wrong data"
expect_in "$TMP/out" "busbw coll=allreduce size=256K link=intra >=" "the other figures keep their rules"

# ---- bad input: a clear message, exit 2 or 3, no file written ----
mkdir -p "$TMP/notrun"
expect_rc 2 "--derive of a folder that is not a run" -- "$ACC" --derive "$TMP/notrun" -o "$TMP/n.thr"
expect_in "$TMP/err" "is not a run's results folder" "the refusal says why"
expect_rc 2 "-o naming one of the run's files" -- "$ACC" --derive "$G" -o "$G/coll_sweep.csv"
expect_in "$TMP/err" "inside the results folder of a run" "an input is never overwritten"
expect_rc 2 "--margin without its %" -- "$ACC" --derive "$G" --margin 10 -o "$TMP/m.thr"
expect_in "$TMP/err" "option --margin: '10' is not a percentage" "the message names --margin"
mark_run "$TMP/empty"
expect_rc 3 "--derive of a run that measured nothing" -- "$ACC" --derive "$TMP/empty" -o "$TMP/e.thr"
expect_in "$TMP/err" "holds no trustworthy headline figure" "the message says so"
for f in n m e; do [ -e "$TMP/$f.thr" ] && fail "$f.thr written after a refusal"; done
cmp -s "$G/coll_sweep.csv" "$S/coll_sweep.csv" && pass "the run's files are untouched" || fail "a run's file changed"

# ---- parabench-compare ----
CMP=$ROOT/scripts/compare-runs.py
# verdicts DIR: "figure<TAB>verdict" lines of DIR/compare.json
verdicts() { python3 -c 'import json, sys
for f in json.load(open(sys.argv[1] + "/compare.json"))["figures"]: print(f["figure"] + "	" + f["verdict"])' "$1"; }
expect_rc 0 "compare the golden run with itself" -- python3 "$CMP" --out "$TMP/self" "$G" "$G"
verdicts "$TMP/self" >"$TMP/self.v"
if [ -s "$TMP/self.v" ] && ! grep -qv $'\t''\(same\|untrustworthy\)$' "$TMP/self.v"; then
    pass "with itself: every one of $(wc -l <"$TMP/self.v") figures the same (or untrustworthy, unjudged)"
else fail "with itself:"; sed 's/^/  | /' "$TMP/self.v" >&2; fi
expect_in "$TMP/out" "no figure worse beyond the noise" "the verdict line says so"

expect_rc 1 "compare the golden run with the slowed copy: worse, exit 1" -- python3 "$CMP" --out "$TMP/vs" "$G" "$S"
verdicts "$TMP/vs" >"$TMP/vs.v"
for fig in "p2p bw, intra, 1 MiB" "p2p bibw, intra, 1 MiB" "matrix bw, ranks 0-1 (vm-vm), intra, 1 MiB"; do
    fig=${fig//vm-vm/$(hostname)-$(hostname)}
    grep -qxF "$fig"$'\t'"worse" "$TMP/vs.v" && pass "the slowed link: '$fig' worse" ||
        { fail "'$fig' not worse"; sed 's/^/  | /' "$TMP/vs.v" >&2; }
done
if ! grep -v '^\(p2p\|matrix\) ' "$TMP/vs.v" | grep -qv $'\t''\(same\|untrustworthy\)$'; then
    pass "every figure off the slowed link: same ($(grep -vc '^\(p2p\|matrix\) ' "$TMP/vs.v"))"
else fail "a figure off the slowed link moved:"; grep -v '^\(p2p\|matrix\) ' "$TMP/vs.v" | sed 's/^/  | /' >&2; fi
expect_in "$TMP/out" "WORSE: p2p latency, intra, 1 B; p2p bw, intra, 1 MiB" "the verdict line names the worse figures"
if python3 - "$TMP/vs" >"$TMP/check.out" 2>&1 <<'PY'
import csv, json, os, sys
d = sys.argv[1]
doc = json.load(open(os.path.join(d, "compare.json")))
rows = list(csv.DictReader(open(os.path.join(d, "compare.csv"))))
assert doc["worse"] is True and len(rows) == len(doc["figures"]) > 10, doc["counts"]
for r, j in zip(rows, doc["figures"]):
    assert list(r) == list(j), (list(r), list(j))  # the same fields, in the same order
    assert r["figure"] == j["figure"] and r["verdict"] == j["verdict"], (r, j)
bw = next(j for j in doc["figures"] if j["figure"].startswith("p2p bw"))
assert abs(bw["ratio"] - 0.01) < 1e-6 and bw["noise"] > 0, bw  # B/A of a bandwidth cut to a hundredth; a noise of its own
page = open(os.path.join(d, "index.html")).read()
assert "Against A: WORSE" in page and "<td class='worse'>worse</td>" in page and "data:image/png;base64," in page
for png in ("busbw", "latency", "p2p_bw"):
    assert open(os.path.join(d, "plots", png + ".png"), "rb").read(4) == b"\x89PNG", png
print(f"compare.csv and compare.json: the same {len(rows)} rows and fields; the page and 3 overlay figures")
PY
then pass "$(cat "$TMP/check.out")"; else fail "compare's files:"; sed 's/^/  | /' "$TMP/check.out" >&2; fi

# A change within the run's own spread is noise: the p2p pair's times lengthened by half their
# (median - min) / median, the copy's figures "same".
J=$TMP/jitter
cp -r "$G" "$J"
python3 - "$J/p2p_sweep.csv" <<'PY'
import csv, io, sys
path = sys.argv[1]
out, header = [], None
for l in open(path).read().splitlines(keepends=True):
    if l.startswith("#") or not l.strip():
        out.append(l); continue
    row = next(csv.reader([l]))
    if header is None:
        header = row; out.append(l); continue
    r = dict(zip(header, row))
    f = 1 + 0.5 * (float(r["time_us_median"]) - float(r["time_us_min"])) / float(r["time_us_median"])
    for k in header:
        if k.startswith("time_us"):
            r[k] = repr(f * float(r[k]))
    r["bw_GBps"] = repr(float(r["bw_GBps"]) / f)
    s = io.StringIO(); csv.writer(s, lineterminator="\n").writerow([r[k] for k in header]); out.append(s.getvalue())
open(path, "w").write("".join(out))
PY
INVARIANTS_EXEMPT="${INVARIANTS_EXEMPT:-} $J/p2p_sweep.csv $J/p2p_sweep.json"
expect_rc 0 "a copy whose link moved within its own spread: exit 0" -- python3 "$CMP" --quiet --no-plots --out "$TMP/jit" "$G" "$J"
verdicts "$TMP/jit" | grep '^p2p bw' >"$TMP/jit.v"
grep -q $'\t''same$' "$TMP/jit.v" && pass "the moved bandwidth is the same within the noise" ||
    { fail "within the spread, not same:"; sed 's/^/  | /' "$TMP/jit.v" >&2; }

# Bad input: exit 2, the reason, nothing written.
O=$TMP/other-shape
cp -r "$G" "$O"
python3 - "$O/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["nranks"] = 4
m["machine"]["hosts"] = [{"name": "n0", "ranks": [0, 1]}, {"name": "n1", "ranks": [2, 3]}]
json.dump(m, open(sys.argv[1], "w"))
PY
expect_rc 2 "runs of different shapes are refused" -- python3 "$CMP" --out "$TMP/c1" "$G" "$O"
expect_in "$TMP/err" "different shapes" "the refusal says why"
expect_in "$TMP/err" "ranks: 2 in A, 4 in B; nodes: 1 in A, 2 in B" "and names each difference"
M=$TMP/missing-step
cp -r "$G" "$M"
sed -i 's/^p2p_sweep\tok\t0/p2p_sweep\tfailed\t1/' "$M/steps.tsv"
expect_rc 2 "a run missing a step is refused" -- python3 "$CMP" --out "$TMP/c2" "$G" "$M"
expect_in "$TMP/err" "did not measure the same steps: p2p_sweep (ok in A, failed in B)" "naming the step"
expect_rc 2 "a folder that is not a run" -- python3 "$CMP" --out "$TMP/c3" "$G" "$TMP/notrun"
expect_in "$TMP/err" "is not a run's results folder" "the refusal says why"
expect_rc 2 "an output that is an input" -- python3 "$CMP" --out "$G" "$G" "$S"
expect_in "$TMP/err" "is the run" "the refusal says why"
expect_rc 2 "an output inside an input" -- python3 "$CMP" --out "$S/cmp" "$G" "$S"
for d in c1 c2 c3; do [ -e "$TMP/$d" ] && fail "$d written after a refusal"; done
[ -e "$S/cmp" ] || [ -e "$G/index.html.cmp" ] && fail "written into a run" || pass "nothing written after a refusal"

# ---- run_all.sh --baseline ----
BASELINE_T0=$SECONDS
# F: the golden run cut to its p2p_sweep step, that link 10,000 times as fast (far beyond what load on a
# shared machine moves a latency): a run of p2p_sweep alone is worse on each of its figures.
F=$TMP/fast
slowed "$G" "$F" 0.0001
( cd "$F" && rm -f coll_sweep.* p2p_matrix* dp_allreduce.* tp_layer.* pp_pipeline.* pp_trace.csv compute_probe.* )
grep -E $'^(p2p_sweep|report)\t' "$G/steps.tsv" >"$F/steps.tsv"
cp "$F/steps.tsv" "$TMP/fast-steps.tsv"
# run_all ARGS...: a quick 2-rank run, its output in $TMP/out and $TMP/err
run_all() { BUILD=$BUILD timeout 120 "$ROOT/run_all.sh" --quick --np 2 --no-install --quiet "$@" >"$TMP/out" 2>"$TMP/err"; }
R=$TMP/against-fast
expect_rc 0 "run_all --baseline: figures worse than the baseline's do not make the run fail" -- \
    run_all --steps p2p_sweep --baseline "$F" --out "$R"
grep -qxF $'baseline_compare\tworse\t1' <(cut -f1-3 "$R/steps.tsv") && pass "steps.tsv: baseline_compare worse, exit 1 recorded" ||
    { fail "steps.tsv:"; sed 's/^/  | /' "$R/steps.tsv" >&2; }
expect_in "$TMP/out" "Against the baseline: WORSE: p2p latency, intra, 1 B; p2p bw, intra, 1 MiB; p2p bibw, intra, 1 MiB (3 worse)" \
    "the final summary names the worse figures"
if python3 - "$R" "$F" >"$TMP/check.out" 2>&1 <<'PY'
import json, os, sys
r, f = sys.argv[1], os.path.realpath(sys.argv[2])
doc = json.load(open(os.path.join(r, "compare", "compare.json")))
assert doc["worse"] is True and doc["a"]["run"] == f and os.path.realpath(doc["b"]["run"]) == os.path.realpath(r), doc["a"]
worse = [x["figure"] for x in doc["figures"] if x["verdict"] == "worse"]
assert worse == ["p2p latency, intra, 1 B", "p2p bw, intra, 1 MiB", "p2p bibw, intra, 1 MiB"], worse
for name in ("compare.csv", "compare.txt", "index.html"):
    assert os.path.getsize(os.path.join(r, "compare", name)) > 0, name
md = open(os.path.join(r, "report.md")).read()
verdict = md.split("## Headline figures")[0]  # the verdict section, before the headlines
assert "> **Against the baseline: WORSE**: p2p latency, intra, 1 B; p2p bw, intra, 1 MiB; p2p bibw" in verdict, verdict
assert f"baseline {f}" in verdict, verdict
rows = [l for l in verdict.splitlines() if l.startswith("| p2p ")]
assert len(rows) == len(worse) and all(l.endswith("| worse |") for l in rows), rows
bw = next(l for l in rows if l.startswith("| p2p bw"))
assert float(bw.split("|")[4]) < 0.01, bw  # this / baseline: the baseline's link made 10,000 times as fast
page = open(os.path.join(r, "index.html")).read()
assert "<b>Against the baseline: WORSE</b>" in page and "<td class='worse'>worse</td>" in page
assert "href='compare/index.html'" in page
print(f"compare/ and the report's verdict: {len(worse)} figures worse, each in the table")
PY
then pass "$(cat "$TMP/check.out")"; else fail "the report against the baseline:"; sed 's/^/  | /' "$TMP/check.out" >&2; fi

# A baseline that measured another step: the comparison is refused, the report says why, the run completes.
R2=$TMP/against-other-steps
expect_rc 0 "run_all --baseline of a run of other steps: the run still completes, exit 0" -- \
    run_all --steps p2p_matrix --baseline "$F" --out "$R2"
grep -qxF $'baseline_compare\trefused\t2' <(cut -f1-3 "$R2/steps.tsv") && pass "steps.tsv: baseline_compare refused, exit 2 recorded" ||
    { fail "steps.tsv:"; sed 's/^/  | /' "$R2/steps.tsv" >&2; }
expect_in "$R2/report.md" "> **Against the baseline: not compared**: the runs did not measure the same steps: p2p_matrix (not run in A, ok in B), p2p_sweep (ok in A, not run in B)" \
    "the report's verdict says why, naming the steps"
expect_in "$TMP/out" "Against the baseline: not compared: the runs did not measure the same steps" "so does the final summary"
[ -e "$R2/compare/compare.json" ] && fail "a comparison written after a refusal" || pass "no comparison written"
grep -q '^report	ok' "$R2/steps.tsv" && pass "the report was written" || fail "no report"

# A baseline of another shape (4 ranks on 2 nodes): refused by parabench-compare, named in the report.
F4=$TMP/fast-4-ranks
cp -r "$F" "$F4"
INVARIANTS_EXEMPT="${INVARIANTS_EXEMPT:-} $F4/p2p_sweep.csv $F4/p2p_sweep.json"
python3 - "$F4/meta.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["nranks"] = 4
m["machine"]["hosts"] = [{"name": "n0", "ranks": [0, 1]}, {"name": "n1", "ranks": [2, 3]}]
json.dump(m, open(sys.argv[1], "w"))
PY
R3=$TMP/against-4-ranks
expect_rc 0 "run_all --baseline of a run of another shape: the run still completes, exit 0" -- \
    run_all --steps p2p_sweep --baseline "$F4" --out "$R3"
grep -qxF $'baseline_compare\trefused\t2' <(cut -f1-3 "$R3/steps.tsv") && pass "steps.tsv: baseline_compare refused" ||
    { fail "steps.tsv:"; sed 's/^/  | /' "$R3/steps.tsv" >&2; }
expect_in "$R3/report.md" "> **Against the baseline: not compared**: the runs have different shapes, so their figures are not the same quantities: ranks: 4 in A, 2 in B; nodes: 2 in A, 1 in B" \
    "the report's verdict names each difference"
grep -q "Against the baseline" "$R3/index.html" && pass "and so does index.html" || fail "index.html has no verdict against the baseline"

# Bad --baseline: refused before anything runs, naming the option.
expect_rc 2 "--baseline of a folder that is not a run" -- run_all --steps p2p_sweep --baseline "$TMP/notrun" --out "$TMP/r3"
expect_in "$TMP/err" "option --baseline: '$TMP/notrun' is not a run's results folder" "the message names --baseline"
mark_run "$TMP/unfinished"
expect_rc 2 "--baseline of a run that did not finish (no meta.json)" -- run_all --steps p2p_sweep --baseline "$TMP/unfinished" --out "$TMP/r3"
expect_in "$TMP/err" "option --baseline: '$TMP/unfinished' has no meta.json" "the message says why"
expect_rc 2 "--baseline equal to --out" -- run_all --steps p2p_sweep --baseline "$F" --out "$F"
expect_in "$TMP/err" "option --baseline: '$(realpath "$F")' is this run's --out" "the message names --baseline"
expect_rc 2 "--steps baseline_compare without --baseline" -- run_all --steps baseline_compare
expect_in "$TMP/err" "'baseline_compare' is not part of this run" "the comparison needs --baseline"
[ -e "$TMP/r3" ] && fail "a results folder made after a refusal" || pass "nothing made after a refusal"
[ ! -e "$F/compare" ] && cmp -s "$F/steps.tsv" "$TMP/fast-steps.tsv" && pass "the baseline is untouched" ||
    fail "the baseline changed"
echo "run_all --baseline checks: $((SECONDS - BASELINE_T0)) s" >&2
finish
