#!/usr/bin/env bash
# test-runner: exclusive (one emulated cluster per machine; shaped-link rates)
# parabench on an emulated cluster: 2 nodes x 2 ranks, uplinks shaped to 1 Gbit/s
# (scripts/emulate-cluster.sh; see docs/emulated-cluster.md). Checks that
#  - ranks land on two distinct hosts, 2 per node;
#  - p2p_sweep classifies pair 0,1 as intra-node and 0,3 as inter-node;
#  - inter-node bandwidth at 4 MB tracks the link (70-110% of 0.125 GB/s: the upper
#    bound shows the shaped link is the bottleneck; the lower one is loose because
#    a loaded 2-core machine cannot always push the full 1 Gbit/s through veth);
#  - intra-node bandwidth is well above it (> 4x);
#  - inter-node latency at 1 MiB is one message's time through the link (half the
#    round trip, as OSU reports), not a whole round trip;
#  - a coll_sweep allreduce across the nodes is bounded by the link, validates, and
#    reports 2 nodes / mixed placement.
# Needs root and network namespaces: skips (exit 77, "SKIP: reason") without
# them; under CI=true that skip fails the run (tests/tally.sh).
# Always tears the emulated cluster down, pass or fail.
. "$(dirname "$0")/lib.sh"

LINK_GBPS=0.125          # 1 Gbit/s in GB/s (1e9 B/s)


command -v python3 >/dev/null || skip_test "python3 not found (parses the CSV results)"
# The binaries are built by `make` before this runs: missing ones are a failure.
for b in p2p_sweep coll_sweep; do
    [ -x "$BIN/$b" ] || fail "$BIN/$b is missing; build it first (make)"
done
[ "$FAILS" -eq 0 ] || finish

# Ours from here on: taken down at exit, after our mpirun (if one is running) is stopped.
JOB=
emu_before_down() {
    if [ -n "$JOB" ]; then # interrupted mid-run
        kill -TERM "$JOB" 2>/dev/null
        wait "$JOB" 2>/dev/null
    fi
}
emu_up --nodes 2 --rate 1gbit
pass "emulated cluster up: 2 nodes, 1 Gbit/s uplinks"

# 4 ranks share this machine's cores: let idle ranks yield rather than spin, or their
# polling starves the ranks being measured (and the kernel doing the forwarding).
export OMPI_MCA_mpi_yield_when_idle=1

# Run in the background and wait, so that a signal's trap (and teardown) runs at once.
emu() {
    timeout 90 "$EMU" mpirun -np 4 --npernode 2 "$@" &
    JOB=$!
    wait "$JOB"
    local rc=$?
    JOB=
    return "$rc"
}

# --- placement: 2 distinct hostnames, 2 ranks each
expect_rc 0 "hostname on 2 nodes x 2 ranks" -- emu hostname
hosts=$(sort "$TMP/out" | uniq -c | awk '{print $2 "=" $1}' | tr '\n' ' ')
if [ "$hosts" = "pbnode0=2 pbnode1=2 " ]; then pass "ranks on 2 hosts, 2 each ($hosts)"; else
    fail "expected pbnode0=2 pbnode1=2, got: $hosts"; fi

# --- p2p_sweep: classification and bandwidth at 4 MB
p2p() {  # p2p PAIR CSV
    expect_rc 0 "p2p_sweep --mode bw --pair $1" -- \
        emu "$BIN/p2p_sweep" --mode bw --pair "$1" --window 8 -b 4M -e 4M -f 2 -n 4 -w 1 --csv "$2"
}
p2p 0,1 "$TMP/intra.csv"
p2p 0,3 "$TMP/inter.csv"

