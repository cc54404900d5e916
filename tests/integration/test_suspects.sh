#!/usr/bin/env bash
# scripts/suspects.py through scripts/report.py on fabricated results (no MPI,
# no gnuplot): 4 hosts of 2 ranks each. In the first run node 2 (host n2) is
# the slowest node group for two collectives and in 12 of the matrix's 16 slow
# pairs: suspects.csv ranks it first with its reasons, good-hosts.txt omits it,
# the report's Suspects section (after the headline figures) names it. In the
# second, uniform results (hosts read from the CSV's `# hosts` line, no
# meta.json; two equal pipeline replicas): no suspects, every host in
# good-hosts.txt, and the report says so. Third, a slow pipeline replica
# names both its hosts; fourth, a slow TP group its host.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
HOSTS='[{"name":"n0","ranks":[0,1]},{"name":"n1","ranks":[2,3]},{"name":"n2","ranks":[4,5]},{"name":"n3","ranks":[6,7]}]'

# sweep DIR BUSBW x 8: coll_sweep_intra.csv with node groups 0..3 at two sizes of allreduce then
# allgather; the values are each group's busbw at the largest size (64 MiB).
sweep() {
    local dir=$1; shift
    local bw=("$@") i=0
    {
        echo "# hosts              $HOSTS"
        echo "collective,bytes,nranks,nnodes,link_class,time_us,algbw_GBps,busbw_GBps,wrong,group"
        for coll in allreduce allgather; do
            for g in 0 1 2 3; do echo "$coll,1048576,2,1,intra,100,10,10,0,node$g"; done
            for g in 0 1 2 3; do echo "$coll,67108864,2,1,intra,100,${bw[i]},${bw[i]},0,node$g"; i=$((i + 1)); done
        done
    } >"$dir/coll_sweep_intra.csv"
}
# pairs DIR SLOWRANKS: every pair of the 8 ranks, slow when either rank is in SLOWRANKS and the
# other is on another node.
pairs() {
    python3 - "$1" "$2" <<'PY'
import sys
out, slow = sys.argv[1], {int(r) for r in sys.argv[2].split(",") if r}
with open(out + "/p2p_matrix-pairs.csv", "w") as f:
    f.write("a,b,link_class,latency_us,bw_GBps,slow,rail,slow_against\n")
    for a in range(8):
        for b in range(a + 1, 8):
            link = "intra" if a // 2 == b // 2 else "inter"
            bad = link == "inter" and bool({a, b} & slow)
            f.write(f"{a},{b},{link},{9 if bad else 3},{2 if bad else 10},{int(bad)},-1,{'class' if bad else ''}\n")
PY
}

S=$TMP/slow
mkdir -p "$S"
printf '{"profile": "quick", "machine": {"hosts": %s}}\n' "$HOSTS" >"$S/meta.json"
sweep "$S" 10 11 6 10    10 10 8.5 10.2   # allreduce: n2 0.60x the median; allgather: 0.85x
pairs "$S" 4,5
printf 'coll_sweep_intra\tok\t0\t1\t\n' >"$S/steps.tsv"
expect_rc 0 "report.py on a run where node 2 is slow" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$S"

U=$TMP/uniform
mark_run "$U"
sweep "$U" 10 10.2 9.8 10.1   10 10 9.9 10
pairs "$U" ""
cat >"$U/pp_trace.csv" <<'EOF'
schedule,stages,virtual_stages,micro_batches,replica,rank,stage,chunk,mb,event,start_us,end_us
1f1b,4,1,2,0,0,0,0,0,F,0,100
1f1b,4,1,2,0,3,3,0,1,B,900,1000
1f1b,4,1,2,1,4,0,0,0,F,0,100
1f1b,4,1,2,1,7,3,0,1,B,900,1020
EOF
expect_rc 0 "report.py on uniform results" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$U"

# The slowest of two pipeline replicas (ranks 4..7 on n2 and n3), 2x the other's step (1.33x the median): both its hosts.
P=$TMP/pipeline
mkdir -p "$P"
printf '{"machine": {"hosts": %s}}\n' "$HOSTS" >"$P/meta.json"
sed 's/,1020$/,2000/' "$U/pp_trace.csv" >"$P/pp_trace.csv"
expect_rc 0 "report.py on a run with a slow pipeline replica" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$P"
expect_in "$P/good-hosts.txt" "n1 slots=2" "a fast replica's hosts stay in good-hosts.txt"
if grep -q "^n[23]" "$P/good-hosts.txt"; then fail "the slow replica's hosts in good-hosts.txt"
else pass "the slow replica's hosts (n2, n3) left out of good-hosts.txt"; fi
expect_in "$P/suspects.csv" "slowest pipeline replica (1 of 2) for 1f1b m=2: 1.33x the median step" "the replica's reason"
python3 - "$P/suspects.csv" <<'PY' && pass "each of the replica's hosts scores 5 x its excess over the median (5 x 1/3)" ||
import csv, sys
rows = {r["host"]: r["score"] for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))}
assert rows["n2"] == rows["n3"] == "%.2f" % (5 / 3) and rows["n0"] == rows["n1"] == "0.00", rows
PY
    { fail "the slow replica's scores:"; sed 's/^/  | /' "$P/suspects.csv" >&2; }

