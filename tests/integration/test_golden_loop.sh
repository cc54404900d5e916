#!/usr/bin/env bash
# The operator's loop (docs/acceptance.md, "The golden-run loop") on one real
# run made here (run_all.sh --quick --np 2, a few steps), reused for every check:
#  - acceptance --derive writes one rule per headline figure, each with the
#    measured value, the run and its date; the file passes on its own run and
#    fails on a copy with one link slowed, on that link's rules only; a row with
#    wrong data is left out as a comment; bad input (not a run, an output among
#    the inputs or inside a run, a bad margin, a run with nothing measured) is
#    refused and writes nothing.
# One link slowed for real needs the emulated cluster (root, network namespaces,
# one user at a time: test_emulated_cluster.sh); here the slowed run is a copy of
# the real one whose p2p_sweep.csv (the measured pair's link) is doctored: every
# time doubled, every bandwidth halved. The doctored file is exempt from the
# invariants check (its JSON still holds the real values).
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
ACC=$BIN/acceptance
[ -x "$ACC" ] || { echo "FAIL: $ACC not built" >&2; exit 1; }
command -v python3 >/dev/null || skip_test "python3 not found"

G=$TMP/golden
BUILD=$BUILD timeout 300 "$ROOT/run_all.sh" --quick --np 2 --no-install --quiet --out "$G" \
    --steps coll_sweep,p2p_sweep,p2p_matrix,dp_allreduce,tp_layer,pp_pipeline,compute_probe >"$TMP/run.out" 2>"$TMP/run.err"
rc=$?
[ "$rc" -eq 0 ] && pass "the golden run (run_all.sh --quick --np 2, 7 steps)" ||
    { fail "the golden run: exit $rc"; tail -15 "$TMP/run.err" | sed 's/^/  | /' >&2; finish; }

# slowed SRC DST: a copy of run SRC whose p2p_sweep.csv says the link is twice as slow.
slowed() {
    cp -r "$1" "$2"
    python3 - "$2/p2p_sweep.csv" <<'PY'
import csv, io, sys
path = sys.argv[1]
lines = open(path).read().splitlines(keepends=True)
head = [l for l in lines if l.startswith("#")][:0]
out, header = [], None
for l in lines:
    if l.startswith("#") or not l.strip():
        out.append(l); continue
    row = next(csv.reader([l]))
    if header is None:
        header = row; out.append(l); continue
    r = dict(zip(header, row))
    for k in header:
        if k.startswith("time_us"):
            r[k] = repr(2 * float(r[k]))
    r["bw_GBps"] = repr(float(r["bw_GBps"]) / 2)
    s = io.StringIO(); csv.writer(s, lineterminator="\n").writerow([r[k] for k in header]); out.append(s.getvalue())
open(path, "w").write("".join(out))
PY
    INVARIANTS_EXEMPT="${INVARIANTS_EXEMPT:-} $2/p2p_sweep.csv $2/p2p_sweep.json"
}
S=$TMP/slowed
slowed "$G" "$S"

# ---- acceptance --derive ----
expect_rc 0 "acceptance --derive the golden run" -- "$ACC" --derive "$G" -o "$TMP/golden.thr"
expect_in "$TMP/err" "rules derived from $G with a 10% margin" "it says how many rules, from where, at which margin"
for rule in "busbw coll=allreduce size=256K link=intra >=" "coll_latency coll=allreduce size=8 link=intra <=" \
    "p2p_latency size=1 link=intra <=" "p2p_bw size=1M link=intra >=" "tp_comm_fraction link=intra mode=allreduce hidden=256 <=" "pp_efficiency link=intra schedule=1f1b m=8 stages=2 >=" \
    "gemm_rate size=1K >="; do
    expect_in "$TMP/golden.thr" "$rule" "a rule for each headline figure: $rule"
done
# DP's overhead is a difference of two times: a loaded machine makes it untrustworthy, a comment.
grep -Eq "^(# untrustworthy, no rule: )?dp_overhead size=7M link=intra overlap=none" "$TMP/golden.thr" &&
    pass "DP's overhead: a rule, or a comment saying why the run cannot give one" || fail "no DP overhead line"
# Each rule sits at the measured value less 10% (rates) or plus 10% (times), and says so.
if python3 - "$TMP/golden.thr" "$G" >"$TMP/check.out" 2>&1 <<'PY'
import re, sys
rules = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
assert len(rules) >= 12, rules
for l in rules:
    m = re.match(r"^(\S+) .* (>=|<=) ([0-9.e+-]+)(?: \S+)? +# measured ([0-9.e+-]+)(?: \S+)? in (.*), (\d{4}-\d\d-\d\dT\S+)", l)
    assert m, l
    thr, measured = float(m.group(3)), float(m.group(4))
    want = measured * (0.9 if m.group(2) == ">=" else 1.1)
    assert abs(thr - want) <= 1e-3 * want + 1e-12, (l, want)
    assert (thr <= measured) if m.group(2) == ">=" else (thr >= measured), l
    assert m.group(5) == sys.argv[2], l