# check_csv KIND FILE...: python3 checks; prints "ok: ..." / "FAIL: ..." lines.
check_csv() {
    python3 - "$LINK_GBPS" "$@" <<'EOF'
import csv, sys

link = float(sys.argv[1])
kind = sys.argv[2]
files = sys.argv[3:]

def rows(path):
    try:
        with open(path) as f:
            lines = [l for l in f if l.strip() and not l.startswith('#')]
    except OSError as e:
        print(f"FAIL: cannot read {path}: {e}")
        return []
    r = list(csv.DictReader(lines))
    if not r:
        print(f"FAIL: {path} has no data rows")
    return r

def check(ok, msg):
    print(("ok: " if ok else "FAIL: ") + msg)

if kind == "p2p":
    intra, inter = (rows(p) for p in files)
    for name, rs, pair, cls, host_same in (("intra", intra, ("0", "1"), "intra", True),
                                          ("inter", inter, ("0", "3"), "inter", False)):
        for r in rs:
            check((r["rank_a"], r["rank_b"]) == pair and r["mode"] == "bw",
                  f"{name}: row is mode=bw pair {pair[0]},{pair[1]} (got {r['mode']} {r['rank_a']},{r['rank_b']})")
            check(r["link_class"] == cls, f"pair {pair[0]},{pair[1]} classified {r['link_class']}, expected {cls}")
            check((r["host_a"] == r["host_b"]) == host_same,
                  f"pair {pair[0]},{pair[1]} hosts {r['host_a']},{r['host_b']} ({'same' if host_same else 'different'} expected)")
    big = lambda rs: [r for r in rs if int(r["bytes"]) == 4 << 20]
    bi, be = big(intra), big(inter)
    check(len(bi) == 1 and len(be) == 1, "one 4 MB row per pair")
    if bi and be:
        intra_bw, inter_bw = float(bi[0]["bw_GBps"]), float(be[0]["bw_GBps"])
        check(0.7 * link <= inter_bw <= 1.1 * link,
              f"inter-node bw at 4 MB {inter_bw:.4f} GB/s within 70-110% of the {link} GB/s link "
              f"({100 * inter_bw / link:.0f}%)")
        check(intra_bw > 4 * link,
              f"intra-node bw at 4 MB {intra_bw:.3f} GB/s > 4x the link ({4 * link} GB/s)")

elif kind == "allreduce":
    # Bound: with 2 nodes, whatever the algorithm, every rank's result needs the other
    # node's contribution to all S bytes, so >= S bytes cross each node's uplink in each
    # direction before any rank finishes: t >= S/B, algbw = S/t <= B (+10% for timing
    # and tbf's burst). In busbw terms that is busbw = algbw * 2(n-1)/n <= 1.5 B at n=4.
    # A flat ring on this layout (0,1 | 2,3) crosses each uplink once per direction with
    # 2(n-1)/n * S bytes, so it reaches busbw = B only; but a node-aware order (recursive
    # halving that pairs 0,1 first moves S/2 per direction per phase across the link)
    # beats that, and busbw 0.150 GB/s = 1.2 B was seen here at 8 MB: "busbw <= 1.2 B"
    # would be a ring-only bound, and flaky. Floor: the traffic really crossed and was
    # timed (busbw >= 0.3 B), so a broken timer cannot pass by reporting ~0.
    rs = rows(files[0])
    for r in rs:
        s, algbw, busbw = int(r["bytes"]), float(r["algbw_GBps"]), float(r["busbw_GBps"])
        tag = f"allreduce {s >> 20} MB"
        check(r["collective"] == "allreduce" and r["nranks"] == "4" and r["nnodes"] == "2",
              f"{tag}: 4 ranks on 2 nodes (got {r['nranks']} ranks, {r['nnodes']} nodes)")
        check(r["link_class"] == "mixed",
              f"{tag}: 4 ranks on 2 nodes, 2 on each: link_class mixed (got {r['link_class']})")
        check(int(r["wrong"]) == 0, f"{tag}: #wrong = {r['wrong']}")
        check(algbw <= 1.1 * link,
              f"{tag}: algbw {algbw:.4f} GB/s <= 1.1 x link {link} GB/s (busbw {busbw:.4f})")
        check(busbw >= 0.3 * link, f"{tag}: busbw {busbw:.4f} GB/s >= 0.3 x link (traffic crossed the link)")
EOF
}


if [ -s "$TMP/intra.csv" ] && [ -s "$TMP/inter.csv" ]; then
    check_csv p2p "$TMP/intra.csv" "$TMP/inter.csv" >"$TMP/check" 2>&1; fold_checks
else
    fail "p2p_sweep wrote no CSV (see above)"
fi

# --- p2p latency across the link: one 1 MiB message each way at a time. OSU's latency
# is half the round trip, so one message's time: at least bytes / link rate (less the
# tbf burst of 64 KiB, the first part of each message), and noise only adds. A full
# round trip reported as latency would be twice that.
expect_rc 0 "p2p_sweep --mode latency --pair 0,3 at 1 MiB" -- \
    emu "$BIN/p2p_sweep" --mode latency --pair 0,3 -b 1M -e 1M -n 4 -w 1 --csv "$TMP/lat.csv"
