#!/usr/bin/env bash
# The "Adding things" recipes of docs/ARCHITECTURE.md, executed: a copy of the
# tree gets each recipe's blocks where the doc says (tests/integration/recipes.py),
# a collective (reduce again, as reduce_copy), a backend (mpi2), an engine
# (blas2), a benchmark (ring_shift: program, test and page) and its step of
# run_all.sh; the copy builds, each addition runs, and the files and lines each
# recipe touched are the numbers the doc states. Then the tests that enumerate what
# the recipes extend run in the copy and must pass: every collective, every step and
# its time bound, run_all.sh with the new backend. A test that kept a list of its own
# would fail there (tests/mutations.txt: recipes-*). One build serves every recipe.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
DOC=$ROOT/docs/ARCHITECTURE.md
RECIPES=$TESTS_DIR/recipes.py
# Outside $TMP: the copy's own CSV files are not results of this test.
TREE=$(mktemp -d /tmp/parabench-recipes.XXXXXX)
trap 'rm -rf "$TMP" "$TREE"' EXIT

if git -C "$ROOT" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$ROOT" && git ls-files -z | tar --null -T - -cf -) | tar -xf - -C "$TREE"
else # a copy without git (tests/mutate.py's scratch tree): everything but builds and results
    tar -C "$ROOT" --exclude='./build*' --exclude=./results -cf - . | tar -xf - -C "$TREE"
fi
[ -f "$TREE/Makefile" ] && [ -f "$TREE/docs/ARCHITECTURE.md" ] || { fail "the copy of the tree in $TREE is incomplete"; finish; }
# The objects already built, with their times: only what a recipe touches is rebuilt.
if [ -d "$ROOT/$BUILD/obj" ]; then
    mkdir -p "$TREE/$BUILD" && cp -a "$ROOT/$BUILD/obj" "$ROOT/$BUILD/.flags" "$TREE/$BUILD/" 2>/dev/null
fi
git -C "$TREE" init -q && git -C "$TREE" add -A && git -C "$TREE" -c user.name=t -c user.email=t@t commit -qm tree

# apply KEY [RENAME]: the recipe's blocks into the copy; then its files and
# lines must be the numbers the doc states.
apply() {
    local key=$1
    expect_rc 0 "the $key recipe applies as the doc states it" -- python3 "$RECIPES" "$DOC" "$key" "$TREE" "${2:-}"
    git -C "$TREE" add -A
    local files lines stated
    files=$(git -C "$TREE" diff --cached --name-only | wc -l)
    lines=$(git -C "$TREE" diff --cached --numstat | awk '{s += $1} END {print s + 0}')
    stated=$(python3 "$RECIPES" --count "$DOC" "$key")
    if [ "${stated#* }" = "-" ]; then lines="-"; fi # the doc states no line count
    if [ "$stated" = "$files $lines" ]; then pass "the $key recipe touches $files file(s) (lines: $lines) as the doc states"
    else fail "the $key recipe touched '$files $lines' (files lines); the doc states '$stated'"; fi
    git -C "$TREE" -c user.name=t -c user.email=t@t commit -qm "$key"
}
apply collective 'PB_COLL_REDUCE=PB_COLL_REDUCE_COPY,"reduce"="reduce_copy",issue_reduce=issue_reduce_copy,pb_coll_expect_reduce(=pb_coll_expect_reduce_copy('
apply collective-tests '"reduce"="reduce_copy"'
apply backend
apply engine
apply benchmark
apply step

# Every program: test_manifest.sh wants each step's built.
# With the variables that built those objects: others would rebuild everything.
# shellcheck disable=SC2046 # build_vars prints words
expect_rc 0 "the tree with the additions builds" -- make -C "$TREE" -j2 $(build_vars "$ROOT/$BUILD") BUILD="$BUILD" all
B=$TREE/$BUILD/bin

expect_rc 0 "coll_sweep --coll reduce_copy runs on 2 ranks" -- mpi 2 "$B/coll_sweep" --coll reduce_copy -e 4K -n 3 -w 1
expect_in "$TMP/out" "# reduce_copy" "its rows are printed"
expect_in "$TMP/out" "wrong values: 0 OK" "and validated"
expect_rc 0 "coll_sweep --help" -- "$B/coll_sweep" --help
expect_in "$TMP/out" "reduce_copy" "--coll's help names the new collective"
expect_in "$TMP/out" "or mpi2 (host memory)" "--backend's help names the new backend"

