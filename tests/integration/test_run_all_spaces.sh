#!/usr/bin/env bash
# run_all.sh with spaces in its paths: a checkout whose own path holds a space
# (a copy of this one, with its build, in "check out/"), run with --out "res sp".
# Every step must run with its paths whole: exit 0, every step ok (or skipped
# for this machine's reason), the files in place, nothing written beside them
# under a split-off name.
# Then the report as a person sees it, from the same whole run: its index.html
# opened in headless Chromium (tools/dev/check-report-browser.py, over the
# DevTools pipe): no console error, every image loaded, a screenshot 1280 pixels
# wide; and the checker must catch what it is for, on copies of the page: an
# image whose file is missing, an image whose data is corrupt, a console error.
# Without Chromium (scripts/install-deps.sh --for report) that part is skipped,
# and so is the test (exit 77) once everything else has passed. One whole quick
# run serves both.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
[ -x "$BIN/coll_sweep" ] || skip_test "$BIN is not built (make first)"
CHECK=$ROOT/tools/dev/check-report-browser.py
[ -n "${CHROMIUM:-}" ] || for b in chromium chromium-headless-shell chromium-browser google-chrome; do
    command -v "$b" >/dev/null && { CHROMIUM=$b; break; }
done
BROWSER=0
command -v "${CHROMIUM:-chromium}" >/dev/null && BROWSER=1 && export CHROMIUM

# The steps a plain run plans (suite/manifest.py), however many the manifest holds.
STEPS=$(cd "$ROOT" && python3 -c 'from suite import manifest; print(len(manifest.plan(manifest.Run(profile="quick", nranks=2))))')
# check_run NAME DIR RC STDERR: exit 0, steps.tsv all ok or skipped, the tree complete.
check_run() {
    local tag=$1 dir=$2 rc=$3 err=$4 f bad
    if [ "$rc" -eq 0 ]; then pass "$tag: run_all exits 0"; else
        fail "$tag: run_all exit $rc"; sed 's/^/  | /' "$err" | tail -15 >&2; cat "$dir/steps.tsv" >&2; fi
    bad=$(awk -F'\t' '$2 != "ok" && $2 != "skipped"' "$dir/steps.tsv" 2>/dev/null)
    if [ -s "$dir/steps.tsv" ] && [ -z "$bad" ] && [ "$(wc -l <"$dir/steps.tsv")" -eq "$STEPS" ]; then
        pass "$tag: $STEPS steps, each ok or skipped"
    else fail "$tag: steps.tsv"; cat "$dir/steps.tsv" >&2; fi
    for f in meta.json summary.txt report.md index.html coll_sweep.csv coll_sweep.json p2p_sweep.csv \
             p2p_matrix-bw.csv p2p_matrix-latency.csv p2p_matrix-pairs.csv dp_allreduce.csv tp_layer.csv \
             pp_pipeline.csv pp_trace.csv plan_fit.csv logs/coll_sweep.err; do
        [ "$f" = logs/coll_sweep.err ] && { [ -e "$dir/$f" ] || { fail "$tag: $f missing"; return; }; continue; }
        [ -s "$dir/$f" ] || { fail "$tag: $f missing or empty"; return; }
    done
    pass "$tag: every result file is in place"
    if python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['failed'] == [] and m['interrupted'] is None, m" \
        "$dir/meta.json"; then pass "$tag: meta.json: nothing failed or interrupted"; else fail "$tag: meta.json"; fi
}

# ---- a checkout whose path holds a space (the tracked files and the build, times kept), run
# with an --out that holds one too: one run covers both, every step's paths in and out ----
mkdir "$TMP/a"
CO="$TMP/a/check out" OUT="$TMP/a/res sp"
mkdir -p "$CO"
if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf -) | tar -xf - -C "$CO"
else
    tar -C "$ROOT" --exclude=./results --exclude=./.git --exclude="./$BUILD" -cf - . | tar -xf - -C "$CO"
fi
tar -C "$ROOT" -cf - "$BUILD" | tar -xf - -C "$CO"
[ -x "$CO/run_all.sh" ] && [ -x "$CO/$BUILD/bin/coll_sweep" ] && pass "copied the checkout and its build to '$CO'" \
    || fail "copy of the checkout incomplete"
rm -rf "$CO/results"
(cd "$TMP/a" && BUILD=$BUILD timeout 600 "$CO/run_all.sh" --quick --quiet --no-install --out "$OUT" >"$TMP/a.out" 2>"$TMP/a.err")
check_run "a checkout and an --out with spaces" "$OUT" $? "$TMP/a.err"
expect_in "$OUT/meta.json" "\"launch\": \"mpirun -np 2" "meta.json has the launch line"
left=""
for f in "$TMP/a"/* "$TMP/a"/.[!.]*; do [ -e "$f" ] && [ "$f" != "$OUT" ] && [ "$f" != "$CO" ] && left="$left '${f##*/}'"; done
[ -z "$left" ] && [ ! -e "$CO/results" ] && pass "nothing written under a split-off name, nor into the checkout" ||
    fail "written beside the results: $left $(ls -A "$CO/results" 2>/dev/null)"
