#!/usr/bin/env bash
# test-runner: exclusive (one emulated cluster per machine; shaped-link rates)
# parabench under a real Slurm across nodes: `scripts/local-slurm.sh up --nodes 2`
# runs a slurmd in each emulated node's network namespace (scripts/emulate-cluster.sh,
# uplinks shaped to 1 Gbit/s), the controller on this host. Checks that
#  - both nodes register and go idle, and srun offers PMIx;
#  - srun -N 2 --ntasks-per-node=2 --mpi=pmix puts 2 ranks in each node (hostnames
#    pbnode0, pbnode1): coll_sweep's allreduce is mixed, 2 nodes, no wrong values;
#  - p2p_sweep between rank 0 (pbnode0) and rank 3 (pbnode1) is inter-node and its
#    4 MB bandwidth is near the link's 0.125 GB/s (50-110%: a loaded 2-core machine
#    cannot always push the full rate through veth; above it, the link is not shaping);
#  - sbatch --wait -N 2 run_all-cpu.sbatch --quick exits 0 with every step ok or
#    skipped, meta.json says 2 nodes and srun, the sweeps have inter-node rows, the report exists;
#  - run_all.sh --dry-run under salloc -N 2 (no hostfile) assumes the job's 2 nodes;
#  - down stops every daemon and removes the emulated cluster it brought up.
# Skips (exit 77) without Slurm and munge (scripts/install-deps.sh --for slurm), root
# or network namespaces. Always brings its cluster down, pass or fail.
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$TESTS_DIR/../.." && pwd)
LS=$ROOT/scripts/local-slurm.sh
NAME=$(basename "$0")
LINK_GBPS=0.125 # 1 Gbit/s in GB/s

for c in slurmctld slurmd munged sbatch srun salloc sinfo nsenter unshare ip; do
    command -v "$c" >/dev/null 2>&1 || skip_test "$c is not installed (scripts/install-deps.sh --for slurm installs Slurm and munge)"
done
[ "$(id -u)" -eq 0 ] || skip_test "needs root (network namespaces; the local cluster runs SlurmUser=root)"
command -v python3 >/dev/null || skip_test "python3 not found (reads the results)"
for b in coll_sweep p2p_sweep dp_allreduce tp_layer pp_pipeline plan; do
    [ -x "$BIN/$b" ] || fail "$BIN/$b is missing; build it first (make)"
done
[ "$FAILS" -eq 0 ] || finish

emu_owner_lock
if "$EMU" status 2>/dev/null | grep -q '^emulated cluster: \(up\|DAMAGED\)'; then
    fail "an emulated cluster is already up (see '$EMU status'); not touching it. Run '$EMU down' and retry"
    finish
fi

export PARABENCH_SLURM_DIR=$TMP/slurm SLURM_CONF=$TMP/slurm/slurm.conf
PORT=""
for p in $(seq 16950 2 16998); do
    ss -Htln "sport = :$p or sport = :$((p + 1))" 2>/dev/null | grep -q . || { PORT=$p; break; }
done
[ -n "$PORT" ] || { fail "no two free ports in 16950..16999"; finish; }
export PARABENCH_SLURM_PORT=$PORT
# 4 ranks share this machine's cores: idle ranks yield rather than spin (as in
# test_emulated_cluster.sh). srun passes the environment on to the ranks.
export OMPI_MCA_mpi_yield_when_idle=1
unset SLURM_PMIX_FENCE  # run_all.sh's own choice is under test