python3 - "$TMP/lat.csv" "$LINK_GBPS" >"$TMP/check" 2>&1 <<'EOF4'
import csv, sys
link_bytes_per_us = float(sys.argv[2]) * 1e3
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
floor = (1 << 20) / link_bytes_per_us
ok = len(rows) == 1 and rows[0]["mode"] == "latency" and rows[0]["link_class"] == "inter"
print(("ok: " if ok else "FAIL: ") + f"one inter-node latency row ({len(rows)} rows)")
for r in rows:
    t = float(r["time_us_min"])  # the fastest iteration: load on a shared machine only adds (2.5x once under make test)
    ok = 0.85 * floor <= t <= 1.6 * floor
    print(("ok: " if ok else "FAIL: ") + f"1 MiB one-way latency {t:.0f} us within 0.85-1.6 x bytes/link "
          f"({floor:.0f} us; {t / floor:.2f} x)")
EOF4
fold_checks

# --- coll_sweep allreduce across the nodes
expect_rc 0 "coll_sweep allreduce 4-8 MB on 2 nodes" -- \
    emu "$BIN/coll_sweep" --coll allreduce -b 4M -e 8M -f 2 -n 4 -w 1 -c 1 --csv "$TMP/ar.csv"
if [ -s "$TMP/ar.csv" ]; then
    check_csv allreduce "$TMP/ar.csv" >"$TMP/check" 2>&1; fold_checks
else
    fail "coll_sweep wrote no CSV (see above)"
fi

# --- coll_sweep --groups: each group's link class is its own members', not the world's.
# Node groups (0,1 | 2,3) stay inside a node: intra. Rail groups (0,2 | 1,3) put one
# rank on each node: inter. The world (above) is mixed.
for kind in node rail; do
    expect_rc 0 "coll_sweep --groups $kind on 2 nodes" -- \
        emu "$BIN/coll_sweep" --groups $kind --coll allreduce --sizes 64,64K -n 10 -w 1 --csv "$TMP/groups-$kind.csv"
done
python3 - "$TMP" >"$TMP/check" 2>&1 <<'EOF3'
import csv, sys
def check(ok, msg):
    print(("ok: " if ok else "FAIL: ") + msg)
want = {"node": ({"node0", "node1"}, 1, "intra"), "rail": ({"rail0", "rail1"}, 2, "inter")}
for kind, (names, nodes, link) in want.items():
    rows = list(csv.DictReader(l for l in open(f"{sys.argv[1]}/groups-{kind}.csv") if not l.startswith("#")))
    check({r["group"] for r in rows} == names and len(rows) == 2 * len(names), f"--groups {kind}: rows for {sorted(names)}")
    for r in rows:
        check((r["nranks"], r["nnodes"], r["link_class"]) == ("2", str(nodes), link),
              f"--groups {kind} {r['group']} {r['bytes']} B: 2 ranks on {nodes} node(s), {link} "
              f"(got {r['nranks']} on {r['nnodes']}, {r['link_class']})")
EOF3
fold_checks

# --- hybrid_3d: with ranks launched round-robin over the nodes (--map-by node),
# rank order ignores nodes: "naive" puts each TP pair across the link, "tp-inner"
# keeps TP inside a node and sends only pipeline activations across. Which placement
# is faster is a timing comparison, noisy on a loaded 2-core machine (a CI run once
# measured tp-inner's step slower: its compute took 3x longer there), so it is
# printed, not asserted. What is asserted cannot be noise: naive's TP all-reduces
# put tp_bytes through the shaped link each step (a 2-rank ring sends each rank's
# whole buffer once), so their time has a floor, tp_bytes / link rate; noise only
# adds time. A placement whose TP stayed inside a node would not need that floor.
emu_rr() {  # emu_rr NP PROGRAM...
    local np=$1
    shift
    timeout 150 "$EMU" mpirun -np "$np" --map-by node "$@" &
    JOB=$!
    wait "$JOB"
    local rc=$?
    JOB=
    return "$rc"
}
expect_rc 0 "hybrid_3d --compare-placements on 2 nodes" -- \
    emu_rr 4 "$BIN/hybrid_3d" --tp 2 --pp 2 --layers 4 --hidden 64 --heads 2 --seq 2048 --micro-batches 4 \
    --attn-scores 0 -n 3 -w 1 --compare-placements --csv "$TMP/hy.csv"
python3 - "$TMP/hy.csv" "$LINK_GBPS" >"$TMP/check" 2>&1 <<'EOF2'
import csv, sys
link_bytes_per_us = float(sys.argv[2]) * 1e3
rows = {r["placement"]: r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))}
def check(ok, msg):
    print(("ok: " if ok else "FAIL: ") + msg)
