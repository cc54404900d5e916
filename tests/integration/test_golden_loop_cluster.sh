#!/usr/bin/env bash
# test-runner: exclusive (one emulated cluster per machine; shaped-link rates)
# The operator's loop (docs/acceptance.md, "The golden-run loop") on real runs of
# an emulated 4-node cluster (scripts/emulate-cluster.sh, one rank a node, 1 Gbit/s
# uplinks), where test_golden_loop.sh doctors copies of one run on this machine:
#  1. a golden run (run_all.sh --steps p2p_sweep,p2p_matrix), then node 1's uplink
#     slowed for real (`emulate-cluster.sh slow 1`) to 500 Mbit/s and a second run,
#     then to 250 Mbit/s and a third;
#  2. acceptance --derive on the golden run: its rules pass on it, and fail on the
#     third run for the slowed link only (p2p_sweep's pair is ranks 0-1, nodes 0 and 1:
#     its bandwidth rules across nodes);
#  3. parabench-compare golden against the third: exit 1, "worse" for the p2p bandwidth
#     and for every matrix bandwidth of a pair with node 1, at a quarter; the golden run
#     against itself: all same, exit 0. The pairs without node 1 are held to 0.6 of
#     their golden bandwidth, not to "same": the matrix runs two pairs at once, and on
#     one machine they share its cores and its kernel's shaping (one of them once
#     measured 15% below its golden figure beside a pair at 250 Mbit/s);
#  4. parabench-history over the three runs names node 1 by its matrix bandwidth, and
#     no other node by its bandwidth.
# Latencies are left unjudged off the slowed node: an 8-byte message's time on these
# shared cores is the scheduler's as much as the link's.
# Needs root and network namespaces: skips (exit 77) without them. Always tears the cluster down.
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
ACC=$BIN/acceptance
command -v python3 >/dev/null || skip_test "python3 not found (parses the results)"

emu_up --nodes 4 --rate 1gbit --slots 1
pass "emulated cluster up: 4 nodes of 1 slot"
eval "$("$EMU" env)" || { fail "emulate-cluster.sh env"; finish; }
export OMPI_MCA_mpi_yield_when_idle=1

# suite RUN: the loop's steps on the cluster as it is now.
suite() {
    expect_rc 0 "run_all.sh --steps p2p_sweep,p2p_matrix on the cluster ($(basename "$1"))" -- \
        timeout 300 env BUILD="$BUILD" "$ROOT/run_all.sh" --hostfile "$PB_EMU_HOSTFILE" --quick --bind none \
        --no-install --quiet --steps p2p_sweep,p2p_matrix --out "$1"
    [ -f "$1/meta.json" ] || { fail "no run in $1"; finish; }
}
G=$TMP/golden S1=$TMP/slow500 S2=$TMP/slow250
suite "$G"
expect_rc 0 "emulate-cluster.sh slow 1 500mbit" -- "$EMU" slow 1 500mbit
suite "$S1"
expect_rc 0 "emulate-cluster.sh slow 1 250mbit" -- "$EMU" slow 1 250mbit
suite "$S2"

# ---- 2. thresholds from the golden run ----
expect_rc 0 "acceptance --derive the golden run" -- "$ACC" --derive "$G" -o "$TMP/golden.thr"
expect_in "$TMP/golden.thr" "p2p_bw size=1M link=inter >=" "a rule for the bandwidth across nodes"
expect_rc 0 "its rules pass on the golden run" -- "$ACC" -t "$TMP/golden.thr" -r "$G"
expect_rc 1 "and fail on the run with node 1 at 250 Mbit/s" -- "$ACC" -t "$TMP/golden.thr" -r "$S2"
grep -E '^ *[0-9]+  .*  FAIL( |$)' "$TMP/out" >"$TMP/failed"
if grep -q "p2p_bw size=1M link=inter" "$TMP/failed" && ! grep -v " p2p_" "$TMP/failed" | grep -q .; then
    pass "the failing rules are the slowed link's: p2p_sweep's pair, its bandwidth among them ($(wc -l <"$TMP/failed"))"
else fail "the failing rules:"; sed 's/^/  | /' "$TMP/out" >&2; fi

# ---- 3. one run against another ----
CMP=$ROOT/scripts/compare-runs.py
verdicts() { python3 -c 'import json, sys
for f in json.load(open(sys.argv[1] + "/compare.json"))["figures"]: print(f["figure"] + "\t" + f["verdict"])' "$1"; }
expect_rc 0 "compare the golden run with itself: exit 0" -- python3 "$CMP" --no-plots --out "$TMP/self" "$G" "$G"
verdicts "$TMP/self" >"$TMP/self.v"
[ -s "$TMP/self.v" ] && ! grep -qv $'\t''\(same\|untrustworthy\)$' "$TMP/self.v" &&
    pass "with itself: all $(wc -l <"$TMP/self.v") figures the same" || { fail "with itself:"; sed 's/^/  | /' "$TMP/self.v" >&2; }
expect_rc 1 "compare the golden run with the 250 Mbit/s one: exit 1" -- python3 "$CMP" --no-plots --out "$TMP/vs" "$G" "$S2"
verdicts "$TMP/vs" >"$TMP/vs.v"
# The matrix's bandwidth per pair (ranks a-b on nodes a and b: node 1's pairs hold rank 1):
# its verdict and B/A.
python3 -c 'import json, re, sys
for f in json.load(open(sys.argv[1] + "/compare.json"))["figures"]:
    m = re.match(r"matrix bw, ranks (\d+)-(\d+) ", f["figure"])
    if m: print("node1" if "1" in m.groups() else "other", f["verdict"], "%.3f" % f["ratio"])' "$TMP/vs" >"$TMP/pairs"
if [ "$(grep -c '^node1 worse 0\.[0-4]' "$TMP/pairs")" = 3 ]; then pass "node 1's 3 matrix pairs: bandwidth worse, at less than half"
else fail "node 1's pairs:"; sed 's/^/  | /' "$TMP/pairs" >&2; fi
if [ "$(grep -c '^other ' "$TMP/pairs")" = 3 ] && ! grep '^other ' "$TMP/pairs" | awk '$3 < 0.6 { bad = 1 } END { exit !bad }'; then
    pass "the 3 pairs without node 1: above 0.6 of the golden bandwidth ($(grep '^other ' "$TMP/pairs" | cut -d' ' -f2,3 | xargs))"
else fail "the other pairs:"; sed 's/^/  | /' "$TMP/pairs" >&2; fi
grep -q '^p2p bw, inter, .*'$'\t''worse$' "$TMP/vs.v" && pass "p2p_sweep's pair (nodes 0 and 1): bandwidth worse" ||
    { fail "p2p bw across nodes not worse:"; sed 's/^/  | /' "$TMP/vs.v" >&2; }

# ---- 4. a node's history ----
expect_rc 1 "parabench-history over the three runs: a node drifts (exit 1)" -- \
    python3 "$ROOT/scripts/history.py" --no-plots -o "$TMP/hist" "$S2" "$G" "$S1"
python3 - "$TMP/hist/history.json" <<'PY' && pass "history names pbnode1 by its bandwidth, and no other node by its bandwidth" ||
import json, sys
drifting = json.load(open(sys.argv[1]))["drifting"]
assert "matrix bw (inter)" in drifting.get("pbnode1", []), drifting
assert not [h for h, figs in drifting.items() if h != "pbnode1" and any(f.startswith("matrix bw") for f in figs)], drifting
PY
    fail "history's drifting nodes: $(cat "$TMP/out")"
finish