# UP: our Slurm is up; EMU_OURS: the emulated cluster is ours (it was down before
# up), so whatever is left of it at exit is taken down, even after a failed down.
UP=0 EMU_OURS=0 JOB=""
cleanup() {
    local rc=$?
    [ -n "$JOB" ] && kill -TERM "$JOB" 2>/dev/null && wait "$JOB" 2>/dev/null
    if [ "$UP" -eq 1 ]; then
        "$LS" down >/dev/null 2>&1 || echo "FAIL: $NAME: '$LS down' failed; PIDs in $PARABENCH_SLURM_DIR/run" >&2
    fi
    if [ "$EMU_OURS" -eq 1 ] && ! "$EMU" status 2>/dev/null | grep -q '^emulated cluster: down'; then
        "$EMU" down >/dev/null 2>&1 || echo "FAIL: $NAME: '$EMU down' failed; clean up by hand (docs/emulated-cluster.md)" >&2
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# bg COMMAND...: run it in the background and wait, so that a signal's trap runs at once.
bg() {
    "$@" &
    JOB=$!
    wait "$JOB"
    local rc=$?
    JOB=""
    return "$rc"
}

UP=1 EMU_OURS=1
"$LS" up --nodes 2 --rate 1gbit >"$TMP/up.out" 2>"$TMP/up.err"
rc=$?
if [ "$rc" -eq 3 ] && grep -q "not permitted" "$TMP/up.err"; then
    skip_test "network namespaces are not permitted here: $(grep "not permitted" "$TMP/up.err" | tail -1)"
fi
if [ "$rc" -ne 0 ]; then
    fail "local-slurm.sh up --nodes 2: exit $rc"; sed 's/^/  | /' "$TMP/up.out" "$TMP/up.err" >&2
    finish
fi
pass "local Slurm up on 2 emulated nodes (ports $PORT, $((PORT + 1)))"
PIDS=""
for d in munged slurmctld slurmd-pbnode0 slurmd-pbnode1; do
    p=$(tr -dc '0-9' <"$PARABENCH_SLURM_DIR/run/$d.pid" 2>/dev/null)
    if [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "${d%%-*}" ]; then PIDS="$PIDS $p"; else fail "$d: no live process for its pid file"; fi
done
for k in 0 1; do
    p=$(tr -dc '0-9' <"$PARABENCH_SLURM_DIR/run/slurmd-pbnode$k.pid" 2>/dev/null)
    ns=$(ip netns identify "$p" 2>/dev/null)
    [ "$ns" = "pbnode$k" ] && pass "slurmd of pbnode$k runs in namespace pbnode$k" || fail "slurmd of pbnode$k is in namespace '$ns', expected pbnode$k"
done
states=$(sinfo -h -N -o '%N %T' | sort -u | tr '\n' ' ')
[ "$states" = "pbnode0 idle pbnode1 idle " ] && pass "sinfo: pbnode0 and pbnode1 idle" || fail "sinfo: '$states', expected pbnode0 idle pbnode1 idle"
expect_rc 0 "srun --mpi=list" -- srun --mpi=list
cat "$TMP/out" "$TMP/err" >"$TMP/mpi-list"
expect_in "$TMP/mpi-list" "pmix" "srun offers PMIx"

# --- srun across the nodes: placement, link classes and the shaped link's rate
# Slurm's PMIx fences as rings, as run_all.sh sets them (docs/run_all.md, "MPI_Init under srun").
SRUN=(timeout 90 env SLURM_PMIX_FENCE=ring srun -N 2 --ntasks-per-node=2 --mpi=pmix --cpu-bind=none)
expect_rc 0 "srun -N 2 --ntasks-per-node=2 coll_sweep allreduce 1 MB" -- \
    bg "${SRUN[@]}" "$BIN/coll_sweep" --coll allreduce -b 1M -e 1M -n 4 -w 1 --csv "$TMP/ar.csv" --json "$TMP/ar.json"
expect_rc 0 "srun -N 2 --ntasks-per-node=2 p2p_sweep bw 0,3 at 4 MB" -- \
    bg "${SRUN[@]}" "$BIN/p2p_sweep" --mode bw --pair 0,3 --window 8 -b 4M -e 4M -f 2 -n 4 -w 1 --csv "$TMP/p2p.csv"
python3 - "$TMP" "$LINK_GBPS" >"$TMP/check" 2>&1 <<'PY'
import csv, json, sys
tmp, link = sys.argv[1], float(sys.argv[2])
def check(ok, msg):
    print(("ok: " if ok else "FAIL: ") + msg)
def rows(path):
    try:
        return list(csv.DictReader(l for l in open(path) if l.strip() and not l.startswith("#")))
    except OSError as e:
        check(False, f"cannot read {path}: {e}")
        return []
ar = rows(tmp + "/ar.csv")
check(len(ar) == 1, f"coll_sweep: one allreduce row (got {len(ar)})")
for r in ar:
    check((r["nranks"], r["nnodes"], r["link_class"], r["wrong"]) == ("4", "2", "mixed", "0"),
          f"allreduce 1 MB: 4 ranks on 2 nodes, mixed, #wrong 0 (got {r['nranks']}, {r['nnodes']}, {r['link_class']}, {r['wrong']})")
try:
    hosts = [(h["name"], h["ranks"]) for h in json.load(open(tmp + "/ar.json"))["meta"]["hosts"]]
except (OSError, ValueError, KeyError) as e:
    hosts = repr(e)
check(hosts == [("pbnode0", [0, 1]), ("pbnode1", [2, 3])], f"ranks 0,1 on pbnode0 and 2,3 on pbnode1 (got {hosts})")
p2p = rows(tmp + "/p2p.csv")
check(len(p2p) == 1, f"p2p_sweep: one 4 MB row (got {len(p2p)})")
for r in p2p:
    check((r["host_a"], r["host_b"], r["link_class"]) == ("pbnode0", "pbnode1", "inter"),
          f"pair 0,3: pbnode0 -> pbnode1, inter (got {r['host_a']} -> {r['host_b']}, {r['link_class']})")
    bw = float(r["bw_GBps"])
    check(0.5 * link <= bw <= 1.1 * link,
          f"inter-node bw at 4 MB {bw:.4f} GB/s within 50-110% of the {link} GB/s link ({100 * bw / link:.0f}%)")
PY
fold_checks

# --- the suite as a batch job over the 2 nodes (no hostfile: srun takes the
# allocation). Ranks unbound: the emulated nodes share this machine's 2 cores.
# Open MPI 4.1.4's TCP BTL now and then fails a connect between the emulated
# nodes ("failed to TCP connect to a peer MPI process ... Operation now in
# progress (115)", its errno misreported: open-mpi/ompi#10734, fixed in 4.1.x by
# ompi#13110) and the rank then crashes. The same words follow a peer that died
# in MPI_Init (docs/run_all.md, "MPI_Init under srun"). Either is Open MPI's, not
# parabench's: the job runs once more, in a fresh folder, only when a step's log says so.
OMPI_CONNECT_BUG="Open MPI failed to TCP connect to a peer MPI process"
sbatch_suite() {
    (cd "$ROOT" && PARABENCH_BUILD=0 BUILD=$BUILD timeout 240 sbatch --wait -N 2 --output="$TMP/job.out" \
        scripts/slurm/run_all-cpu.sbatch --quick --bind none --out "$RES") >"$TMP/sbatch.out" 2>"$TMP/sbatch.err" &
    JOB=$!
    wait "$JOB"
    rc=$?
    JOB=""
}
RES="$TMP/results"
sbatch_suite
if [ "$rc" -ne 0 ] && cat "$RES"/logs/*.err 2>/dev/null | tr -s ' \n' ' ' | grep -qF "$OMPI_CONNECT_BUG"; then
    echo "NOTE: $NAME: the batch job exited $rc after Open MPI's TCP connect failure ($(grep -l "TCP connect" \
"$RES"/logs/*.err | tr '\n' ' ')); running it once more" >&2
    RES="$TMP/results-retry"
    sbatch_suite
fi
if [ "$rc" -eq 0 ]; then pass "sbatch --wait -N 2 run_all-cpu.sbatch --quick (exit 0)"; else
    fail "sbatch --wait -N 2 run_all-cpu.sbatch --quick: exit $rc, expected 0"
    sed 's/^/  | /' "$TMP/sbatch.err" "$TMP/job.out" 2>/dev/null | tail -30 >&2
    for f in "$RES"/logs/*.err; do  # the failed steps' own words
        [ -s "$f" ] && grep -q . "$f" && { echo "  | --- $f"; tail -15 "$f" | sed 's/^/  | /'; } >&2
    done
fi
python3 - "$RES" >"$TMP/check" 2>&1 <<'PY'
import csv, json, os, sys
out = sys.argv[1]
def check(ok, msg):
    print(("ok: " if ok else "FAIL: ") + msg)
try:
    steps = [l.split("\t") for l in open(out + "/steps.tsv").read().splitlines()]
    bad = [s[0] for s in steps if s[1] not in ("ok", "skipped")]
    check(steps and not bad, f"steps.tsv: {len(steps)} steps, every one ok or skipped (not: {bad})")
    check(any(s[:2] == ["coll_sweep_intra", "ok"] for s in steps), "coll_sweep_intra ran (it needs several nodes)")
    meta = json.load(open(out + "/meta.json"))
    check(meta["launcher"] == "srun" and meta["nranks"] == 4, f"meta.json: srun, 4 ranks (got {meta['launcher']}, {meta['nranks']})")
    check(meta["launch"].startswith("env SLURM_PMIX_FENCE=ring srun -n 4 "), f"meta.json: each step's srun under SLURM_PMIX_FENCE=ring (got {meta['launch']})")
    check(meta["machine"]["nnodes"] == 2, f"meta.json: 2 nodes (got {meta['machine']['nnodes']})")
    def classes(name, col="link_class"):
        return {r[col] for r in csv.DictReader(l for l in open(f"{out}/{name}") if l.strip() and not l.startswith("#"))}
    check("mixed" in classes("coll_sweep.csv"), f"coll_sweep.csv has mixed rows ({sorted(classes('coll_sweep.csv'))})")
    check("inter" in classes("p2p_sweep.csv"), f"p2p_sweep.csv has inter-node rows ({sorted(classes('p2p_sweep.csv'))})")
    check(all(os.path.getsize(f"{out}/{f}") > 0 for f in ("report.md", "index.html", "summary.txt")), "report.md, index.html, summary.txt written")
except (OSError, ValueError, KeyError, IndexError) as e:
    check(False, f"results in {out}: {e!r}")
PY
fold_checks
expect_in "$TMP/job.out" ", srun, bound to:" "the job's log names srun as the launcher"

# --- an allocation with no hostfile: run_all.sh takes the nodes from Slurm
expect_rc 0 "salloc -N 2 --ntasks-per-node=2 run_all.sh --dry-run --quick" -- \
    bg timeout 60 salloc -N 2 --ntasks-per-node=2 "$ROOT/run_all.sh" --dry-run --quick --bind none --no-install
expect_in "$TMP/out" "4 ranks on 2 node(s) of 2" "run_all.sh --dry-run under salloc -N 2: 4 ranks on 2 nodes of 2"

# --- down: no daemon, no namespace left
expect_rc 0 "local-slurm.sh down" -- "$LS" down
UP=0
# shellcheck disable=SC2086 # one PID per word
if [ -n "$PIDS" ] && all_gone $PIDS; then pass "munged, slurmctld, both slurmd stopped (pids$PIDS)"; else fail "daemons left after down (pids$PIDS)"; fi
left=$( (ip netns list; ip -o link show) 2>/dev/null | grep -E 'pbnode[0-9]|pbv[0-9]|pbbr0' || true)
[ -z "$left" ] && pass "down took the emulated cluster it brought up down too" || fail "left behind: $left"
finish
