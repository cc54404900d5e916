#!/usr/bin/env bash
# run_all.sh --reproduce: the documents' steps of a quick run on 2 ranks (and the sweeps
# they are set up from) write reproduce.csv with the contract's columns, one known verdict
# per row, the DP and PP rows measured (their values are not checked: the machine is
# noisy; docs/reproduce.md) and the TP byte count equal to the formula's. reproduce.py's
# arithmetic and the values of its rows on fabricated input: test_reproduce_math.sh.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
RUN="$TMP/run"
# The documents' steps and what they are set up from, as in a whole run: the cluster file's rates
# (the sweeps and the GEMM probe, calibrated) and dp_allreduce's layers' share of the GEMM rate
# (without it repro_setup assumes the GEMM rate, and sizes the DP step for 3x the 30 ms it means).
# The other workloads of a plain run are test_run_all's.
REPRO=$(cd "$ROOT" && python3 -c 'from suite import manifest
print(",".join(s.name for s in manifest.STEPS if s.planned is manifest.with_reproduce))')
BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --reproduce --np 2 --no-install --quiet --out "$RUN" \
    --steps "coll_sweep,p2p_sweep,dp_allreduce,compute_probe,calibrate,$REPRO" >"$TMP/out" 2>"$TMP/err"
rc=$?
[ "$rc" -eq 0 ] && pass "run_all.sh --quick --reproduce exits 0" ||
    { fail "run_all.sh --reproduce exit $rc"; tail -5 "$TMP/err" >&2; cat "$RUN/steps.tsv" >&2; }
python3 - "$RUN/reproduce.csv" >"$TMP/check" 2>&1 <<'PY'
import csv, sys
lines = open(sys.argv[1]).read().splitlines()
assert lines[-1] == "# complete", "no '# complete' trailer"
rows = list(csv.DictReader(l for l in lines if not l.startswith("#")))
want = "figure,unit,document_value,formula_value,measured_value,ratio,verdict,configuration,note".split(",")
assert list(rows[0].keys()) == want, "columns %s" % list(rows[0].keys())
for r in rows:
    assert r["verdict"] in ("reproduced", "differs", "not judged", "simulated", "skipped"), r
    assert r["verdict"] in ("skipped", "not judged") or r["measured_value"], "unmeasured row: %s" % r["figure"]
def one(prefix):
    got = [r for r in rows if r["figure"].startswith(prefix)]
    assert got, "no row " + prefix
    return got[0]
for fig in ("DP overhead", "PP efficiency, m nearest"):
    r = one(fig)
    assert r["verdict"] in ("reproduced", "differs", "not judged") and float(r["measured_value"]) != 0, "not measured: %s" % r
    # On a busy machine the DP overhead can come out negative (the compute-alone run
    # was slowed more than the step): not judged, but still a measured number.
    assert float(r["measured_value"]) > 0 or r["note"].startswith("machine busy: "), "not measured: %s" % r
dp = one("DP overhead")  # other tests run beside this one: a busy machine is not judged, and says so
assert (dp["verdict"] == "not judged") == dp["note"].startswith("machine busy: other processes used "), dp
assert any(l.startswith("# note: load: other processes used ") for l in open(sys.argv[1].replace("reproduce.csv", "repro_dp.csv"))), "repro_dp.csv: no load note"
assert one("PP efficiency p=8 m=32")["verdict"] == "simulated"
assert one("3D")["verdict"] == "skipped" and "4 ranks" in one("3D")["note"]
tp = one("TP bytes")  # counted, not timed: tp_layer's bytes equal the formula's
assert tp["verdict"] == "reproduced" and float(tp["measured_value"]) == float(tp["document_value"]), tp
import os
bucket = one("DP bucketing")  # 2 ranks on this machine's cores: judged only with a core per rank to spare
cores = os.cpu_count()
assert bucket["verdict"] == ("not judged" if cores < 4 else bucket["verdict"]), bucket
assert bucket["verdict"] != "not judged" or ("%d cores for 2 ranks" % cores in bucket["note"]
                                             and not bucket["measured_value"]), bucket
scan = [r for r in rows if r["figure"].startswith("DP 20% line scan: comm/compute ")]
assert len(scan) == 4 and all(r["measured_value"] and r["formula_value"] for r in scan), scan  # repro_dp_scan's 4 sizes
assert one("DP: comm/compute where measured overhead crosses 20%")["configuration"].count(",") == 4  # 0.112 + the scan
# The table it prints (repro_write.txt) shows each row's verdict and values, "-" for an empty one.
printed = [l.rstrip("\n") for l in open(sys.argv[1].replace("reproduce.csv", "repro_write.txt")) if l.strip()]
printed = printed[-len(rows):]
for r, l in zip(rows, printed):
    rest = l[58:].split()
    assert l.startswith(r["figure"][:58]) and rest[0:1] == r["verdict"].split()[:1], (l, r)
    shown = l[58:].split(" doc ", 1)[1].split(" measured ", 1)
    assert shown[0].split()[0] == (r["document_value"] or "-") and shown[1].split()[0] == (r["measured_value"] or "-"), (l, r)
print("ok %d rows" % len(rows))
PY
if grep -q '^ok' "$TMP/check"; then pass "reproduce.csv: columns, verdicts, DP and PP rows measured ($(cat "$TMP/check"))"
else fail "reproduce.csv"; sed 's/^/  | /' "$TMP/check" >&2; fi
expect_in "$RUN/steps.tsv" "calibrate	ok" "plan --calibrate step ran"
for s in repro_busbw repro_setup repro_dp repro_scan_setup repro_dp_scan repro_pp repro_tp repro_write; do
    expect_in "$RUN/steps.tsv" "$s	ok	0" "the --reproduce step $s ran"
done
grep -q '^tflops = ' "$RUN/cluster.txt" 2>/dev/null && pass "cluster.txt has the GEMM rate" || fail "cluster.txt"
finish
