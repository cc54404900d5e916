#!/usr/bin/env bash
# The defaults that make parabench report what OSU and nccl-tests report:
# fixed buffers unless --rotate 1 (labelled in the metadata), OSU's iteration
# counts per size unless -n/-w, a time cap that bounds warm-up too, a first
# row measured like the rest, and run_all binding its ranks (meta.json says how).
# No speed is asserted: only counts, labels, bounds and ratios within one run.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)

# json_check FILE PYTHON-EXPRESSION DESC: the expression over `meta` and `rows` holds.
json_check() {
    if python3 - "$1" "$2" <<'PY'; then pass "$3"; else fail "$3"; fi
import json, sys
doc = json.load(open(sys.argv[1]))
meta, rows = doc["meta"], doc["rows"]
ok = eval(sys.argv[2])
if not ok:
    print(f"not true: {sys.argv[2]}\n  meta: {json.dumps({k: meta.get(k) for k in ('buffers', 'iterations')})}\n"
          f"  rows: {[{k: r.get(k) for k in ('mode', 'collective', 'bytes', 'iters')} for r in rows]}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}

# ---- collectives: OSU's counts per size, fixed buffers ----
# (no time cap here: on a slow or loaded machine the cap may cut the counts, as it should)
expect_rc 0 "coll_sweep with defaults" -- mpi 2 "$BIN/coll_sweep" --sizes 8K,8200 --max-seconds-per-size 0 --json "$TMP/d.json"
json_check "$TMP/d.json" "meta['buffers']['mode'] == 'fixed'" "default buffers are fixed, and the metadata says so"
json_check "$TMP/d.json" "[r['iters'] for r in rows] == [1000, 100]" \
    "OSU's collective counts: 1000 iterations at 8 KiB, 100 just above"
json_check "$TMP/d.json" "meta['iterations'] == '1000 (+100 warm-up) up to 8192 B, 100 (+10 warm-up) above'" \
    "the iteration policy is in the metadata"
expect_rc 0 "coll_sweep -n 7" -- mpi 2 "$BIN/coll_sweep" --sizes 8,1M -n 7 -w 1 --json "$TMP/n.json"
json_check "$TMP/n.json" "[r['iters'] for r in rows] == [7, 7]" "-n sets one count for every size"

# ---- the opt-in cold-cache mode: labelled, sized from hwloc, results still right ----
expect_rc 0 "coll_sweep --rotate 1, every collective validated" -- \
    mpi 2 "$BIN/coll_sweep" --coll all --sizes 8,4K,1M -n 20 -w 2 --rotate 1 --json "$TMP/r.json"
expect_in "$TMP/out" "# wrong values: 0 OK" "rotating slots sized per message give right results"
llc=$(hwloc-calc --number-of l3cache all 2>/dev/null | head -n 1)
json_check "$TMP/r.json" "meta['buffers']['mode'] == 'rotate' and meta['buffers']['cache_bytes'] > 0 and \
meta['buffers']['pool_bytes_min'] == min(2 * meta['buffers']['cache_bytes'], 512 << 20)" \
    "--rotate 1 is labelled, with the cache size and a bounded pool"
if [ "${llc:-0}" -gt 0 ]; then
    size=$(lstopo-no-graphics --of xml 2>/dev/null | python3 -c "
import sys, xml.etree.ElementTree as E
c = [o for o in E.parse(sys.stdin).iter('object') if o.get('type') == 'L3Cache']
print(c[0].get('cache_size') if c else 0)")
    json_check "$TMP/r.json" "meta['buffers']['cache_bytes'] == $size" "the cache size is hwloc's L3 ($size bytes)"
fi

# ---- p2p: OSU's counts per mode and size ----
expect_rc 0 "p2p_sweep all modes with defaults" -- \
    mpi 2 "$BIN/p2p_sweep" --mode all --sizes 8,64K --max-seconds-per-size 0 --json "$TMP/p.json"
json_check "$TMP/p.json" "[(r['mode'], r['iters']) for r in rows] == [('latency', 10000), ('latency', 1000), \
('bw', 100), ('bw', 20), ('bibw', 100), ('bibw', 20)]" "OSU's p2p counts: latency 10000/1000, bw and bibw 100/20"
json_check "$TMP/p.json" "meta['buffers']['mode'] == 'fixed' and sorted(meta['iterations']) == ['bibw', 'bw', 'latency']" \
    "p2p metadata: fixed buffers and the policy of every mode"

# ---- the time cap bounds warm-up too: a warm-up that would never end by count ----
start=$SECONDS
expect_rc 0 "coll_sweep: 10^8 warm-up iterations under a 0.5 s cap" -- \
    mpi 2 "$BIN/coll_sweep" --sizes 4M -w 100000000 -n 100000000 -c 0 --max-seconds-per-size 0.5 --json "$TMP/cap.json"
json_check "$TMP/cap.json" "1 <= rows[0]['iters'] < 100000000" "the cap cut both warm-up and timed iterations"
expect_rc 0 "p2p_sweep bw: 10^8 warm-up iterations under a 0.5 s cap" -- \
    mpi 2 "$BIN/p2p_sweep" --mode bw --sizes 4M -w 100000000 -n 100000000 -c 0 --max-seconds-per-size 0.5 --json "$TMP/pcap.json"
json_check "$TMP/pcap.json" "1 <= rows[0]['iters'] < 100000000" "p2p: the cap cut warm-up and timed iterations"
# A window longer than the cap is still timed twice: one sample would give the figure no spread.
expect_rc 0 "p2p_sweep bw: 4 MiB windows under a 1 ms cap" -- \
    mpi 2 "$BIN/p2p_sweep" --mode bw --sizes 4M -c 0 --max-seconds-per-size 0.001 --json "$TMP/ptwo.json"
json_check "$TMP/ptwo.json" "rows[0]['iters'] == 2 and rows[0]['time_us_min'] < rows[0]['time_us_max']" \
    "p2p: a window longer than the cap is timed twice, and its row has a spread"
expect_rc 0 "p2p_sweep bw -n 1 under a 1 ms cap" -- \
    mpi 2 "$BIN/p2p_sweep" --mode bw --sizes 4M -n 1 -c 0 --max-seconds-per-size 0.001 --json "$TMP/pone.json"
json_check "$TMP/pone.json" "rows[0]['iters'] == 1" "p2p: -n 1 is honoured under a cap"
# Two runs of one capped size each, start-up included: far below the hours the counts would take.
[ $((SECONDS - start)) -lt 60 ] && pass "both capped runs ended within a minute" || fail "capped runs took $((SECONDS - start)) s"

# ---- the first row is measured like the rest: the same size four times in one sweep ----
# Set-up timed inside the first row (communicators, connections) would make it slower than every
# repeat: a mean more than twice the slowest repeat's is that outlier. Compared with the slowest
# repeat, not their median, so that a core taken by other work for part of the sweep (make test runs
# two tests at once; a median once read such a slow stretch as an outlier) does not count; three
# tries absorb the rest of the noise.
first_row_ok() {
    mpi 2 "$BIN/coll_sweep" --sizes 8,8,8,8 -c 0 --json "$TMP/first.json" >/dev/null 2>&1 || return 1
    python3 - "$TMP/first.json" <<'PY'
import json, sys
t = [r["time_us"] for r in json.load(open(sys.argv[1]))["rows"]]
print(f"8 B allreduce, the same size four times: {t}")
sys.exit(0 if len(t) == 4 and t[0] <= 2 * max(t[1:]) else 1)
PY
}
ok=0
for _ in 1 2 3; do first_row_ok && { ok=1; break; }; done
[ "$ok" = 1 ] && pass "the first size is no outlier" || fail "the first row's mean is over twice the slowest repeat's (3 tries)"

# ---- run_all binds its ranks and says how in meta.json ----
# One step is enough: every step is launched with the run's binding (its launch line, in
# meta.json); the whole quick run is test_run_all's.
run_all_bind() { # OUT ARGS...: a quick run_all of its first sweep; prints meta.json's binding
    local out=$1; shift
    BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --quiet --steps coll_sweep --out "$out" "$@" >"$TMP/ra.out" 2>"$TMP/ra.err" ||
        { sed 's/^/  | /' "$TMP/ra.err" | tail -5 >&2; return 1; }
    python3 -c "import json,sys; m=json.load(open(sys.argv[1])); b=m['binding']; print(b['requested'], b['applied'], '|', m['launch'])" "$out/meta.json"
}
cores=$(nproc)
got=$(run_all_bind "$TMP/ra1" --np 2)
if [ "$cores" -ge 2 ]; then
    case "$got" in "core core | mpirun -np 2 --map-by core --bind-to core"*) pass "run_all binds to cores by default: $got" ;;
                   *) fail "run_all default binding: '$got'" ;; esac
    # what the ranks themselves saw (hwloc, recorded per rank): one PU each, two different ones
    python3 - "$TMP/ra1/coll_sweep.json" <<'PY' && pass "each rank recorded a binding of its own" || fail "per-rank bindings"
import json, sys
b = json.load(open(sys.argv[1]))["meta"]["binding"]
print(f"bindings: {b}")
sys.exit(0 if len(b) == 2 and "unbound" not in b and b[0] != b[1] else 1)
PY
fi
over=$((2 * cores)) # more ranks than cores
got=$(run_all_bind "$TMP/ra2" --np $over)
case "$got" in "core none | mpirun -np $over --bind-to none"*) pass "more ranks than cores: unbound, and said so: $got" ;;
               *) fail "binding with more ranks than cores: '$got'" ;; esac
python3 -c "import json,sys; assert 'cannot have a core each' in json.load(open(sys.argv[1]))['binding']['note']" "$TMP/ra2/meta.json" &&
    pass "meta.json says why the ranks run unbound" || fail "meta.json binding note"
expect_rc 2 "run_all --bind with a bad value" -- "$ROOT/run_all.sh" --bind sideways
expect_in "$TMP/err" "expected none, core, numa or gpu" "the message names the accepted values"
finish
