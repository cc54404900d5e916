#!/usr/bin/env bash
# Run the integration tests of a tier (PB_TEST_TIER, below) and count each as
# passed (exit 0), skipped (exit 77, as automake's test harness does) or failed
# (anything else); see tests/tally.sh for skips under CI.
#
# Tests run PB_TEST_JOBS at a time (default: twice the number of cores, at most 4),
# the longest first so that the short ones fill in behind them. A test whose
# opening comment holds the line "# test-runner: exclusive" owns something of the
# machine's (the emulated cluster): it is of the cluster tier, and those run one
# after another in a lane of their own, beside the pool (with PB_TEST_TIER=all),
# which gives up one of its slots while the lane runs. Their shaped links run at 1 Gbit/s, which a busy 2-core machine still
# fills (they assert 70-110% and 50-110% of it). A test marked
# "# test-runner: waits" spends its time waiting by design (for the timeouts it
# provokes, or for hundreds of short launches) and uses little CPU: those run
# one after another in a second lane, beside the pool and outside its count.
# Each test's output is printed whole when it ends, so parallel tests never
# interleave (a lane's, when the lane ends).
cd "$(dirname "$0")" || exit 3
. ../tally.sh

# Most of a test's time is spent waiting (MPI launches, a run_all's steps,
# signals), not computing: two tests per core keep the cores busy.
JOBS=${PB_TEST_JOBS:-$((2 * $(nproc 2>/dev/null || echo 1)))}
[[ "$JOBS" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: PB_TEST_JOBS='$JOBS': expected a positive integer" >&2; exit 2; }
[ "$JOBS" -gt 4 ] && [ -z "${PB_TEST_JOBS:-}" ] && JOBS=4
# A test that hangs fails after this many seconds (timeout's exit 124), its process group
# taken down, instead of holding the whole run: the slowest takes about 500 s on 2 busy cores.
LIMIT=${PB_TEST_LIMIT_S:-1500}
[[ "$LIMIT" =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: PB_TEST_LIMIT_S='$LIMIT': expected a positive integer" >&2; exit 2; }
LOGS=$(mktemp -d /tmp/parabench-itest.XXXXXX)
trap 'rm -rf "$LOGS"' EXIT

# The order to start them in: the slow ones first (seconds a full `make test` took
# each on a 2-core machine; a test not listed counts as short).
weight() {
    case $1 in
    test_failmalloc.sh) echo 200 ;; test_recipes.sh) echo 160 ;; test_gpu_check.sh) echo 140 ;; test_reproduce.sh) echo 130 ;;
    test_run_all_cluster.sh) echo 120 ;; test_dp_allreduce.sh) echo 115 ;; test_slurm.sh) echo 100 ;;
    test_fidelity.sh | test_bad_input.sh | test_slurm_nodes.sh | test_unit_sanitized.sh) echo 95 ;;
    test_install.sh | test_coll_sweep.sh) echo 70 ;; test_run_all_exit.sh) echo 62 ;; test_run_all_spaces.sh) echo 90 ;;
    test_run_all_np8.sh | test_rehearse.sh | test_pp_pipeline.sh) echo 52 ;;
    test_reliability.sh | test_run_all.sh | test_golden_loop.sh | test_run_all_signals.sh | test_bounded_workloads.sh | test_golden_loop_cluster.sh) echo 42 ;;
    test_fsdp_step.sh | test_emulated_cluster.sh | test_hybrid_3d.sh | test_tp_layer.sh | test_full_disk.sh) echo 28 ;;
    test_run_all*.sh | test_coll_dtypes.sh) echo 24 ;;
    test_cp_attention.sh) echo 27 ;;
    *) echo 10 ;;
    esac
}

# marked TEST MARK: the test's opening comment holds "# test-runner: MARK" (a line further
# down, in a here-document say, is not the test's own mark).
marked() { awk -v mark="# test-runner: $2" 'FNR > 1 && !/^#/ { exit } index($0, mark) == 1 { found = 1 } END { exit !found }' "$1"; }
# PB_TEST_TIER: which tests. main (make test): all but the two tiers below; cluster (make
# test-cluster): the tests marked exclusive, which bring up the emulated cluster or Slurm
# nodes and keep both cores busy while they run; sanitized (make test-sanitized): the tests
# marked "# test-runner: sanitized", which build and run the code once more under the
# sanitizers; all (make sanitize): every test.
TIER=${PB_TEST_TIER:-main}
case $TIER in main | cluster | sanitized | all) ;; *) echo "run.sh: PB_TEST_TIER='$TIER': expected main, cluster, sanitized or all" >&2; exit 2 ;; esac
in_tier() {
    case $TIER in
    main) ! marked "$1" exclusive && ! marked "$1" sanitized ;;
    cluster) marked "$1" exclusive ;; sanitized) marked "$1" sanitized ;; all) true ;;
    esac
}
mapfile -t TESTS < <(for t in test_*.sh; do [ -e "$t" ] && in_tier "$t" && echo "$(weight "$t") $t"; done | sort -k1,1nr -k2 | awk '{ print $2 }')

