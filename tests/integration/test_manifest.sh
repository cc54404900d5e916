#!/usr/bin/env bash
# suite/manifest.py is the one list of the suite's steps (test_manifest.py says precisely what
# a list is and where one may be): every step's program is built, every step has a page and an
# integration test naming it, no other tracked file lists steps, and suite/ and scripts/ name no
# step (they find its output by its role). The other side: a file
# holding a list like the one run_all.sh used to keep is found.
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || skip_test "python3 not found"
[ -x "$BIN/coll_sweep" ] || skip_test "$BIN is not built (make first)"
if python3 "$TESTS_DIR/test_manifest.py" "$BIN" >"$TMP/check" 2>&1; then pass "manifest: $(tail -n 1 "$TMP/check")"
else fail "manifest"; sed 's/^/  | /' "$TMP/check" >&2; fi

cat >"$TMP/old-list.sh" <<'EOF2'
STEPS=(
    "coll_sweep|coll_sweep|30"
    "coll_sweep_intra|coll_sweep|20"
    "p2p_matrix|p2p_sweep|4"
    "plan_fit|plan|1"
)
EOF2
python3 "$TESTS_DIR/test_manifest.py" --scan "$TMP/old-list.sh" >"$TMP/scan" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "coll_sweep_intra" "$TMP/scan" && pass "a list of steps elsewhere is found ($(cat "$TMP/scan"))" \
    || fail "a list of steps in a script went unnoticed (exit $rc: $(cat "$TMP/scan"))"

# One name per step: a consumer naming a step, quoted or by its file, is found at its line; the same
# words as a program, a figure or an ordinary word (allowed there) are not.
printf 'x = 1\ncoll = rows(out, "coll_sweep_intra")\npairs = os.path.join(out, "p2p_matrix-pairs.csv")\n' >"$TMP/consumer.py"
python3 "$TESTS_DIR/test_manifest.py" --scan-names scripts/report.py "$TMP/consumer.py" >"$TMP/names" 2>&1
rc=$?
[ "$rc" -eq 1 ] && grep -q "^scripts/report.py:2: names the step 'coll_sweep_intra'" "$TMP/names" \
    && grep -q "^scripts/report.py:3: names the step 'p2p_matrix'" "$TMP/names" \
    && pass "a consumer naming a step is found at its line" || fail "a step named in a consumer went unnoticed (exit $rc: $(cat "$TMP/names"))"
printf 'junit = "acceptance-junit.xml"\nbinary = ["coll_sweep", "--coll", "allreduce"]\n' >"$TMP/words.py"
python3 "$TESTS_DIR/test_manifest.py" --scan-names scripts/compare-osu-table.py "$TMP/words.py" >"$TMP/words" 2>&1
[ $? -eq 0 ] && pass "a program and an ordinary word are not taken for steps" || fail "false alarm: $(cat "$TMP/words")"
finish
