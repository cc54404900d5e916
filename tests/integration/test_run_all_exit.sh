#!/usr/bin/env bash
# run_all.sh's exit code follows the cause of a failure (docs/run_all.md): 3 when
# steps failed for the environment, 4 when one hung, 1 for wrong data or missed
# thresholds, and 1 first when there are several. Every failing step used to make
# it exit 1, so a machine without a GPU read as wrong data.
source "$(dirname "$0")/lib.sh"
# Ranks left waiting on a peer that failed, hung or was stopped (on purpose here) yield
# their processor to the other tests instead of spinning on it until the job ends.
export OMPI_MCA_mpi_yield_when_idle=1
command -v python3 >/dev/null || skip_test "python3 not found"
[ -x "$BIN/coll_sweep" ] || skip_test "$BIN is not built (make first)"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)

# run_quick NAME ENV...: a quick run at 2 ranks with the faults ENV injects (~20 s: the steps fail early);
# QUIET= before it shows the progress lines.
run_quick() {
    local name=$1; shift
    env "$@" BUILD="$BUILD" timeout 600 "$ROOT/run_all.sh" --quick ${QUIET---quiet} --no-install --np 2 --bind none \
        --out "$TMP/$name" >"$TMP/$name.out" 2>"$TMP/$name.err"
}

# Every rank 1 fails to create its communicator: every MPI step exits 3, run_all exits 3.
QUIET= run_quick env PARABENCH_TEST_FAIL=comm:1
rc=$?
[ "$rc" -eq 3 ] && pass "steps failing for the environment: run_all exits 3" ||
    { fail "steps failing for the environment: exit $rc, expected 3"; cat "$TMP/env/steps.tsv" >&2; }
expect_in "$TMP/env.err" "run_all.sh: exit 3: the environment" "exit 3: stderr names the cause"
# The progress names each failed step, its exit and its log, which holds the step's own words.
expect_in "$TMP/env.err" "run_all:   coll_sweep failed with exit 3; see $TMP/env/logs/coll_sweep.err" \
    "progress: the failed step, its exit and its log"
grep -q . "$TMP/env/logs/coll_sweep.err" && pass "the failed step's log is not empty" || fail "logs/coll_sweep.err is empty"

# Both causes: the sweeps exit 3 (buffers), the workloads find a corrupted element (exit 1): 1 wins.
run_quick mixed PARABENCH_TEST_FAIL=buffers:1 PARABENCH_TEST_CORRUPT=1
rc=$?
grep -qP '\tfailed\t3\t' "$TMP/mixed/steps.tsv" && grep -qP '\tfailed\t1\t' "$TMP/mixed/steps.tsv" &&
    pass "mixed run: steps failed with 3 and with 1" || { fail "mixed run: expected steps with 3 and 1"; cat "$TMP/mixed/steps.tsv" >&2; }
[ "$rc" -eq 1 ] && pass "wrong data with environment failures: run_all exits 1" ||
    { fail "wrong data with environment failures: exit $rc, expected 1"; cat "$TMP/mixed/steps.tsv" >&2; }
expect_in "$TMP/mixed.err" "run_all.sh: exit 1: wrong data" "exit 1: stderr names the cause"

# The mapping itself, including the hang (a hung step takes the whole step limit to show end to end).
if (cd "$ROOT" && python3 - <<'PY') >"$TMP/map" 2>&1; then pass "exit mapping: $(tail -n 1 "$TMP/map")"; else
from suite.driver import cause, run_exit
cases = [((3, True), 3), ((4, True), 4), ((124, True), 4), ((137, True), 4), ((1, True), 1),
         ((124, False), 1), ((139, True), 1), ((2, True), 1)]
for (rc, limited), want in cases:
    assert cause(rc, limited) == want, f"cause({rc}, {limited}) = {cause(rc, limited)}, expected {want}"
for causes, want in [(set(), 0), ({3}, 3), ({4}, 4), ({3, 4}, 4), ({1, 3}, 1), ({1, 4}, 1), ({1, 3, 4}, 1)]:
    assert run_exit(causes) == want, f"run_exit({causes}) = {run_exit(causes)}, expected {want}"
print(f"{len(cases)} step exits, 7 sets of causes")
PY
    fail "exit mapping"; sed 's/^/  | /' "$TMP/map" >&2; fi
# A write the results directory refuses mid-run (the fault hook refuses p2p_sweep's log, as a full
# disk would): exit 3 at that step, and meta.json written once more, with the steps completed before it.
PARABENCH_TEST_REFUSE=logs/p2p_sweep.err BUILD="$BUILD" timeout 600 "$ROOT/run_all.sh" --quick --quiet --no-install --np 2 --bind none --steps coll_sweep,p2p_sweep \
    --out "$TMP/refused" >"$TMP/refused.out" 2>"$TMP/refused.err"
rc=$?
[ "$rc" -eq 3 ] && pass "a refused write stops the run: exit 3" || { fail "refused write: exit $rc, expected 3"; tail -5 "$TMP/refused.err" >&2; }
expect_in "$TMP/refused.err" "cannot write $TMP/refused/logs/p2p_sweep.err" "the message names the file refused"
python3 - "$TMP/refused/meta.json" <<'PY' && pass "meta.json records the steps before the stop" || fail "meta.json after the stop"
import json, sys
steps = {s["name"]: s["status"] for s in json.load(open(sys.argv[1]))["steps"]}
print(steps)
assert steps.get("coll_sweep") == "ok" and "p2p_sweep" not in steps, steps
PY
# A benchmark that does not link (its object garbled, in a copy of the build): make -k builds the rest,
# the step is "not built", and both the step and the build are named as failed, exit 3.
case $BUILD in /*) built=$BUILD ;; *) built=$ROOT/$BUILD ;; esac
mkdir -p "$TMP/nolink"
cp -a "$built/bin" "$built/lib" "$built/obj" "$built/.flags" "$TMP/nolink/"
echo 'not an object' >"$TMP/nolink/obj/benchmarks/p2p_sweep.o"
rm -f "$TMP/nolink/bin/p2p_sweep"
BUILD="$TMP/nolink" timeout 600 "$ROOT/run_all.sh" --quick --no-install --np 2 --bind none --steps p2p_sweep \
    --out "$TMP/nolink-run" >"$TMP/nolink.out" 2>"$TMP/nolink.err"
rc=$?
[ "$rc" -eq 3 ] && pass "a benchmark that does not link: exit 3" || { fail "not linked: exit $rc, expected 3"; tail -5 "$TMP/nolink.err" >&2; }
expect_in "$TMP/nolink.err" "run_all.sh: failed: p2p_sweep(not built) build" "the failures name the step not built and the build"
grep -qP '^p2p_sweep\tnot built\t' "$TMP/nolink-run/steps.tsv" && pass "steps.tsv: p2p_sweep not built" ||
    { fail "steps.tsv lacks p2p_sweep not built"; cat "$TMP/nolink-run/steps.tsv" >&2; }
expect_in "$TMP/nolink.err" "run_all:   p2p_sweep: not built" "the progress says the step is not built, as it happens"
expect_in "$TMP/nolink-run/logs/p2p_sweep.err" "$TMP/nolink/bin/p2p_sweep is not built" "the step's log names the binary missing"
finish
