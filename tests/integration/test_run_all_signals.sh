#!/usr/bin/env bash
# run_all.sh stopped by a signal, as Ctrl-C (SIGINT) or Slurm at the time limit
# (SIGTERM) stop it: the signal goes to the run_all process only, while a step
# runs under mpirun. It must exit 130 / 143 soon, leave no process of the run
# behind (timeout, mpirun, ranks: they run in process groups of their own),
# keep the steps recorded before, record the running step as interrupted, and
# write meta.json (marking the interruption) and the report. Twice on a
# --quick run while its third step runs, then SIGTERM to a run whose first
# step hangs (PARABENCH_TEST_SKIP=1: rank 1 skips its operations, so rank 0
# waits until the 90 s step limit): it must stop at once, not when the step
# limit or the watchdog would have, and leave no rank behind. SIGHUP (a closed
# terminal or ssh session) and SIGQUIT the same way (exit 129, 131); a second
# signal (HUP) 0.3 s after TERM, while the step is being stopped, must not cost
# meta.json. Last, SIGKILL to run_all, which no handler sees: the step's processes
# must still end within seconds (suite/guard.py), not run on to the step limit.
source "$(dirname "$0")/lib.sh"
# Ranks left waiting on a peer that failed, hung or was stopped (on purpose here) yield
# their processor to the other tests instead of spinning on it until the job ends.
export OMPI_MCA_mpi_yield_when_idle=1
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
[ -x "$BIN/coll_sweep" ] && [ -x "$BIN/p2p_sweep" ] || skip_test "$BIN is not built (make first)"
# Job control: a background job of a non-interactive shell starts with SIGINT ignored,
# and an ignored signal cannot be trapped; with -m it starts as from a terminal.
set -m
# Where this test itself was started with SIGINT ignored (under nohup, or as a background
# job), every process below it inherits that, and no trap can undo it: run_all starts from
# this wrapper, with SIGINT at its default as a terminal gives it.
SIGINT_DEFAULT=$TMP/sigint-default
printf '%s\n' '#!/usr/bin/env python3' 'import os, signal, sys' 'signal.signal(signal.SIGINT, signal.SIG_DFL)' \
    'os.execvp(sys.argv[1], sys.argv[1:])' >"$SIGINT_DEFAULT"
chmod +x "$SIGINT_DEFAULT"

