# Counting for the test runners (tests/run.sh, tests/unit/run.sh,
# tests/integration/run.sh): every test is passed, failed or skipped, and a
# skip is never counted as a pass.
#
# With CI=true a skip is a failure unless the test is named in
# PARABENCH_ALLOWED_SKIPS (space-separated: integration script names such as
# test_emulated_cluster.sh, or unit test case names): what CI is meant to run,
# it runs. Elsewhere a skip is reported and counted, and does not fail the run.
NPASS=0 NFAIL=0 NSKIP=0
FAILED_NAMES=""

# tally_record NAME pass|fail|skip [REASON]
tally_record() {
    case $2 in
    pass) NPASS=$((NPASS + 1)) ;;
    fail) NFAIL=$((NFAIL + 1)); FAILED_NAMES="$FAILED_NAMES $1" ;;
    skip)
        if [ "${CI:-}" = true ] && ! case " ${PARABENCH_ALLOWED_SKIPS:-} " in *" $1 "*) true ;; *) false ;; esac; then
            echo "FAIL: $1 skipped under CI=true and is not in PARABENCH_ALLOWED_SKIPS${3:+ ($3)}" >&2
            NFAIL=$((NFAIL + 1)); FAILED_NAMES="$FAILED_NAMES $1"
        else
            NSKIP=$((NSKIP + 1))
        fi ;;
    esac
}

# tally_done LABEL: print the counts; add them to $PB_TALLY_FILE (tests/run.sh
# sums the runners); exit 1 if anything failed.
tally_done() {
    [ -n "${PB_TALLY_FILE:-}" ] && echo "$NPASS $NFAIL $NSKIP" >>"$PB_TALLY_FILE"
    # Sorted: parallel tests end in any order, the summary does not.
    [ -n "$FAILED_NAMES" ] && echo "$1: failed: $(printf '%s\n' $FAILED_NAMES | sort | tr '\n' ' ')" >&2
    echo "$1: $NPASS passed, $NFAIL failed, $NSKIP skipped"
    [ "$NFAIL" -eq 0 ]
}