check(set(rows) == {"tp-inner", "dp-inner", "naive"}, f"three placements measured ({sorted(rows)})")
if {"tp-inner", "naive"} <= set(rows):
    ti, nv = rows["tp-inner"], rows["naive"]
    check(ti["tp_link"] == "intra" and ti["pp_link"] == "inter",
          f"tp-inner: TP intra, PP inter (got {ti['tp_link']}, {ti['pp_link']})")
    check(nv["tp_link"] == "inter", f"naive: TP across nodes (got {nv['tp_link']})")
    floor_us = 0.9 * float(nv["tp_bytes"]) / link_bytes_per_us   # 0.9: tbf's burst
    check(float(nv["tp_bytes"]) > 0 and float(nv["tp_comm_us"]) >= floor_us,
          f"naive: TP comm {float(nv['tp_comm_us']):.0f} us >= {floor_us:.0f} us, "
          f"its {nv['tp_bytes']} B through the link (traffic crossed it)")
    print(f"note: step tp-inner {float(ti['step_us']):.0f} us, naive {float(nv['step_us']):.0f} us; "
          f"TP comm {float(ti['tp_comm_us']):.0f} us, {float(nv['tp_comm_us']):.0f} us (not asserted: timing)")
    check(all(r["wrong"] == "0" for r in rows.values()), "replicas consistent (#wrong 0)")
EOF2
fold_checks

# --- an axis whose groups differ: 6 ranks round-robin (node 0: 0 2 4, node 1: 1 3 5) and a
# rank map putting TP group p=0 across the nodes ({0,1}) and the others inside one ({2,4},
# {3,5}). The row (rank 0's) must say "mixed" for TP, not rank 0's own "inter": an axis
# is intra or inter only when every group of it is.
printf '0 0 0 0\n1 1 0 0\n2 0 1 0\n4 1 1 0\n3 0 2 0\n5 1 2 0\n' >"$TMP/mixed.map"
expect_rc 0 "hybrid_3d --rankmap: TP groups inter and intra on one axis" -- \
    emu_rr 6 "$BIN/hybrid_3d" --tp 2 --pp 3 --rankmap "$TMP/mixed.map" --layers 3 --hidden 64 --heads 2 --seq 64 \
    --micro-batches 3 --attn-scores 0 -n 2 -w 1 --csv "$TMP/mixed.csv"
python3 - "$TMP/mixed.csv" >"$TMP/check" 2>&1 <<'EOF2'
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
r = rows[0] if rows else {}
print(("ok: " if r.get("tp_link") == "mixed" else "FAIL: ") +
      f"TP: one group inter, two intra: mixed (got {r.get('tp_link')})")
print(("ok: " if r.get("pp_link") == "mixed" else "FAIL: ") +
      f"PP: each group spans both nodes unevenly: mixed (got {r.get('pp_link')})")
EOF2
fold_checks

# --- the cluster has an owner: another PB_EMU_OWNER neither rebuilds, reshapes nor removes it
before=$("$EMU" status 2>&1 | grep -m1 'nodes:')
expect_rc 3 "up with another configuration by another owner is refused" -- env PB_EMU_OWNER=someone-else "$EMU" up --nodes 3 --rate 1gbit
expect_in "$TMP/err" "belongs to '$PB_EMU_OWNER'" "the refusal names the owner"
expect_rc 3 "slow by another owner is refused" -- env PB_EMU_OWNER=someone-else "$EMU" slow 1 100mbit
expect_rc 3 "down by another owner is refused" -- env PB_EMU_OWNER=someone-else "$EMU" down
expect_rc 2 "PB_EMU_OWNER with a blank is refused" -- env PB_EMU_OWNER="two words" "$EMU" down
after=$("$EMU" status 2>&1 | grep -m1 'nodes:')
[ -n "$before" ] && [ "$before" = "$after" ] && pass "the cluster is still up as it was ($after)" ||
    fail "the cluster changed under another owner: '$before' -> '$after'"

# --- teardown leaves nothing behind
expect_rc 0 "emulate-cluster.sh down" -- "$EMU" down
EMU_UP=0
left=$( (ip netns list; ip -o link show) 2>/dev/null | grep -E 'pbnode[0-9]|pbv[0-9]|pbbr0' || true)
if [ -z "$left" ]; then pass "down left no namespaces or links behind"; else fail "left behind: $left"; fi

finish
