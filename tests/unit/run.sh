#!/usr/bin/env bash
# Run the cmocka unit test binaries given as arguments and count their test
# cases as passed, failed or skipped (tests/tally.sh). A binary that exits
# non-zero without reporting a failed case (a crash) counts as one failure.
. "$(dirname "$0")/../tally.sh"
for t in "$@"; do
    out=$("$t" 2>&1)
    rc=$?
    # Each case's verdict is the status line that follows its "[ RUN ]" line.
    counts=$(printf '%s\n' "$out" | awk '
        /^\[ RUN      \] / { cur = substr($0, 14); next }
        cur != "" && $0 == "[       OK ] " cur { print "pass " cur; cur = "" }
        cur != "" && $0 == "[  SKIPPED ] " cur { print "skip " cur; cur = "" }
        cur != "" && $0 == "[  FAILED  ] " cur { print "fail " cur; cur = "" }')
    nfail_before=$NFAIL
    while read -r verdict name; do
        [ -n "$verdict" ] && tally_record "$name" "$verdict" "in $t"
    done <<<"$counts"
    if [ "$rc" -ne 0 ] && [ "$NFAIL" -eq "$nfail_before" ]; then tally_record "$(basename "$t")" fail; fi
    if [ "$rc" -ne 0 ] || grep -q '^skip ' <<<"$counts"; then printf '%s\n' "$out" | sed 's/^/  | /'; fi
    echo "== $t: $(grep -c '^pass ' <<<"$counts") passed, $(grep -c '^fail ' <<<"$counts") failed, $(grep -c '^skip ' <<<"$counts") skipped (exit $rc)"
done
tally_done unit
