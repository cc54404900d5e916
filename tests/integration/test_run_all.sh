#!/usr/bin/env bash
# run_all.sh --quick end to end, once (its output is reused for every check):
# the output tree, every figure a valid PNG (and SVG), the HTML and Markdown
# reference only files that exist, acceptance through run_all (pass) and
# through the binary on the same run (impossible thresholds: exit 1 + JUnit);
# a bad threshold file exits 2 before the suite; --out never overwrites.
# No timing is asserted.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
RUN=$TMP/run
# Rules any working run satisfies (non-negative quantities), so the check is about plumbing, not speed.
cat >"$TMP/ok.thr" <<'EOF2'
busbw coll=allreduce size=64K >= 0 GB/s
p2p_latency size=8 <= 1000000000 us
pp_efficiency schedule=1f1b >= 0
EOF2
BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --quiet --out "$RUN" --acceptance "$TMP/ok.thr" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
if [ "$rc" -eq 0 ]; then pass "run_all.sh --quick exits 0"; else
    fail "run_all.sh --quick exit $rc"; sed 's/^/  | /' "$TMP/stderr" | tail -20 >&2; cat "$RUN/steps.tsv" >&2; fi
expect_in "$TMP/stdout" "parabench quick run: 2 ranks" "summary: header"
# The header ends with the run's wall time as minutes:seconds.
if grep -Eq '^parabench quick run: 2 ranks \(.*\), [0-9]+:[0-5][0-9]$' "$TMP/stdout"; then pass "summary: the header's time is M:SS"
else fail "summary: no header ending in M:SS: $(grep '^parabench quick run' "$TMP/stdout")"; fi
expect_in "$TMP/stdout" "allreduce busbw, intra-node:" "summary: headline bus bandwidth"
expect_in "$TMP/stdout" "PP efficiency" "summary: pipeline efficiency against theory"
expect_in "$TMP/stdout" "training step of tiny-gqa at TP 2 x PP 1 x DP 1" "summary: the CPU model's step from measured parts"
grep -Eq "training step of .* s from measured parts, MFU [0-9.]+% of the best GEMM rate compute_probe measured .*; plan predicts [0-9.]+ s from cluster.txt" \
    "$TMP/stdout" && pass "summary: the step's MFU and the planner's prediction beside it" \
    || fail "summary: the step line lacks MFU or plan's prediction: $(grep 'training step' "$TMP/stdout")"
expect_in "$TMP/stdout" "report: $RUN/report.md" "summary: where the report is"
expect_in "$TMP/stdout" "acceptance: 3 passed, 0 failed" "summary: acceptance verdict"
if [ -s "$TMP/stderr" ] && grep -q '^run_all: \[' "$TMP/stderr"; then fail "--quiet still prints progress"; else pass "--quiet: no progress lines"; fi

# ---- the tree ----
for f in meta.json steps.tsv summary.txt report.md index.html logs plots coll_sweep.csv coll_sweep.json p2p_sweep.csv \
         p2p_matrix-bw.csv p2p_matrix-latency.csv dp_allreduce.csv tp_layer.csv pp_pipeline.csv pp_trace.csv plan_fit.csv \
         acceptance.txt acceptance-junit.xml; do
    if [ -e "$RUN/$f" ]; then pass "tree: $f"; else fail "tree: $f missing"; fi
done
if python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['nranks']==2 and m['profile']=='quick' and m['steps']" "$RUN/meta.json"; then
    pass "meta.json parses, names profile, ranks and steps"; else fail "meta.json"; fi
