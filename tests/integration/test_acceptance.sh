#!/usr/bin/env bash
# acceptance: rules evaluated against a synthetic results directory (no MPI,
# no timing): pass, fail (exit 1, JUnit failure), skip (link class absent),
# missing data, worst-row selection, nearest size; bad threshold files exit 2
# with FILE:LINE; the shipped example files parse.
source "$(dirname "$0")/lib.sh"
ACC=$BIN/acceptance
[ -x "$ACC" ] || { echo "FAIL: $ACC not built" >&2; exit 1; }
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
R=$TMP/run; mark_run "$R"
cat >"$R/coll_sweep.csv" <<'CSV'
# parabench coll_sweep
collective,bytes,count,nranks,link_class,time_us,algbw_GBps,busbw_GBps,wrong
allreduce,8,2,3,intra,5.0,0.0016,0.002,0
allreduce,67108860,16777215,3,intra,30000,2.2,3.0,0
allgather,67108860,16777215,3,intra,30000,2.2,1.5,2
# complete
CSV
cat >"$R/pp_pipeline.csv" <<'CSV'
schedule,stages,micro_batches,link_class,efficiency,efficiency_theory,wrong
1f1b,2,4,intra,0.72,0.8,0
1f1b,2,8,intra,0.8,0.888889,0
gpipe,2,8,intra,0.6,0.888889,0
# complete
CSV

cat >"$TMP/pass.thr" <<'EOF2'
# passes
busbw coll=allreduce size=64M link=intra >= 2.5 GB/s   # 64M matches 67108860 (rounded to 3 ranks)
coll_latency coll=allreduce size=8 <= 10 us
pp_efficiency schedule=1f1b >= 85 %                     # worst of 0.9 and 0.9
busbw coll=allreduce size=64M link=inter >= 40 GB/s     # no inter rows: skipped
EOF2
expect_rc 0 "passing thresholds" -- "$ACC" --thresholds "$TMP/pass.thr" --results "$R" --junit "$TMP/pass.xml"
expect_in "$TMP/out" "3 passed, 0 failed, 1 skipped of 4 rules: PASS" "pass: verdict line"
expect_in "$TMP/out" "this run has no inter rows" "pass: inter rule skipped with a reason"
expect_in "$TMP/pass.xml" "<skipped message=" "pass: JUnit records the skip"

cat >"$TMP/fail.thr" <<'EOF2'
busbw coll=allreduce size=64M >= 1000000 GB/s
pp_efficiency >= 0.7
busbw coll=allgather size=64M >= 0.1 GB/s
p2p_latency size=8 <= 5 us
busbw coll=broadcast size=64M >= 1
busbw coll=allreduce size=1G >= 1
EOF2
expect_rc 1 "impossible thresholds fail with exit 1" -- "$ACC" -t "$TMP/fail.thr" -r "$R" --junit "$TMP/fail.xml"
cp "$TMP/out" "$TMP/fail.out"
expect_in "$TMP/fail.out" "0 passed, 6 failed" "fail: every rule fails"
expect_in "$TMP/fail.out" "measured 3, required >= 1e+06 GB/s" "fail: says measured and required"
expect_in "$TMP/fail.out" "0.675" "fail: worst row across schedules (gpipe 0.6/0.889)"
expect_in "$TMP/fail.out" "2 wrong values" "fail: wrong data fails a bandwidth rule"
expect_in "$TMP/fail.out" "no p2p_sweep*.csv" "fail: missing benchmark output"
expect_in "$TMP/fail.out" "no matching rows" "fail: no row at that size or collective"
if python3 - "$TMP/fail.xml" <<'PY'
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
cases = root.findall(".//testcase")
assert root.tag == "testsuites" and root.get("failures") == "6" and len(cases) == 6, root.attrib
assert all(c.find("failure") is not None for c in cases)
# The inner <testsuite>'s counts are its elements' (6 failures, 0 skipped: a swap shows).
suite = root.find("testsuite")
assert int(suite.get("failures")) == len(suite.findall(".//failure")) == 6, suite.attrib
assert int(suite.get("skipped")) == len(suite.findall(".//skipped")) == 0, suite.attrib
assert "line 1: busbw coll=allreduce" in cases[0].get("name")
PY
then pass "fail: JUnit XML parses and records 6 failures"; else fail "fail: JUnit XML"; fi

