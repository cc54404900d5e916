#!/usr/bin/env bash
# test-runner: waits (for the hang it runs under a 20 s limit)
# tests/integration/run.sh, the runner of `make test`, on a scratch folder of
# its own: a test that hangs fails after PB_TEST_LIMIT_S, and what it started
# is taken down with it; a passing test passes, a test marked as waiting runs
# beside the pool (outside its count), a test of the cluster tier runs only
# under PB_TEST_TIER=cluster (make test-cluster) and one of the sanitized tier
# only under PB_TEST_TIER=sanitized (make test-sanitized), a skip (exit 77) is counted
# as a skip and never as a pass, and the run's exit says a test failed.
# The scratch run keeps to its own tally (no PB_TALLY_FILE: make test sums that one). Seconds.
. "$(dirname "$0")/lib.sh"

R=$TMP/tests
mkdir -p "$R/integration"
cp "$TESTS_DIR/run.sh" "$R/integration/"
cp "$TESTS_DIR/../tally.sh" "$R/"
cat >"$R/integration/test_hangs.sh" <<EOF
date +%s >"$TMP/hang.start"
sleep 90 & echo \$! >"$TMP/hang.pid"
wait
EOF
# 1 s of CPU however busy the machine is (under the limit below even on a loaded
# machine), which the verdict line counts
cat >"$R/integration/test_passes.sh" <<'EOF'
echo fine
cat >/dev/null <<'DOC'
# test-runner: exclusive (inside a here-document: not this test's mark, which is in its opening comment)
DOC
python3 -c 'import time
while time.process_time() < 1: pass'
EOF
echo 'exit 77' >"$R/integration/test_skips.sh"
# Marked as waiting: it runs beside the pool, whose one slot (PB_TEST_JOBS=1) the hang holds
# for its 20 s. It waits (10 s at most) for the hang to start, and says when it saw it: in the
# pool it would start after the hang's 20 s; counted in the pool, it would hold the one slot.
cat >"$R/integration/test_waits.sh" <<EOF
# test-runner: waits (a test of the runner)
for _ in \$(seq 100); do [ -s "$TMP/hang.start" ] && break; sleep 0.1; done
[ -s "$TMP/hang.start" ] && date +%s >"$TMP/waits.start"
EOF
# Of the cluster tier: run by make test-cluster (PB_TEST_TIER=cluster), not by make test.
cat >"$R/integration/test_cluster_tier.sh" <<EOF
# test-runner: exclusive (a test of the runner)
echo ran >>"$TMP/cluster.ran"
EOF
# Of the sanitized tier: run by make test-sanitized (PB_TEST_TIER=sanitized), not by make test.
cat >"$R/integration/test_sanitized_tier.sh" <<EOF
# test-runner: sanitized (a test of the runner)
echo ran >>"$TMP/sanitized.ran"
EOF

: >"$TMP/outer.tally"
export PB_TALLY_FILE=$TMP/outer.tally # stands for make test's: the scratch run must not add to it
t0=$SECONDS
env -u CI -u PB_TALLY_FILE -u PB_TEST_TIER PB_TEST_LIMIT_S=20 PB_TEST_JOBS=1 bash "$R/integration/run.sh" >"$TMP/out" 2>&1
rc=$?
took=$((SECONDS - t0))
[ "$rc" -ne 0 ] && pass "the run fails (exit $rc)" || fail "the run passed with a hung test"
expect_in "$TMP/out" "=== test_hangs.sh FAILED (timed out after 20 s" "the hang fails, named as a hang"
expect_in "$TMP/out" "=== test_passes.sh passed" "the passing test passes"
cpu=$(sed -n 's/^=== test_passes.sh passed ([0-9]* s, \([0-9]*\) s CPU)$/\1/p' "$TMP/out")
[ -n "$cpu" ] && [ "$cpu" -ge 1 ] && pass "its line counts the CPU it used ($cpu s)" ||
    fail "test_passes.sh's CPU seconds: $(grep '=== test_passes' "$TMP/out")"