# The slowest TP group (on n3), 1.3x the median group at the largest hidden size only: n3 alone,
# twice (one reason per mode); a smaller size where n1 is slowest adds nothing; a row under the
# 1.1x bar (rs mode, n0) adds nothing either.
T=$TMP/tp
mkdir -p "$T"
printf '{"machine": {"hosts": %s}}\n' "$HOSTS" >"$T/meta.json"
cat >"$T/tp_layer.csv" <<'EOF'
tp,groups,mode,hidden,step_us,slowest_group,slowest_group_hosts,slowest_group_step_us,median_group_step_us
2,4,allreduce,128,100,1,n1,100,50
2,4,allreduce,256,130,3,n3,130,100
2,4,sp,256,126,3,n3,126,100
2,4,rs,256,105,0,n0,105,100
EOF
expect_rc 0 "report.py on a run with a slow TP group" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$T"
if python3 - "$T/suspects.csv" >"$TMP/tpout" 2>&1 <<'PY'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
top = rows[0]
assert top["host"] == "n3" and top["evidence"] == "2", rows
assert abs(float(top["score"]) - (1.5 + 1.3)) < 1e-9, top  # 5 x 0.30 and 5 x 0.26
assert "slowest TP group (3 of 4) for allreduce at h=256: 1.30x the median group's layer" in top["reasons"], top
assert all(float(r["score"]) == 0 for r in rows[1:]), rows
print("n3's TP group ranked first, 2 reasons; smaller sizes and rows under 1.1x add nothing")
PY
then pass "$(cat "$TMP/tpout")"
else fail "TP group evidence"; sed 's/^/  | /' "$TMP/tpout" >&2; fi

if python3 - "$S" "$U" >"$TMP/out" 2>&1 <<'PY'
import csv, os, sys
slow, uniform = sys.argv[1:]
def read(run, name):
    return open(os.path.join(run, name)).read()
def ranked(run):
    return list(csv.DictReader(l for l in read(run, "suspects.csv").splitlines() if not l.startswith("#")))

r = ranked(slow)
assert [x["host"] for x in r][0] == "n2", r
assert float(r[0]["score"]) > 1.0 and all(float(x["score"]) <= 1.0 for x in r[1:]), r
assert r[0]["evidence"] == "3", r[0]
# 5 x the shortfall, capped at 2: allreduce 5 x 0.40 = 2.0, allgather 5 x 0.15 = 0.75; the matrix 2 x 12/13
assert r[0]["score"] == "%.2f" % (2.0 + 0.75 + 2 * 12 / 13), r[0]  # written with 2 decimals
for why in ("slowest node group for allreduce at 64 MiB: 0.60x the median",
            "slowest node group for allgather at 64 MiB: 0.85x the median", "12 of 13 matrix pairs slow"):
    assert why in r[0]["reasons"], (why, r[0]["reasons"])
assert read(slow, "good-hosts.txt") == "n0 slots=2\nn1 slots=2\nn3 slots=2\n", read(slow, "good-hosts.txt")
md, page = read(slow, "report.md"), read(slow, "index.html")
at = [md.find(m) for m in ("## Headline figures", "## Suspects", "## Steps")]
assert -1 not in at and at == sorted(at), ("Suspects after the headline figures", at)
section = md[at[1]:at[2]]
assert "1 of 4 hosts have a score above 1.0: n2." in section, section
assert "| n2 |" in section and "12 of 13 matrix pairs slow" in section, section
assert "id='suspects'" in page and "<td>n2</td>" in page and "0.60x the median" in page

r = ranked(uniform)
assert sorted(x["host"] for x in r) == ["n0", "n1", "n2", "n3"], r
assert all(float(x["score"]) == 0 and x["evidence"] == "0" for x in r), r
assert read(uniform, "good-hosts.txt") == "n0 slots=2\nn1 slots=2\nn2 slots=2\nn3 slots=2\n"
md = read(uniform, "report.md")
assert "no suspects: no host of 4 has a score above 1.0" in md, md
print("node 2 ranked first (3 pieces of evidence) and left out of good-hosts.txt; uniform results: no suspects")
PY
then pass "$(cat "$TMP/out")"
else fail "suspects"; sed 's/^/  | /' "$TMP/out" >&2; fi

