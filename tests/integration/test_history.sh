#!/usr/bin/env bash
# parabench-history (scripts/history.py; docs/acceptance.md, "The golden-run loop")
# on three runs of a 4-node cluster, written here by hand: the all-pairs matrix
# names hosts only across nodes, and this machine is one node (a real run's matrix
# would hold one host). Each run is what run_all.sh leaves for the matrix step:
# meta.json (date, 4 hosts of 2 ranks), steps.tsv, p2p_matrix-pairs.csv (every
# pair of the 8 ranks; 2 us and 10 GB/s across nodes, 0.6 us and 40 GB/s inside
# one, each give or take 0.5%), and tp_layer.csv (4 TP groups, n0's always the
# slowest at 1.05x the median). Given out of date order, the runs are:
#  - n2's links slowed by 8% more each run (0, 8%, 16%): never flagged slow by the
#    matrix (above 0.8 x), never a suspect, never the slowest TP group; named;
#  - n1's links 20% slower in the second run only, 12% in the third: a fall of 6%
#    per run, but not steady; not named;
#  - n3's links 3% slower each run: steady but under 5% per run; not named;
#  - n0, the slowest TP group of every run: not named.
# Then a run without n3 (a gap, said so), and bad input: exit 2, no file written or changed.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
HIST=$ROOT/scripts/history.py
command -v python3 >/dev/null || skip_test "python3 not found"

# run DIR DATE "HOST:SLOWDOWN ..." SEED: a run of hosts n0..n3 (those listed), each host's off-node links
# slowed by its fraction.
run() {
    python3 - "$@" <<'PY'
import json, os, random, sys
out, date, spec, seed = sys.argv[1:5]
slow = {h: float(f) for h, f in (s.split(":") for s in spec.split())}
hosts = list(slow)
rnd = random.Random(int(seed))
os.makedirs(out)
ranks = {h: [2 * i, 2 * i + 1] for i, h in enumerate(hosts)}
json.dump({"date": date, "nranks": 2 * len(hosts), "machine": {"hosts": [{"name": h, "ranks": ranks[h]} for h in hosts]}},
          open(os.path.join(out, "meta.json"), "w"))
open(os.path.join(out, "steps.tsv"), "w").write("p2p_matrix\tok\t0\t1\t\ntp_layer\tok\t0\t1\t\n")
host = {r: h for h in hosts for r in ranks[h]}
with open(os.path.join(out, "p2p_matrix-pairs.csv"), "w") as f:
    f.write("a,b,link_class,latency_us,bw_GBps,slow,rail,slow_against\n")
    for a in sorted(host):
        for b in sorted(host):
            if b <= a:
                continue
            inter = host[a] != host[b]
            lat, bw = (2.0, 10.0) if inter else (0.6, 40.0)
            if inter:  # a pair is as slow as its slower end
                k = max(slow[host[a]], slow[host[b]])
                lat, bw = lat / (1 - k), bw * (1 - k)
            j = 1 + rnd.uniform(-0.005, 0.005)
            f.write(f"{a},{b},{'inter' if inter else 'intra'},{lat * j:.4f},{bw / j:.4f},0,-1,\n")
with open(os.path.join(out, "tp_layer.csv"), "w") as f:
    f.write("mode,hidden,seq,groups,step_us,slowest_group,slowest_group_hosts,slowest_group_step_us,median_group_step_us\n")
    for mode in ("allreduce", "sp"):
        f.write(f"{mode},1024,512,{len(hosts)},1050,0,{hosts[0]},1050,1000\n")
PY
}
R=$TMP/runs
run "$R/week3" 2026-03-15T10:00:00Z "n0:0 n1:0.12 n2:0.16 n3:0.06" 3
run "$R/week1" 2026-03-01T10:00:00Z "n0:0 n1:0 n2:0 n3:0" 1
run "$R/week2" 2026-03-08T10:00:00Z "n0:0 n1:0.20 n2:0.08 n3:0.03" 2
sums() { find "$R" -type f -print0 | sort -z | xargs -0 md5sum; }
sums >"$TMP/before"

expect_rc 1 "three runs, one node slowed more each time: named, exit 1" -- python3 "$HIST" -o "$TMP/h" "$R/week3" "$R/week1" "$R/week2"
expect_in "$TMP/out" "parabench-history: 3 runs, 2026-03-01 to 2026-03-15: DRIFTING: n2 (matrix bw (inter) -8." \
    "the verdict line names n2 and its falling bandwidth, runs in order of date"