# interrupt NAME SIGNAL EXIT MIN_BEFORE [VAR=VALUE...]: one run_all --quick (in the environment
# given), stopped by SIGNAL once MIN_BEFORE steps are recorded and a benchmark's two ranks run.
interrupt() {
    local tag=$1 sig=$2 want=$3 min=$4 out=$TMP/run-$1 job pids="" p t0 rc secs n i
    shift 4
    env "$@" BUILD="$BUILD" "$SIGINT_DEFAULT" "$ROOT/run_all.sh" --quick --no-install --out "$out" >"$TMP/$tag.out" 2>"$TMP/$tag.err" &
    job=$!
    for _ in $(seq 600); do
        [ "$(cat "$out/steps.tsv" 2>/dev/null | wc -l)" -ge "$min" ] && rank_pid "$job" 0 >/dev/null && rank_pid "$job" 1 >/dev/null && break
        kill -0 "$job" 2>/dev/null || break
        sleep 0.2
    done
    sleep 0.5
    pids=$(descendants "$job")
    cp "$out/steps.tsv" "$TMP/$tag.before" 2>/dev/null
    local names=""
    for p in $pids; do names="$names $(cat "/proc/$p/comm" 2>/dev/null)"; done
    case " $names " in
        *" mpirun "*) pass "$tag: SIG$sig: a step runs under mpirun when the signal is sent (${names# })" ;;
        *) fail "$tag: SIG$sig: no step running under run_all (descendants:$names); rc so far: $(kill -0 "$job" 2>/dev/null && echo running || echo exited)" ;;
    esac
    n=$(cat "$TMP/$tag.before" 2>/dev/null | wc -l)
    [ "$n" -ge "$min" ] && pass "$tag: SIG$sig: $n step(s) recorded before the signal" \
        || fail "$tag: SIG$sig: $n step(s) in steps.tsv before the signal, expected $min or more"

    t0=$SECONDS
    kill "-$sig" "$job"
    [ -n "${AGAIN:-}" ] && { sleep 0.3; kill "-$AGAIN" "$job"; }
    wait "$job"
    rc=$? secs=$((SECONDS - t0))
    if [ "$rc" -eq "$want" ]; then pass "$tag: SIG$sig: run_all exits $rc"; else
        fail "$tag: SIG$sig: run_all exit $rc, expected $want"; sed 's/^/  | /' "$TMP/$tag.err" | tail -15 >&2; fi
    # A few seconds to stop the step, then meta.json and the report: generous on a loaded machine,
    # and below the 90 s step limit that would also end a hung step.
    [ "$secs" -le 45 ] && pass "$tag: SIG$sig: exited ${secs} s after the signal" || fail "$tag: SIG$sig: took $secs s to exit"
    # run_all waits for the step's processes before it exits: they must be gone at once (3 s to be
    # reaped), not only when the orphaned step would have ended by itself (lib.sh's all_gone waits 10 s).
    local left=""
    for _ in $(seq 15); do
        left=""
        for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
        [ -z "$left" ] && break
        sleep 0.2
    done
    # shellcheck disable=SC2086
    [ -z "$left" ] && pass "$tag: SIG$sig: no process of the step left (pids: $(echo $pids))" \
        || { fail "$tag: SIG$sig: processes left after run_all exited:$left"; kill -KILL $left 2>/dev/null; }
    # Also any process the run started later: every step's command line names the output directory.
    local stray=""
    for p in /proc/[0-9]*; do
        { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "$out/" && stray="$stray ${p#/proc/}"
    done
    [ -z "$stray" ] && pass "$tag: SIG$sig: no process names the run's directory" || fail "$tag: SIG$sig: stray processes:$stray"

    # steps.tsv: the earlier lines intact, then at most some steps that ended meanwhile, then the interrupted one.
    if [ "$(head -n "$n" "$out/steps.tsv")" = "$(cat "$TMP/$tag.before")" ]; then pass "$tag: SIG$sig: the steps recorded before are intact"
    else fail "$tag: SIG$sig: steps.tsv changed"; diff "$TMP/$tag.before" "$out/steps.tsv" >&2; fi
    local last
    last=$(tail -n 1 "$out/steps.tsv")
    i=$(grep -cP '\tinterrupted\t' "$out/steps.tsv")
    if [ "$i" -eq 1 ] && [[ "$last" == *$'\tinterrupted\t'*"stopped by SIG$sig" ]]; then
        pass "$tag: SIG$sig: the running step is recorded as interrupted (${last%%$'\t'*})"
    else fail "$tag: SIG$sig: steps.tsv does not end with the interrupted step"; cat "$out/steps.tsv" >&2; fi
    if python3 - "$out" "SIG$sig" "${last%%$'\t'*}" <<'PY'
import json, os, sys
out, sig, step = sys.argv[1:4]
m = json.load(open(os.path.join(out, "meta.json")))
lines = [l for l in open(os.path.join(out, "steps.tsv")) if l.strip()]
assert m["interrupted"] == sig, m.get("interrupted")
assert m["interrupted_step"] == step, m.get("interrupted_step")
assert len(m["steps"]) == len(lines) and m["steps"][-1]["status"] == "interrupted", m["steps"]
assert "report" not in m["not_run"] and step not in m["not_run"], m["not_run"]
PY
    then pass "$tag: SIG$sig: meta.json marks the interruption (signal, step, steps)"; else fail "$tag: SIG$sig: meta.json"; fi
    [ -n "${AGAIN:-}" ] && return  # the second signal may cut the report short; meta.json was the point
    [ -s "$out/report.md" ] && [ -s "$out/index.html" ] && pass "$tag: SIG$sig: report.md and index.html written" \
        || fail "$tag: SIG$sig: no report"
    expect_in "$out/report.md" "| interrupted |" "$tag: SIG$sig: the report lists the interrupted step"
    expect_in "$TMP/$tag.out" "interrupted (stopped by SIG$sig)" "$tag: SIG$sig: the summary on stdout says so"
    expect_in "$TMP/$tag.err" "interrupted by SIG$sig during" "$tag: SIG$sig: stderr names the signal and the step"
}

