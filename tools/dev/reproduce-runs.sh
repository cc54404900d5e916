#!/usr/bin/env bash
# reproduce-runs.sh [N] [NP]: N consecutive `run_all.sh --reproduce --np NP`
# runs (default 5 and 2), one after another, and for each the documents' DP
# figure: the measured overhead, its ratio to 0.112, the verdict, the
# composition row (overhead against the same loop's comm/compute) and the
# size search's note. Ends with how many runs landed within 10% of 0.112, and
# how many of those were judged (quiet). Recorded as docs/measured/reproduce-runs.txt:
#   tools/dev/record.sh reproduce-runs tools/dev/reproduce-runs.sh 5
# Exit: 0 when every run finished, 1 otherwise, 2 usage, 3 no build.
set -u
n=${1:-5} np=${2:-2}
case "$n$np" in *[!0-9]*|'') echo "usage: tools/dev/reproduce-runs.sh [N] [NP]" >&2; exit 2 ;; esac
cd "$(dirname "$0")/../.." || exit 3
[ -x build/bin/dp_allreduce ] || { echo "reproduce-runs: no build (make first)" >&2; exit 3; }
t=$(mktemp -d /tmp/parabench-reproduce-runs.XXXXXX)
trap 'rm -rf "$t"' EXIT
failed=0
for i in $(seq 1 "$n"); do
    s=$(date +%s)
    ./run_all.sh --reproduce --np "$np" --no-install --quiet --out "$t/run$i" >/dev/null 2>&1
    rc=$?
    [ $rc -eq 0 ] || failed=1
    echo "run $i: exit $rc, $(( $(date +%s) - s )) s, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    grep '^# note: target comm/compute' "$t/run$i/repro_dp.csv" 2>/dev/null | head -1
    python3 - "$t/run$i/repro_dp.csv" <<'PY'
import csv, sys
try:
    for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")):
        if r["overlap"] == "none" and r.get("target_ratio"):
            print("  the row's measures: in-step %s, paired %s, means %s, comm/compute of its loop %s" % (
                r.get("overhead_instep", "-")[:8], r.get("overhead_paired", "-")[:8], r["overhead"][:8],
                r["predicted_overhead"][:8]))
except OSError:
    pass
PY
    python3 - "$t/run$i/reproduce.csv" <<'PY'
import csv, sys
try:
    rows = {r["figure"]: r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))}
except OSError:
    sys.exit("  no reproduce.csv")
for fig in ("DP overhead (comm/compute, no overlap)", "DP composition: step - compute against comm, no overlap"):
    r = rows.get(fig)
    if r is None:
        print("  %s: no row" % fig)
        continue
    print("  %-55s measured %-10s against %-10s verdict %s" % (fig, r["measured_value"], r["document_value"] or
                                                             r["formula_value"], r["verdict"]))
    if r["verdict"] == "not judged":
        print("    " + r["note"].split(";")[0])
PY
done
python3 - "$t" "$n" <<'PY'
import csv, os, sys
within = judged = 0
alt = {"overhead_instep": 0, "overhead_paired": 0}  # each measure of the same rows, for comparison
for i in range(1, int(sys.argv[2]) + 1):
    run = os.path.join(sys.argv[1], "run%d" % i)
    try:
        rows = {r["figure"]: r for r in csv.DictReader(
            l for l in open(os.path.join(run, "reproduce.csv")) if not l.startswith("#"))}
        r = rows["DP overhead (comm/compute, no overlap)"]
        ok = abs(float(r["measured_value"]) / 0.112 - 1) <= 0.10
        dp = [x for x in csv.DictReader(l for l in open(os.path.join(run, "repro_dp.csv")) if not l.startswith("#"))
              if x["overlap"] == "none" and x.get("target_ratio")]
    except (OSError, KeyError, ValueError):
        continue
    within += ok
    judged += ok and r["verdict"] != "not judged"
    for col in alt:
        try:
            alt[col] += abs(float(dp[0][col]) / 0.112 - 1) <= 0.10
        except (IndexError, KeyError, ValueError):
            pass
print("DP overhead within 10%% of 0.112: %d of %s runs (%d of them judged, the machine quiet)" % (within, sys.argv[2], judged))
print("by measure: %s" % ", ".join("%s %d of %s" % (c, k, sys.argv[2]) for c, k in alt.items()))
PY
exit $failed