grep -q "DRIFTING: .*n[013]" "$TMP/out" && fail "another node named: $(grep DRIFTING "$TMP/out")" ||
    pass "n0 (slowest TP group), n1 (a dip, not steady), n3 (3% a run) are not named"
if python3 - "$TMP/h" "$R" >"$TMP/check.out" 2>&1 <<'PY'
import csv, json, os, sys
d, runs = sys.argv[1], sys.argv[2]
doc = json.load(open(os.path.join(d, "history.json")))
rows = list(csv.DictReader(open(os.path.join(d, "history.csv"))))
assert [r["run"] for r in doc["runs"]] == [os.path.join(runs, w) for w in ("week1", "week2", "week3")], doc["runs"]
assert doc["drifting"] == {"n2": ["matrix bw (inter)", "matrix latency (inter)"]}, doc["drifting"]
assert len(rows) == len(doc["rows"]) > 0
for r, j in zip(rows, doc["rows"]):
    assert list(r) == list(j), (list(r), list(j))  # the same fields, in the same order
    assert (r["host"], r["figure"], r["run"]) == (j["host"], j["figure"], j["run"]), (r, j)
def series(host, fig):
    return [j for j in doc["rows"] if j["host"] == host and j["figure"] == fig]
bw = series("n2", "matrix bw (inter)")
assert [j["order"] for j in bw] == [0, 1, 2] and bw[0]["value"] > bw[1]["value"] > bw[2]["value"], bw
assert -0.10 < bw[0]["change_per_run"] < -0.06 and all(j["drifting"] == 1 and j["steady"] == 1 for j in bw), bw
assert all(j["value"] == 0 for j in series("n2", "suspects score")), "n2 was a suspect"  # never flagged
n1 = series("n1", "matrix bw (inter)")
assert n1[0]["change_per_run"] < -0.05 and n1[0]["steady"] == 0 and n1[0]["drifting"] == 0, n1
n3 = series("n3", "matrix bw (inter)")
assert n3[0]["steady"] == 1 and -0.05 < n3[0]["change_per_run"] < -0.02 and n3[0]["drifting"] == 0, n3
tp = {h: series(h, "TP group time")[0]["value"] for h in ("n0", "n2")}
assert tp == {"n0": 1050, "n2": 1000}, tp  # the slowest group's time for its host, the median group's for the others
assert {j["figure"] for j in doc["rows"] if j["host"] == "n2"} == {
    "matrix bw (inter)", "matrix latency (inter)", "matrix bw (intra)", "matrix latency (intra)", "TP group time",
    "suspects score"}
assert not any(j["note"] for j in doc["rows"]), "a note without a gap"
print(f"history.csv and history.json: the same {len(rows)} rows; n2's inter bandwidth falls "
      f"{-100 * bw[0]['change_per_run']:.1f}% a run, steadily, with a suspects score of 0 in every run")
PY
then pass "$(cat "$TMP/check.out")"; else fail "history's files:"; sed 's/^/  | /' "$TMP/check.out" >&2; fi
if command -v gnuplot >/dev/null; then
    [ "$(head -c 4 "$TMP/h/plots/history.png" | tail -c 3)" = PNG ] && ! grep -q gnuplot "$TMP/err" &&
        pass "the figure history.png drawn, gnuplot silent" || { fail "no figure history.png"; cat "$TMP/err" >&2; }
fi
# Without gnuplot: said so, and the CSV and JSON written all the same.
mkdir -p "$TMP/nognu" && ln -s "$(python3 -c 'import sys; print(sys.executable)')" "$TMP/nognu/python3"
expect_rc 1 "without gnuplot" -- env PATH="$TMP/nognu" python3 "$HIST" --quiet -o "$TMP/h2" "$R/week1" "$R/week2" "$R/week3"
expect_in "$TMP/err" "gnuplot is not installed" "it says gnuplot is missing"
[ -s "$TMP/h2/history.csv" ] && [ -s "$TMP/h2/history.json" ] && [ ! -e "$TMP/h2/plots/history.png" ] &&
    pass "history.csv and history.json written, no figure" || fail "without gnuplot: $(ls -R "$TMP/h2")"