expect_in "$TMP/out" "integration: $cpu s of CPU in " "the run's CPU seconds are the sum of its tests'"
expect_in "$TMP/out" "=== test_skips.sh SKIPPED" "the skip is a skip"
expect_in "$TMP/out" "=== test_waits.sh passed" "the waiting test passes"
w=$(cat "$TMP/waits.start" 2>/dev/null) h=$(cat "$TMP/hang.start" 2>/dev/null)
[ -n "$w" ] && [ -n "$h" ] && [ "$w" -lt $((h + 15)) ] && pass "the waiting test ran while the hang held the pool's one slot" ||
    fail "the waiting test did not run beside the pool: it started at ${w:-?}, the hang at ${h:-?} (limit 20 s)"
expect_in "$TMP/out" "integration: 2 passed, 1 failed, 1 skipped" "the tally"
[ ! -s "$TMP/outer.tally" ] && pass "make test's own tally is left alone" || fail "the scratch run added to the outer tally"
[ ! -e "$TMP/cluster.ran" ] && ! grep -q test_cluster_tier "$TMP/out" && pass "the cluster tier is not make test's" ||
    fail "make test's tier ran the cluster tier's test"
env -u CI -u PB_TALLY_FILE PB_TEST_TIER=cluster PB_TEST_LIMIT_S=20 bash "$R/integration/run.sh" >"$TMP/cluster.out" 2>&1
expect_in "$TMP/cluster.out" "integration: 1 passed, 0 failed, 0 skipped" "PB_TEST_TIER=cluster runs that tier's one test, and no other"
[ "$(cat "$TMP/cluster.ran" 2>/dev/null)" = ran ] && pass "and it ran once" || fail "the cluster tier's test: '$(cat "$TMP/cluster.ran" 2>/dev/null)'"
[ ! -e "$TMP/sanitized.ran" ] && ! grep -q test_sanitized_tier "$TMP/out" "$TMP/cluster.out" &&
    pass "the sanitized tier is neither make test's nor the cluster's" || fail "another tier ran the sanitized tier's test"
env -u CI -u PB_TALLY_FILE PB_TEST_TIER=sanitized PB_TEST_LIMIT_S=20 bash "$R/integration/run.sh" >"$TMP/san.out" 2>&1
expect_in "$TMP/san.out" "integration: 1 passed, 0 failed, 0 skipped" "PB_TEST_TIER=sanitized runs that tier's one test, and no other"
[ "$(cat "$TMP/sanitized.ran" 2>/dev/null)" = ran ] && pass "and it ran once" || fail "the sanitized tier's test: '$(cat "$TMP/sanitized.ran" 2>/dev/null)'"
expect_rc 2 "PB_TEST_TIER=some is refused" -- env -u PB_TALLY_FILE PB_TEST_TIER=some bash "$R/integration/run.sh"
expect_in "$TMP/err" "PB_TEST_TIER='some': expected main, cluster, sanitized or all" "naming the variable and what is accepted"
# the limit is 20 s and the hang's own sleep 90 s: the runner did not wait for it
[ "$took" -lt 60 ] && pass "the run ended in $took s" || fail "the run took $took s: the limit did not end the hang"
# gone, or a zombie its reaper has not collected yet (it ran nothing more after the signal)
running() { kill -0 "$1" 2>/dev/null && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }
pid=$(cat "$TMP/hang.pid" 2>/dev/null)
for _ in $(seq 50); do [ -n "$pid" ] && running "$pid" || break; sleep 0.1; done # its SIGTERM is on its way
if [ -n "$pid" ] && ! running "$pid"; then
    pass "the hung test's own child (pid $pid) is gone"
else
    fail "the hung test's child ${pid:-?} outlived it"
    [ -n "$pid" ] && kill "$pid" 2>/dev/null # ours: started by this test's scratch run
fi
finish