# ---- a rule size halfway between two measured sizes takes the smaller, in either row order ----
for order in up down; do
    H=$TMP/tie-$order; mark_run "$H"
    { echo "collective,bytes,count,nranks,link_class,time_us,algbw_GBps,busbw_GBps,wrong"
      small="allreduce,1048576,262144,2,intra,200,5.0,5.0,0"; large="allreduce,4194304,1048576,2,intra,4000,1.0,1.0,0"
      if [ $order = up ]; then printf '%s\n%s\n' "$small" "$large"; else printf '%s\n%s\n' "$large" "$small"; fi
      echo "# complete"; } >"$H/coll_sweep.csv"
    echo "busbw coll=allreduce size=2M >= 3 GB/s" >"$TMP/tie.thr"
    expect_rc 0 "size 2M between 1M and 4M ($order): the 1M row decides" -- "$ACC" -t "$TMP/tie.thr" -r "$H"
    echo "busbw coll=allreduce size=2M <= 3 GB/s" >"$TMP/tie.thr"
    expect_rc 1 "size 2M between 1M and 4M ($order): the 1M row fails <= 3" -- "$ACC" -t "$TMP/tie.thr" -r "$H"
    expect_in "$TMP/out" "measured 5," "tie ($order): the 1M row's busbw is the one measured"
done

# ---- bad threshold files: exit 2, FILE:LINE: message ----
bad() { # desc line text expected-message
    printf '%b' "$3" >"$TMP/bad.thr"
    expect_rc 2 "bad file: $1" -- "$ACC" -t "$TMP/bad.thr" -r "$R"
    expect_in "$TMP/err" "bad.thr:$2: $4" "bad file: $1: message names line $2"
}
bad "unknown metric" 2 "# x\nbandwidth coll=allreduce size=1M >= 1\n" "'bandwidth' is not a metric"
bad "bad size" 1 "busbw coll=allreduce size=12Q >= 1\n" "size '12Q' is not a size"
bad "bad comparison" 3 "\n\nbusbw coll=allreduce size=1M > 1\n" "'>' is neither a key=value selector nor a comparison"
bad "wrong unit" 1 "p2p_latency size=8 <= 3 GB/s\n" "unit 'GB/s' is not accepted for p2p_latency; expected us"
bad "missing key" 1 "busbw size=1M >= 1\n" "busbw needs coll="
bad "empty file" 1 "" "no rules"
expect_rc 2 "missing results directory" -- "$ACC" -t "$TMP/pass.thr" -r "$TMP/nope"
expect_in "$TMP/err" "is not a directory" "missing results directory: message"
expect_rc 2 "missing threshold file" -- "$ACC" -t "$TMP/nope.thr" -r "$R"
# ---- a results path is taken literally, never as a pattern ----
# 'a*' holds a good run; 'ab' (which the pattern a*/coll_sweep*.csv would also
# read) a run cut short: only the literal directory may be read.
mark_run "$TMP/lit/a*" "$TMP/lit/ab"
cp "$ROOT/tests/acceptance_cases/good/coll_sweep.csv" "$TMP/lit/a*/coll_sweep.csv"
cp "$ROOT/tests/acceptance_cases/cut/coll_sweep.csv" "$TMP/lit/ab/coll_sweep.csv"
printf 'busbw coll=allreduce size=64M >= 1 GB/s\n' >"$TMP/lit.thr"
expect_rc 0 "results directory with a '*' read literally" -- "$ACC" -t "$TMP/lit.thr" -r "$TMP/lit/a*"
expect_rc 2 "a pattern is not a directory" -- "$ACC" -t "$TMP/lit.thr" -r "$TMP/lit/a?"
cp "$ROOT/tests/acceptance_cases/cut/coll_sweep.csv" "$TMP/lit/a*/coll_sweep[1].csv"
expect_rc 1 "a file name with '[' is read too" -- "$ACC" -t "$TMP/lit.thr" -r "$TMP/lit/a*"
expect_in "$TMP/out" "coll_sweep[1].csv:4: garbled row" "the bracketed file is named"
# Only regular files are results: a directory and a dangling link named like one are passed over.
mark_run "$TMP/lit/reg"; mkdir -p "$TMP/lit/reg/coll_sweep_old.csv"
cp "$ROOT/tests/acceptance_cases/good/coll_sweep.csv" "$TMP/lit/reg/coll_sweep.csv"
ln -s "$TMP/lit/reg/gone" "$TMP/lit/reg/coll_sweep_gone.csv"
expect_rc 0 "a directory and a dangling link named coll_sweep*.csv are not results" -- \
    "$ACC" -t "$TMP/lit.thr" -r "$TMP/lit/reg"