# The figures (report.py, plots/*.gp), every one drawn from a path with a space.
FIGURES="busbw latency algbw_busbw intra_inter p2p_bw p2p_matrix dp_overhead tp_fraction pp_efficiency pp_timeline plan_fit"
missing=""
for g in $FIGURES; do [ -s "$OUT/plots/$g.png" ] && [ -s "$OUT/plots/$g.svg" ] || missing="$missing $g"; done
[ -z "$missing" ] && pass "every figure is drawn" || fail "figures missing:$missing"

# ---- the report in a browser ----
browser_checks() { # RUN: a whole run's results folder
    local run=$1
    expect_rc 0 "the quick run's index.html: no console error, every image loaded" -- \
        python3 "$CHECK" --screenshot "$TMP/shot.png" "$run"
    expect_in "$TMP/out" "no console errors, every image loaded" "the checker says what it checked"
    if python3 - "$TMP/shot.png" <<'PY'
import struct, sys
head = open(sys.argv[1], "rb").read(24)
assert head[:8] == b"\x89PNG\r\n\x1a\n", head[:8]
assert struct.unpack(">II", head[16:24]) == (1280, 900), struct.unpack(">II", head[16:24])
PY
    then pass "screenshot: a PNG, 1280 x 900"; else fail "screenshot"; fi
    # page_copy DEST PYTHON: the run's page copied to DEST/index.html, changed by PYTHON (on `page`).
    page_copy() {
        mkdir -p "$1"
        python3 -c "import sys; page = open(sys.argv[1]).read(); $2; open(sys.argv[2], 'w').write(page)" \
            "$run/index.html" "$1/index.html"
    }
    page_copy "$TMP/missing" "import re; page = re.sub(r\"src='data:image/png;base64,[^']*'\", \"src='no-such-figure.png'\", page, count=1)"
    expect_rc 1 "an image whose file is missing is caught" -- python3 "$CHECK" "$TMP/missing"
    expect_in "$TMP/out" "image did not load" "missing image: named"
    page_copy "$TMP/corrupt" "page = page.replace(\"src='data:image/png;base64,iVBOR\", \"src='data:image/png;base64,AAAA\", 1)"
    expect_rc 1 "an image whose data is corrupt is caught" -- python3 "$CHECK" "$TMP/corrupt"
    expect_in "$TMP/out" "image did not load: Bus bandwidth" "corrupt image: named by its caption"
    page_copy "$TMP/console" "page = page.replace('</body>', '<script>console.error(\"injected\")</script></body>')"
    expect_rc 1 "a console error is caught" -- python3 "$CHECK" "$TMP/console"
    expect_in "$TMP/out" "console error: injected" "console error: its text"
    expect_rc 2 "not a results directory: usage" -- python3 "$CHECK" "$TMP/no-such-dir"
}
if [ "$BROWSER" = 1 ]; then
    browser_checks "$OUT"
else
    echo "note: no Chromium: the report is not opened in a browser (scripts/install-deps.sh --for report installs it)"
fi

# ---- the same checkout with one benchmark that no longer compiles: make -k builds the rest, the
# run goes on, and the build's failure is the environment's (exit 3), its log kept in the results ----
echo '#error broken on purpose by test_run_all_spaces.sh' >>"$CO/benchmarks/tp_layer.c"
BUILD=$BUILD timeout 600 "$CO/run_all.sh" --quick --quiet --no-install --steps tp_layer --out "$TMP/broken" \
    >"$TMP/c.out" 2>"$TMP/c.err"
rc=$?
[ "$rc" -eq 3 ] && pass "a benchmark that does not compile: exit 3" || { fail "a benchmark that does not compile: exit $rc, expected 3"; sed 's/^/  | /' "$TMP/c.err" >&2; }
expect_in "$TMP/c.err" "run_all.sh: part of the build failed" "stderr says the build failed"
expect_in "$TMP/c.err" "run_all.sh: failed: build" "the failures name the build"
expect_in "$TMP/broken/logs/build.log" "broken on purpose" "the build log, with the compiler's error, is in the results"
[ "$BROWSER" = 1 ] || { [ "$FAILS" -eq 0 ] || finish
    skip_test "no Chromium (scripts/install-deps.sh --for report installs it): the report was not opened in a browser"; }
finish