# The version fields are those of the binaries the run used: "parabench NUMBER (git REV)",
# or "parabench NUMBER" for a build outside git (a release tarball), whose revision is "unknown".
bin_version=$("$BIN/coll_sweep" --version)
if python3 -c "
import json, sys
m, v = json.load(open(sys.argv[1])), sys.argv[2]
number, rev = v.split()[1], v.split('(git ')[1].rstrip(')') if '(git ' in v else 'unknown'
assert (m['version'], m['parabench_version'], m['git_revision']) == (v, number, rev), (m['version'], m['parabench_version'], m['git_revision'], v)
assert number == open(sys.argv[3]).read().strip(), number
" "$RUN/meta.json" "$bin_version" "$ROOT/VERSION"; then pass "meta.json: version, parabench_version and git_revision are the binaries' ($bin_version)"
else fail "meta.json: version fields differ from the binaries' '$bin_version'"; fi
expect_in "$RUN/steps.tsv" "hybrid_3d	ok	0" "hybrid_3d runs at 2 ranks (TP 2, as suite/shapes.py shapes it)"
for s in p2p_matrix plan_fit acceptance; do expect_in "$RUN/steps.tsv" "$s	ok	0" "the step $s ran"; done
FIGS="busbw latency algbw_busbw intra_inter p2p_bw p2p_matrix dp_overhead tp_fraction pp_efficiency pp_timeline plan_fit"
for g in $FIGS; do
    png=$RUN/plots/$g.png
    if [ -s "$png" ] && [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then pass "figure $g.png is a PNG"
    else fail "figure $g.png missing, empty or not a PNG"; fi
    if [ -s "$RUN/plots/$g.svg" ] && grep -q '<svg' "$RUN/plots/$g.svg"; then pass "figure $g.svg"; else fail "figure $g.svg"; fi
done

# ---- the report references only files that exist; the HTML embeds its figures ----
if python3 - "$RUN" <<'PY'
import os, re, sys
run = sys.argv[1]
html = open(os.path.join(run, "index.html")).read()
refs = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", html)
bad = [r for r in refs if not r.startswith(("data:", "#")) and not os.path.exists(os.path.join(run, r))]
assert not [r for r in refs if r.startswith("#") and f"id='{r[1:]}'" not in html], "an in-page link without its target"
assert not bad, bad
assert html.count("data:image/png;base64,") == 11, html.count("data:image/png;base64,")
md = open(os.path.join(run, "report.md")).read()
links = re.findall(r"\]\(([^)]+)\)", md)
assert links and all(os.path.exists(os.path.join(run, l)) for l in links), links
PY
then pass "index.html and report.md reference only existing files; 11 figures embedded"; else fail "report references"; fi

# ---- acceptance on the same run: impossibly high thresholds fail ----
printf 'busbw coll=allreduce size=64K >= 1000000 GB/s\n' >"$TMP/high.thr"
expect_rc 1 "impossible threshold on the real run: exit 1" -- "$BIN/acceptance" -t "$TMP/high.thr" -r "$RUN" --junit "$TMP/high.xml"
expect_in "$TMP/high.xml" "<failure message=\"measured" "impossible threshold: JUnit records the failure"
make -s -C "$ROOT" plots RESULTS="$RUN" >/dev/null 2>"$TMP/err"
if [ $? -eq 0 ] && [ -s "$RUN/plots/busbw.png" ]; then pass "make plots RESULTS=dir redraws"; else fail "make plots"; cat "$TMP/err" >&2; fi

# ---- acceptance through run_all, the failing side: one impossible rule among passing ones ----
# A cluster that misses a threshold must fail the job (exit 1), whatever else went well.
# Only the steps whose rows the rules read (--steps): acceptance and the report still run.
# --junit names a file in the --out the run creates: accepted, and written there.
cat "$TMP/ok.thr" "$TMP/high.thr" >"$TMP/mixed.thr"
BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --quiet --out "$TMP/run-fail" --acceptance "$TMP/mixed.thr" \
    --junit "$TMP/run-fail/verdict.xml" --steps pp_pipeline,coll_sweep,p2p_sweep >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
if [ "$rc" -eq 1 ]; then pass "run_all.sh with a missed threshold exits 1"; else
    fail "run_all.sh with a missed threshold: exit $rc, expected 1"; sed 's/^/  | /' "$TMP/stderr" | tail -10 >&2; fi
expect_in "$TMP/stdout" "acceptance: 3 passed, 1 failed" "missed threshold: the summary counts it"
expect_in "$TMP/stderr" "run_all.sh: acceptance: FAIL" "missed threshold: stderr says the acceptance failed"
expect_in "$TMP/run-fail/verdict.xml" "<failure message=\"measured" "missed threshold: JUnit (--junit in --out) records the failure"
if grep -q '<failure' "$RUN/acceptance-junit.xml"; then fail "passing run: its JUnit holds a failure"; else
    pass "passing run: its JUnit holds no failure"; fi
if ! grep -q 'run_all.sh: failed:' "$TMP/stderr"; then pass "missed threshold: no benchmark step counted as failed"; else
    fail "missed threshold: a step failed besides the acceptance"; grep 'run_all.sh: failed:' "$TMP/stderr" >&2; fi
# meta.json: a missed threshold is the acceptance step's verdict, not a failed step.
python3 - "$TMP/run-fail/meta.json" <<'PY' && pass "missed threshold: meta.json's failed list is empty, the acceptance step's status is failed" ||
import json, sys
m = json.load(open(sys.argv[1]))
status = {s["name"]: s["status"] for s in m["steps"]}
assert m["failed"] == [], m["failed"]
assert status["acceptance"] == "failed", status
PY
    fail "missed threshold: meta.json's failed list or the acceptance step's status"
ran=$(cut -f1 "$TMP/run-fail/steps.tsv" 2>/dev/null | tr '\n' ' ')
[ "$ran" = "coll_sweep p2p_sweep pp_pipeline acceptance report " ] &&
    pass "--steps: the named steps in the manifest's order, then acceptance and the report" ||
    fail "--steps pp_pipeline,coll_sweep,p2p_sweep ran: $ran"
expect_in "$TMP/run-fail/meta.json" '"selected_steps": [' "--steps: meta.json records the selection"
expect_in "$TMP/run-fail/report.md" "only the steps pp_pipeline, coll_sweep, p2p_sweep" "--steps: the report says the run was partial"

# ---- usage: bad thresholds, existing --out ----
printf 'busbw coll=allreduce size=64K >= 1\nbogus >= 1\n' >"$TMP/bad.thr"
BUILD=$BUILD "$ROOT/run_all.sh" --quick --out "$TMP/never" --acceptance "$TMP/bad.thr" >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 2 ] && [ ! -e "$TMP/never" ]; then pass "bad threshold file: exit 2 before running"; else fail "bad threshold file: exit $rc"; fi
expect_in "$TMP/err" "bad.thr:2: 'bogus' is not a metric" "bad threshold file: FILE:LINE message"
expect_rc 2 "--out onto an earlier run is refused" -- env BUILD="$BUILD" "$ROOT/run_all.sh" --quick --out "$RUN"
expect_rc 2 "unknown option" -- "$ROOT/run_all.sh" --fast
finish
