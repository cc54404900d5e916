#!/usr/bin/env bash
# test-runner: waits (on the Slurm daemons it starts and the job it queues: about a third of the cores, in 50 s)
# parabench under a real Slurm: a one-node cluster from Debian's packages
# (scripts/local-slurm.sh, its own config, ports and munge in TMP), then
#   sbatch --wait scripts/slurm/run_all-cpu.sbatch --quick --out TMP/...
# Checks that
#  - the cluster comes up (node idle) and offers PMIx (srun --mpi=list);
#  - the job exits 0, every step in steps.tsv is ok or skipped;
#  - meta.json says launcher srun and its launch line starts with srun, under
#    SLURM_PMIX_FENCE=ring (docs/run_all.md, "MPI_Init under srun");
#  - srun wired the ranks up through PMIx: coll_sweep saw 2 ranks, not 2 singletons;
#  - up is idempotent; down stops munged, slurmctld and slurmd (the PIDs in their
#    pid files) and leaves no process with a file in the cluster's directory; down twice is fine.
# Skips (exit 77) when Slurm or munge is not installed (scripts/install-deps.sh
# --for slurm) or not root. Always brings its cluster down, pass or fail.
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$TESTS_DIR/../.." && pwd)
LS=$ROOT/scripts/local-slurm.sh
NAME=$(basename "$0")

for c in slurmctld slurmd munged sbatch srun sinfo; do
    command -v "$c" >/dev/null 2>&1 || skip_test "$c is not installed (scripts/install-deps.sh --for slurm installs Slurm and munge)"
done
[ "$(id -u)" -eq 0 ] || skip_test "needs root (the local cluster runs SlurmUser=root)"
command -v python3 >/dev/null || skip_test "python3 not found (reads meta.json)"
# The binaries are built before this runs (make test): missing ones are a failure.
for b in coll_sweep p2p_sweep dp_allreduce tp_layer pp_pipeline plan; do
    [ -x "$BIN/$b" ] || fail "$BIN/$b is missing; build it first (make)"
done
[ "$FAILS" -eq 0 ] || finish

# The cluster lives in TMP, on two ports nobody listens on (16900-16949;
# test_slurm_nodes.sh, which may run at the same time, takes 16950-16999).
export PARABENCH_SLURM_DIR=$TMP/slurm SLURM_CONF=$TMP/slurm/slurm.conf
PORT=""
for p in $(seq 16900 2 16948); do
    ss -Htln "sport = :$p or sport = :$((p + 1))" 2>/dev/null | grep -q . || { PORT=$p; break; }
done
[ -n "$PORT" ] || { fail "no two free ports in 16900..16949"; finish; }
export PARABENCH_SLURM_PORT=$PORT
unset SLURM_PMIX_FENCE  # run_all.sh's own choice is under test