expect_rc 0 "coll_sweep --backend mpi2 runs on 2 ranks" -- mpi 2 "$B/coll_sweep" --backend mpi2 -e 4K -n 3 -w 1
expect_in "$TMP/out" "wrong values: 0 OK" "its results are validated"

expect_rc 0 "compute_probe --engine blas2 runs" -- "$B/compute_probe" --engine blas2 --sizes 64 -n 1 --copy-bytes 0
expect_in "$TMP/out" "blas2" "its rows name the new engine"
expect_rc 0 "compute_probe --help" -- "$B/compute_probe" --help
expect_in "$TMP/out" "blas, cublas or blas2" "--engine's help names it"

expect_rc 0 "ring_shift runs on 2 ranks" -- \
    mpi 2 "$B/ring_shift" --sizes 8,64K -n 5 -w 1 --csv "$TMP/ring.csv" --json "$TMP/ring.json"
python3 "$TESTS_DIR/results.py" "$TMP/ring.csv" "$TMP/ring.json" --columns bytes,time_us,bw_GBps,wrong --rows 2 \
    --zero-wrong --complete && pass "its CSV and JSON have a row per size" || fail "ring_shift's CSV and JSON"
expect_rc 0 "its test, test_ring_shift.sh, passes in the copy" -- "$TREE/tests/integration/test_ring_shift.sh"

expect_rc 0 "run_all.sh --dry-run --np 2 in the copy" -- "$TREE/run_all.sh" --dry-run --np 2
expect_in "$TMP/out" "] ring_shift: timeout" "it lists the ring_shift step"
expect_in "$TMP/out" "$B/ring_shift -b 8" "with its launch line"
expect_rc 0 "test_manifest.sh passes in the copy (the step's program, page and test)" -- \
    "$TREE/tests/integration/test_manifest.sh"

# The tests that enumerate collectives, backends and steps, in the copy, with every recipe applied.
for t in test_coll_sweep.sh test_invariants.sh test_suite_estimate.sh test_run_all_dry_run.sh; do
    expect_rc 0 "$t passes in the copy" -- env -C "$TREE" BUILD="$BUILD" nice "tests/integration/$t"
done
expect_rc 0 "run_all.sh --backend mpi2 --dry-run in the copy" -- "$TREE/run_all.sh" --dry-run --quick --np 2 --backend mpi2
expect_in "$TMP/out" "coll_sweep --coll all -b 8 -e 1M -f 8 --max-seconds-per-size 0.25 --backend mpi2" \
    "its steps run with the new backend"
expect_in "$TMP/out" "ring_shift " "and the new step is estimated"
expect_in "$TMP/out" "$(( $("$BIN/coll_sweep" --list collectives | wc -l) + 1 )) collectives x " \
    "over every collective, the new one too"
# Its results in the copy, checked by the copy's invariants.py (which knows the new collective's factor).
RUN=$TREE/results/mpi2
expect_rc 0 "run_all.sh --backend mpi2 --steps coll_sweep in the copy" -- \
    nice "$TREE/run_all.sh" --quick --no-install --np 2 --steps coll_sweep --backend mpi2 --out "$RUN"
python3 "$TREE/tests/integration/results.py" "$RUN/coll_sweep.csv" "$RUN/coll_sweep.json" --columns collective,bytes,busbw_GBps,wrong \
    --zero-wrong --complete --expect nranks=2 && pass "its sweep is complete, nothing wrong" ||
    fail "run_all.sh --backend mpi2's coll_sweep"
grep -q '^# backend: mpi2' "$RUN/coll_sweep.csv" && pass "on the new backend" || fail "coll_sweep.csv names no backend mpi2"
grep -q '^reduce_copy,' "$RUN/coll_sweep.csv" && pass "the sweep has the new collective's rows" ||
    fail "run_all.sh --backend mpi2: no reduce_copy rows in coll_sweep.csv"
expect_rc 0 "the copy's invariants.py holds on them" -- python3 "$TREE/tests/integration/invariants.py" "$RUN"
finish