# Two runs are enough for a trend; a node missing from a run is a gap, said so.
G=$TMP/gap
run "$G/a" 2026-03-01T10:00:00Z "n0:0 n1:0 n2:0 n3:0" 1
run "$G/b" 2026-03-08T10:00:00Z "n0:0 n1:0 n2:0.08" 2
run "$G/c" 2026-03-15T10:00:00Z "n0:0 n1:0 n2:0.16 n3:0" 3
expect_rc 1 "a run without n3" -- python3 "$HIST" --no-plots -o "$TMP/hg" "$G/a" "$G/b" "$G/c"
expect_in "$TMP/err" "gap: n3 is not in run $G/b" "the gap is said"
expect_in "$TMP/out" "DRIFTING: n2 (matrix bw (inter)" "n2 is still named"
grep -q "^n3 .* gap " "$TMP/hg/history.txt" && pass "the table shows n3's gap" || fail "no gap in history.txt"
python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
assert d["gaps"] == [{"host": "n3", "run": sys.argv[2]}], d["gaps"]
assert all(r["value"] is None for r in d["rows"] if r["host"] == "n3" and r["run"] == sys.argv[2])' \
    "$TMP/hg/history.json" "$G/b" && pass "history.json lists the gap, its values empty" || fail "the gap in history.json"

# ---- bad input: a clear message, exit 2, nothing written, no run changed ----
mkdir -p "$TMP/notrun"
expect_rc 2 "a folder that is not a run" -- python3 "$HIST" -o "$TMP/b1" "$R/week1" "$TMP/notrun"
expect_in "$TMP/err" "is not a run's results folder" "the refusal says why"
expect_rc 2 "one run" -- python3 "$HIST" -o "$TMP/b2" "$R/week1"
expect_in "$TMP/err" "give two runs or more" "the refusal says why"
expect_rc 2 "the same run twice" -- python3 "$HIST" -o "$TMP/b2" "$R/week1" "$R/week1/"
expect_in "$TMP/err" "a run is given twice" "the refusal says why"
O=$TMP/other
run "$O/x" 2026-03-22T10:00:00Z "m0:0 m1:0" 4
expect_rc 2 "runs of another cluster (no host in common)" -- python3 "$HIST" -o "$TMP/b3" "$R/week1" "$O/x"
expect_in "$TMP/err" "the runs have no host in common" "the refusal says why"
mark_run "$TMP/nometa"
expect_rc 2 "a run without meta.json" -- python3 "$HIST" -o "$TMP/b4" "$R/week1" "$TMP/nometa"
expect_in "$TMP/err" "has no readable meta.json" "the refusal says why"
run "$O/nodate" 2026-03-22T10:00:00Z "n0:0 n1:0" 5
sed -i 's/"date": "[^"]*"/"date": "last week"/' "$O/nodate/meta.json"
expect_rc 2 "a run without a date" -- python3 "$HIST" -o "$TMP/b5" "$R/week1" "$O/nodate"
expect_in "$TMP/err" "has no date in its meta.json" "the refusal says why"
expect_rc 2 "-o that is one of the runs" -- python3 "$HIST" -o "$R/week2" "$R/week1" "$R/week2"
expect_in "$TMP/err" "-o '$R/week2' is the run" "the refusal names -o and the run"
expect_rc 2 "-o inside a run" -- python3 "$HIST" -o "$R/week1/hist" "$R/week1" "$R/week2"
expect_in "$TMP/err" "is inside the run" "the refusal says why"
expect_rc 2 "an unknown option" -- python3 "$HIST" --bogus "$R/week1" "$R/week2"
expect_in "$TMP/err" "option --bogus: unknown" "the message names the option"
expect_rc 2 "-o given twice" -- python3 "$HIST" -o "$TMP/b6" --out="$TMP/b7" "$R/week1" "$R/week2"
expect_in "$TMP/err" "option --out: is given twice" "an option is given once, as everywhere"
for d in b1 b2 b3 b4 b5 b6 b7; do [ -e "$TMP/$d" ] && fail "$d written after a refusal"; done
sums | cmp -s - "$TMP/before" && [ ! -e "$R/week1/hist" ] && pass "no file of the runs changed or added" ||
    fail "a run's files changed: $(sums | diff "$TMP/before" - | head -5)"
finish