# The bar itself: a suspect scores above 1.0, not at it. Three hosts of one rank, the matrix
# alone: with pair 0-1 slow, n0 and n1 each have 1 of their 2 pairs slow (score exactly 1.0)
# and stay good; with 0-2 slow too, n0 has 2 of 2 (2.0) and is the one suspect.
for slow in "0-1" "0-1 0-2"; do
    B=$TMP/bar-${slow// /_}
    mkdir -p "$B"
    printf '{"machine": {"hosts": [{"name":"n0","ranks":[0]},{"name":"n1","ranks":[1]},{"name":"n2","ranks":[2]}]}}\n' >"$B/meta.json"
    { echo "a,b,link_class,latency_us,bw_GBps,slow,rail,slow_against"
      for p in 0-1 0-2 1-2; do
          case " $slow " in *" $p "*) echo "${p%-*},${p#*-},inter,9,2,1,-1,class" ;; *) echo "${p%-*},${p#*-},inter,3,10,0,-1," ;; esac
      done; } >"$B/p2p_matrix-pairs.csv"
    expect_rc 0 "report.py with matrix pairs $slow slow" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$B"
done
expect_in "$TMP/bar-0-1/good-hosts.txt" "n0 slots=1" "score exactly 1.0 (n0): not a suspect"
expect_in "$TMP/bar-0-1/good-hosts.txt" "n1 slots=1" "score exactly 1.0 (n1): not a suspect"
grep -q "^n0 " "$TMP/bar-0-1_0-2/good-hosts.txt" && fail "n0 with 2 of 2 pairs slow (2.0) kept in good-hosts.txt" \
    || pass "score 2.0 (n0): a suspect, left out of good-hosts.txt"
expect_in "$TMP/bar-0-1_0-2/good-hosts.txt" "n1 slots=1" "n1 at 1.0 beside it: still good"
# A garbled matrix row (latency nan, bandwidth inf) is no evidence, whatever its slow column says;
# a host named as a spreadsheet formula is not taken as a host.
B=$TMP/garbled; mkdir -p "$B"
printf '{"machine": {"hosts": [{"name":"n0","ranks":[0]},{"name":"n1","ranks":[1]},{"name":"n2","ranks":[2]}]}}\n' >"$B/meta.json"
printf 'a,b,link_class,latency_us,bw_GBps,slow,rail,slow_against\n0,1,inter,nan,inf,1,-1,class\n0,2,inter,nan,2,1,-1,class\n1,2,inter,3,10,0,-1,\n' >"$B/p2p_matrix-pairs.csv"
expect_rc 0 "report.py with garbled matrix rows marked slow" -- python3 "$ROOT/scripts/report.py" --quiet --no-plots "$B"
expect_in "$B/good-hosts.txt" "n0 slots=1" "garbled rows (nan, inf) marked slow score nothing: n0 stays good"
F=$TMP/formula; mkdir -p "$F"; cp "$B/p2p_matrix-pairs.csv" "$F/"
printf '{"machine": {"hosts": [{"name":"=HYPERLINK(1)","ranks":[0]},{"name":"n1","ranks":[1]},{"name":"n2","ranks":[2]}]}}\n' >"$F/meta.json"
python3 "$ROOT/scripts/report.py" --quiet --no-plots "$F" >/dev/null 2>"$TMP/err"
expect_in "$TMP/err" "starts with =, +, - or @" "a host named '=HYPERLINK(1)' is refused, said on stderr"
grep -qs "HYPERLINK" "$F/suspects.csv" "$F/good-hosts.txt" && fail "'=HYPERLINK(1)' reached suspects.csv or good-hosts.txt" ||
    pass "'=HYPERLINK(1)' reaches neither suspects.csv nor good-hosts.txt"

# The sizes the reasons name: whole binary units only, else bytes.
# suite/units.py writes them for the report too, compact in its tables' cells.
python3 - "$ROOT" <<'PY' && pass "reason sizes: 0 B, 1536 B, 1 KiB, 64 MiB, 1536 MiB, 1 GiB; cells 0, 1536, 1K, 64M, 1536M, 1G" || fail "reason sizes"
import sys
sys.path.insert(0, sys.argv[1])
from suite.units import size_text
cases = {0: ("0 B", "0"), 1536: ("1536 B", "1536"), 1024: ("1 KiB", "1K"), 64 << 20: ("64 MiB", "64M"),
         3 << 29: ("1536 MiB", "1536M"), 1 << 30: ("1 GiB", "1G")}
got = {b: (size_text(b), size_text(b, compact=True)) for b in cases}
assert got == cases, got
PY
finish