print(f"{len(rules)} rules, each at the measured value -/+ 10%, naming the run and its date")
PY
then pass "$(cat "$TMP/check.out")"; else fail "derived values:"; sed 's/^/  | /' "$TMP/check.out" >&2; fi
expect_rc 0 "the derived file passes on its own run" -- "$ACC" -t "$TMP/golden.thr" -r "$G"
expect_rc 1 "and fails on the run whose link was slowed" -- "$ACC" -t "$TMP/golden.thr" -r "$S"
grep -E '^ *[0-9]+  .*  FAIL' "$TMP/out" | awk '{print $2}' | sort -u >"$TMP/failed"
if [ "$(tr '\n' ' ' <"$TMP/failed")" = "p2p_bibw p2p_bw p2p_latency " ]; then
    pass "the failing rules are the slowed link's (p2p_latency, p2p_bw, p2p_bibw), no other"
else fail "failing rules: $(tr '\n' ' ' <"$TMP/failed")"; sed 's/^/  | /' "$TMP/out" >&2; fi
expect_rc 0 "--margin 0%: rules at the measured values" -- "$ACC" --derive "$G" --margin 0% -o "$TMP/tight.thr"
expect_rc 0 "still pass on their own run (each rounded away from its value)" -- "$ACC" -t "$TMP/tight.thr" -r "$G"
expect_rc 0 "--margin 60%: the rates' floors hold a link at half speed" -- "$ACC" --derive "$G" --margin 60% -o "$TMP/loose.thr"
expect_rc 1 "but the times' ceilings, 1.6x, do not hold twice the time" -- "$ACC" -t "$TMP/loose.thr" -r "$S"
expect_in "$TMP/out" "1 failed" "one rule fails at 60%"
grep -E '^ *[0-9]+  p2p_latency .*  FAIL' -q "$TMP/out" && pass "and it is p2p_latency's" || fail "60%: not p2p_latency failing"

# A row with wrong data gives no rule: a comment names it.
W=$TMP/wrong
cp -r "$G" "$W"
python3 - "$W/coll_sweep.csv" <<'PY'
import sys
path = sys.argv[1]
lines = open(path).read().splitlines(keepends=True)
i = next(i for i, l in enumerate(lines) if l.startswith("allgather,262144,"))
cells = lines[i].rstrip("\n").split(",")
head = next(l for l in lines if l.startswith("collective,")).rstrip("\n").split(",")
cells[head.index("wrong")] = "3"
lines[i] = ",".join(cells) + "\n"
open(path, "w").write("".join(lines))
PY
INVARIANTS_EXEMPT="${INVARIANTS_EXEMPT:-} $W/coll_sweep.csv $W/coll_sweep.json"
expect_rc 0 "--derive on a run with a wrong row" -- "$ACC" --derive "$W"
expect_in "$TMP/out" "# untrustworthy, no rule: busbw coll=allgather size=256K link=intra: 3 wrong values" \
    "the wrong row's figure is a comment, with the reason"
grep -q "^busbw coll=allgather" "$TMP/out" && fail "a rule derived from a row with wrong data" ||
    pass "no rule from the row with wrong data"
expect_in "$TMP/out" "busbw coll=allreduce size=256K link=intra >=" "the other figures keep their rules"

# ---- bad input: a clear message, exit 2 or 3, no file written ----
mkdir -p "$TMP/notrun"
expect_rc 2 "--derive of a folder that is not a run" -- "$ACC" --derive "$TMP/notrun" -o "$TMP/n.thr"
expect_in "$TMP/err" "is not a run's results folder" "the refusal says why"
expect_rc 2 "-o naming one of the run's files" -- "$ACC" --derive "$G" -o "$G/coll_sweep.csv"
expect_in "$TMP/err" "inside the results folder of a run" "an input is never overwritten"
expect_rc 2 "--margin without its %" -- "$ACC" --derive "$G" --margin 10 -o "$TMP/m.thr"
expect_in "$TMP/err" "option --margin: '10' is not a percentage" "the message names --margin"
mark_run "$TMP/empty"
expect_rc 3 "--derive of a run that measured nothing" -- "$ACC" --derive "$TMP/empty" -o "$TMP/e.thr"
expect_in "$TMP/err" "holds no trustworthy headline figure" "the message says so"
for f in n m e; do [ -e "$TMP/$f.thr" ] && fail "$f.thr written after a refusal"; done
cmp -s "$G/coll_sweep.csv" "$S/coll_sweep.csv" && pass "the run's files are untouched" || fail "a run's file changed"
finish