expect_in "$TMP/out" "1 passed, 0 failed, 0 skipped of 1 rules: PASS" "judged on the one regular file"

# ---- JUnit XML stays well-formed whatever the rules and paths hold ----
mark_run "$TMP/x<&\"'"
cp "$ROOT/tests/acceptance_cases/nan/coll_sweep.csv" "$TMP/x<&\"'/coll_sweep.csv"
printf 'fit_error benchmark=\xff\x01<&"\x1b <= 1 # invalid UTF-8 and control bytes in a selector\nbusbw coll=allreduce size=64M >= 1\n' >"$TMP/odd\xfe.thr"
expect_rc 1 "odd bytes in rules and paths" -- "$ACC" -t "$TMP/odd\xfe.thr" -r "$TMP/x<&\"'" --junit "$TMP/odd.xml"
if python3 - "$TMP/odd.xml" <<'PY'
import sys, xml.dom.minidom
doc = xml.dom.minidom.parse(sys.argv[1])
cases = doc.getElementsByTagName("testcase")
assert len(cases) == 2, len(cases)
assert "\ufffd" in cases[0].getAttribute("name"), cases[0].getAttribute("name")
assert "not a finite number" in cases[1].getElementsByTagName("failure")[0].getAttribute("message")
PY
then pass "JUnit XML with invalid UTF-8 and control bytes parses"; else fail "JUnit XML with odd bytes"; fi

for f in "$ROOT"/acceptance/*.thresholds; do
    expect_rc 0 "shipped $(basename "$f") parses" -- "$ACC" --check "$f"
done
# A rule that matches only rows the benchmark marked untrustworthy has no trustworthy data:
# it fails with that reason, whatever the values (a noisy 269% overhead would pass "<= 5").
# With a trustworthy row beside them, the rule is judged on that row alone.
U=$TMP/untrusted; mark_run "$U"
cat >"$U/dp_allreduce.csv" <<'CSV'
nranks,link_class,grad_bytes,overlap,overhead,predicted_overhead,wrong
2,intra,4194304,none,0.27,0.25,0
2,intra,4194304,bucket,2.69,0.25,0
# note: untrustworthy: overhead 2.690 (grad 4194304 B, overlap bucket): exposed = step - compute = 26.9 us: within the spread of the step times; use more iterations (-n) or a bigger model
# complete
CSV
cat >"$U/pp_pipeline.csv" <<'CSV'
schedule,stages,micro_batches,link_class,efficiency,efficiency_theory,wrong
1f1b,2,8,intra,1.2,0.888889,0
# note: untrustworthy: efficiency 1.200 (1f1b, m=8): above 1 (the step measured shorter than the compute it holds); use more iterations (-n) or a bigger model
# complete
CSV
printf 'dp_overhead overlap=bucket <= 5\n' >"$TMP/noted-dp.thr"
expect_rc 1 "a rule matching only untrustworthy rows fails" -- "$ACC" --thresholds "$TMP/noted-dp.thr" --results "$U"
expect_in "$TMP/out" "no trustworthy data: 1 matching row marked untrustworthy ($U/dp_allreduce.csv:3: exposed = step - compute" \
    "untrustworthy only: the reason names the row and the note"
printf 'pp_efficiency schedule=1f1b >= 10 %%\n' >"$TMP/noted-pp.thr"
expect_rc 1 "a pp rule matching only an untrustworthy row fails" -- "$ACC" --thresholds "$TMP/noted-pp.thr" --results "$U"
expect_in "$TMP/out" "no trustworthy data" "pp untrustworthy only: the reason"
printf 'dp_overhead <= 0.5\n' >"$TMP/noted-mixed.thr"
expect_rc 0 "a rule with a trustworthy row is judged on it" -- "$ACC" --thresholds "$TMP/noted-mixed.thr" --results "$U"
expect_in "$TMP/out" "0.270" "mixed: the trustworthy row's value is the one measured"
finish