UP=0 JOB=""
cleanup() {
    local rc=$?
    [ -n "$JOB" ] && kill -TERM "$JOB" 2>/dev/null && wait "$JOB" 2>/dev/null
    if [ "$UP" -eq 1 ]; then
        "$LS" down >/dev/null 2>&1 || echo "FAIL: $NAME: '$LS down' failed; PIDs in $PARABENCH_SLURM_DIR/run" >&2
    fi
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

UP=1
if ! "$LS" up >"$TMP/up.out" 2>"$TMP/up.err"; then
    fail "local-slurm.sh up: exit $?"; sed 's/^/  | /' "$TMP/up.out" "$TMP/up.err" >&2
    finish
fi
pass "local Slurm up (ports $PORT, $((PORT + 1)))"
PIDS=""
for d in munged slurmctld "slurmd-$(hostname -s)"; do
    p=$(tr -dc '0-9' <"$PARABENCH_SLURM_DIR/run/$d.pid" 2>/dev/null)
    if [ -n "$p" ] && [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "${d%%-*}" ]; then PIDS="$PIDS $p"; else fail "$d: no live process for $PARABENCH_SLURM_DIR/run/$d.pid"; fi
done
[ "$(sinfo -h -N -o %T)" = idle ] && pass "sinfo: the node is idle" || fail "sinfo: node state '$(sinfo -h -N -o %T)', expected idle"
expect_rc 0 "local-slurm.sh up again (already up)" -- "$LS" up
expect_in "$TMP/out" "already up" "a second up leaves the running cluster alone"
expect_rc 0 "srun --mpi=list" -- srun --mpi=list
cat "$TMP/out" "$TMP/err" >"$TMP/mpi-list" # the list goes to stdout or stderr, by version
expect_in "$TMP/mpi-list" "pmix" "srun offers PMIx"

# The job: the suite's quick profile, 2 ranks launched by srun. The binaries are
# the tests' (PARABENCH_BUILD=0: no rebuild in the job with other flags). Its limit
# grows with PB_TEST_SLOWDOWN: under make sanitize the quick run alone took 140 s.
RES="$TMP/results dir with spaces"
(cd "$ROOT" && PARABENCH_BUILD=0 BUILD=$BUILD timeout $((170 * ${PB_TEST_SLOWDOWN:-1})) sbatch --wait --output="$TMP/job.out" \
    scripts/slurm/run_all-cpu.sbatch --quick --out "$RES") >"$TMP/sbatch.out" 2>"$TMP/sbatch.err" &
JOB=$!
wait "$JOB"
rc=$?
JOB=""
if [ "$rc" -eq 0 ]; then pass "sbatch --wait run_all-cpu.sbatch --quick (exit 0)"; else
    fail "sbatch --wait run_all-cpu.sbatch --quick: exit $rc, expected 0"
    sed 's/^/  | /' "$TMP/sbatch.err" "$TMP/job.out" 2>/dev/null | tail -30 >&2
fi
if [ -s "$RES/steps.tsv" ]; then
    bad=$(awk -F'\t' '$2 != "ok" && $2 != "skipped"' "$RES/steps.tsv")
    [ -z "$bad" ] && pass "steps.tsv: $(wc -l <"$RES/steps.tsv") steps, all ok or skipped" \
        || { fail "steps.tsv: steps neither ok nor skipped"; echo "$bad" | sed 's/^/  | /' >&2; }
    grep -qP '^coll_sweep\tok\t' "$RES/steps.tsv" && pass "coll_sweep ran (ok)" || fail "coll_sweep is not ok in steps.tsv"
else
    fail "$RES/steps.tsv is missing or empty"
fi
python3 - "$RES" >"$TMP/meta.out" 2>&1 <<'PY'
import json, sys
out = sys.argv[1]
meta = json.load(open(out + "/meta.json"))
assert meta["launcher"] == "srun", "launcher is %r, expected srun" % meta["launcher"]
assert meta["launch"].startswith("env SLURM_PMIX_FENCE=ring srun "), \
    "launch line %r does not start with env SLURM_PMIX_FENCE=ring srun" % meta["launch"]
assert meta["nranks"] == 2, "nranks %r, expected 2" % meta["nranks"]
cs = json.load(open(out + "/coll_sweep.json"))["meta"]
# Without a PMI wire-up Debian's Open MPI fails in MPI_Init; others may run each rank as a world of its own.
assert cs["nranks"] == 2 and cs["hosts"][0]["ranks"] == [0, 1], "coll_sweep saw %r ranks on %r" % (cs["nranks"], cs["hosts"])
print("launch: " + meta["launch"])
PY
if [ $? -eq 0 ]; then pass "meta.json: launcher srun, $(grep '^launch' "$TMP/meta.out"); coll_sweep wired 2 ranks up"; else
    fail "meta.json / coll_sweep.json"; sed 's/^/  | /' "$TMP/meta.out" >&2; fi
expect_in "$TMP/job.out" ", srun, bound to:" "the job's log names srun as the launcher"

# Down: every daemon it started is gone, and nothing holds a file in the cluster's directory.
expect_rc 0 "local-slurm.sh down" -- "$LS" down
UP=0
# shellcheck disable=SC2086 # one PID per word
if [ -n "$PIDS" ] && all_gone $PIDS; then pass "munged, slurmctld, slurmd stopped (pids$PIDS)"; else fail "daemons left after down (pids$PIDS)"; fi
left=""
for fd in /proc/[0-9]*/fd/*; do
    case "$(readlink "$fd" 2>/dev/null)" in "$PARABENCH_SLURM_DIR"/*) left="$left ${fd#/proc/}" ;; esac
done
[ -z "$left" ] && pass "no process holds a file under the cluster's directory" || fail "files still open:$left"
ls "$PARABENCH_SLURM_DIR"/run/*.pid >/dev/null 2>&1 && fail "pid files left in $PARABENCH_SLURM_DIR/run" || pass "pid files removed"
expect_rc 0 "local-slurm.sh down again (already down)" -- "$LS" down
expect_rc 1 "local-slurm.sh status when down" -- "$LS" status
finish