declare -A PID_OF START_OF
report() { # TEST: print its output and record its verdict
    local t=$1 rc
    rc=$(cat "$LOGS/$t.rc" 2>/dev/null || echo 1)
    echo "=== $t"
    cat "$LOGS/$t.log"
    local cpu secs="$((SECONDS - START_OF[$t])) s"
    cpu=$(cpu_seconds "$t")
    [ -n "$cpu" ] && secs="$secs, $cpu s CPU" && CPU_TOTAL=$((CPU_TOTAL + cpu))
    case $rc in
    0) tally_record "$t" pass; echo "=== $t passed ($secs)" ;;
    124) tally_record "$t" fail "timed out"; echo "=== $t FAILED (timed out after $LIMIT s: a hang; PB_TEST_LIMIT_S)" ;;
    77) tally_record "$t" skip "exit 77"; echo "=== $t SKIPPED ($secs)" ;;
    *) tally_record "$t" fail; echo "=== $t FAILED (exit $rc, $secs)" ;;
    esac
}
# The seconds of CPU (user and system) the test and everything it waited for
# used (bash's `times`, second line): what the cores share out, where the wall
# time also counts waiting. Nothing when unknown.
CPU_TOTAL=0
cpu_seconds() {
    [ -s "$LOGS/$1.times" ] || return 0
    sed -n 2p "$LOGS/$1.times" | awk '{
        s = 0
        for (i = 1; i <= 2; i++) { split($i, p, "m"); s += p[1] * 60 + p[2] }
        printf "%d\n", s + 0.5 }'
}
start() {
    local t=$1
    START_OF[$t]=$SECONDS
    ( timeout -k 30 "$LIMIT" bash "$t" >"$LOGS/$t.log" 2>&1; echo $? >"$LOGS/$t.rc"; times >"$LOGS/$t.times" ) &
    PID_OF[$t]=$!
}
# reap_one: wait for any running test (or lane) to end and report it.
reap_one() {
    local t
    while :; do
        for t in "${!PID_OF[@]}"; do
            if ! kill -0 "${PID_OF[$t]}" 2>/dev/null; then
                wait "${PID_OF[$t]}" 2>/dev/null
                unset "PID_OF[$t]"
                if [ -n "${LANE_OF[$t]:-}" ]; then report_lane "$t"; else report "$t"; fi
                return
            fi
        done
        wait -n 2>/dev/null || sleep 0.2
    done
}

# The lanes: each runs its tests in turn, each one's seconds recorded.
declare -A LANE_OF # lane name -> its tests, in the pool's order
for t in "${TESTS[@]}"; do
    if marked "$t" exclusive; then LANE_OF[exclusive-lane]+="$t "
    elif marked "$t" waits; then LANE_OF[waiting-lane]+="$t "; fi
done
run_lane() {
    local t t0
    for t in ${LANE_OF[$1]}; do
        t0=$SECONDS
        ( timeout -k 30 "$LIMIT" bash "$t" >"$LOGS/$t.log" 2>&1; echo $? >"$LOGS/$t.rc"; times >"$LOGS/$t.times" )
        echo $((SECONDS - t0)) >"$LOGS/$t.secs"
    done
}
report_lane() {
    local t
    for t in ${LANE_OF[$1]}; do
        START_OF[$t]=$((SECONDS - $(cat "$LOGS/$t.secs" 2>/dev/null || echo 0)))
        report "$t"
    done
}
for lane in "${!LANE_OF[@]}"; do
    run_lane "$lane" &
    PID_OF[$lane]=$!
done
# The pool's count: its tests and the exclusive lane, not the waiting one.
counted() {
    local n=${#PID_OF[@]}
    [ -n "${PID_OF[waiting-lane]:-}" ] && n=$((n - 1))
    echo "$n"
}

# The pool: JOBS tests at a time.
for t in "${TESTS[@]}"; do
    [[ " ${LANE_OF[*]} " == *" $t "* ]] && continue
    while [ "$(counted)" -ge "$JOBS" ]; do reap_one; done
    start "$t"
done
while [ ${#PID_OF[@]} -gt 0 ]; do reap_one; done
echo "integration: $CPU_TOTAL s of CPU in $SECONDS s, $JOBS tests at a time (tier: $TIER)"
tally_done integration