interrupt int INT 130 1
interrupt term TERM 143 1
interrupt hung TERM 143 0 PARABENCH_TEST_SKIP=1
interrupt hup HUP 129 0 PARABENCH_TEST_SKIP=1
interrupt quit QUIT 131 0 PARABENCH_TEST_SKIP=1
AGAIN=HUP interrupt twice TERM 143 0 PARABENCH_TEST_SKIP=1

# SIGKILL to run_all while a step hangs: no handler runs, so the step's guard must notice
# that its parent is gone and end the step's tree. The processes are the descendants of
# run_all's PID, listed before the kill (they are reparented after it).
out=$TMP/run-kill
env PARABENCH_TEST_SKIP=1 BUILD="$BUILD" "$SIGINT_DEFAULT" "$ROOT/run_all.sh" --quick --no-install --out "$out" \
    >"$TMP/kill.out" 2>"$TMP/kill.err" &
job=$!
for _ in $(seq 600); do
    rank_pid "$job" 0 >/dev/null && rank_pid "$job" 1 >/dev/null && break
    kill -0 "$job" 2>/dev/null || break
    sleep 0.2
done
sleep 0.5
pids=$(descendants "$job")
kill -KILL "$job"
wait "$job" 2>/dev/null
t0=$SECONDS left=""
for _ in $(seq 50); do  # TERM at once, KILL after STOP_GRACE (5 s): 10 s on a loaded machine
    left=""
    for p in $pids; do kill -0 "$p" 2>/dev/null && left="$left $p"; done
    [ -z "$left" ] && break
    sleep 0.2
done
# shellcheck disable=SC2086
if [ -n "$pids" ] && [ -z "$left" ]; then pass "SIGKILL to run_all: the step's processes are gone $((SECONDS - t0)) s later ($(echo $pids))"
else fail "SIGKILL to run_all: processes of the step left:${left:- (none found before the kill)}"; kill -KILL $left 2>/dev/null; fi

# SIGINT while run_all waits for a short command of its own before any step (nproc, which
# it asks for the cores): a signal at any moment must be honoured, not only while a step
# runs. An `nproc` first on PATH holds run_all there for 3 s and says when it is there;
# the signal then must end the run (130, "before any step ran"), not be lost.
mkdir -p "$TMP/shim"
cat >"$TMP/shim/nproc" <<EOF2
#!/bin/sh
touch "$TMP/in-nproc"
sleep 3
exec $(command -v nproc) "\$@"
EOF2
chmod +x "$TMP/shim/nproc"
PATH=$TMP/shim:$PATH BUILD="$BUILD" "$SIGINT_DEFAULT" "$ROOT/run_all.sh" --quick --no-install --out "$TMP/run-subst" \
    >"$TMP/subst.out" 2>"$TMP/subst.err" &
job=$!
for _ in $(seq 300); do [ -e "$TMP/in-nproc" ] && break; kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
if [ -e "$TMP/in-nproc" ]; then
    t0=$SECONDS
    kill -INT "$job"
    wait "$job"
    rc=$?
    if [ "$rc" -eq 130 ] && [ $((SECONDS - t0)) -le 30 ]; then pass "SIGINT while run_all waits for nproc: run_all exits 130"
    else fail "SIGINT while run_all waits for nproc: exit $rc after $((SECONDS - t0)) s (the signal was lost)"; fi
    expect_in "$TMP/subst.err" "interrupted by SIGINT before any step ran" "SIGINT while run_all waits for nproc: stderr says so"
else
    fail "run_all never called nproc (the shim saw no call)"; kill -TERM "$job" 2>/dev/null; wait "$job"
fi
finish
