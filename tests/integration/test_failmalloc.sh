#!/usr/bin/env bash
# test-runner: waits (hundreds of short launches, each mostly start-up: about 15 s of CPU in 3 min)
# Out of memory at every allocation (tests/fault/failmalloc.c, driven by
# tests/fault/sweep.sh): a command runs once per allocation its own code
# makes, with that one failing. The tools that run without MPI are swept
# whole: plan (a ranking written with --json, and --reproduce) and acceptance
# (rules over a results directory, with --junit). Every run must either
# refuse, exit 3 with an "out of memory" message (acceptance may also exit 1:
# the rule it could not check failed, the reason in its table), or finish with
# exactly a clean run's output: never crash, hang, or write results the
# failure changed. An MPI benchmark, pp_pipeline, is swept on a sample of its
# allocations on each of two ranks, and its trace gather whole (below).
source "$(dirname "$0")/lib.sh"
# Ranks left waiting on a peer that failed, hung or was stopped (on purpose here) yield
# their processor to the other tests instead of spinning on it until the job ends.
export OMPI_MCA_mpi_yield_when_idle=1
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
# AddressSanitizer (make sanitize) interposes malloc itself and insists on coming first:
# the injector cannot stand before it. The sweep runs in the plain build (make test).
if ldd "$BIN/plan" 2>/dev/null | grep -q 'libasan'; then
    echo "SKIP: test_failmalloc.sh: $BIN is an AddressSanitizer build; the allocation sweep runs in make test's build"
    exit 77
fi
LIB=$ROOT/$BUILD/lib/libpb_failmalloc.so
make -C "$ROOT" --no-print-directory "$BUILD/lib/libpb_failmalloc.so" >"$TMP/build.log" 2>&1 ||
    { fail "building the injector:"; tail -5 "$TMP/build.log" >&2; finish; }

# sweep DESC SWEEP-ARGS... -- COMMAND...: every allocation refused or harmless, and at least 3 of them.
sweep() {
    local desc=$1
    shift
    if "$ROOT/tests/fault/sweep.sh" --lib "$LIB" --timeout 30 "$@" >"$TMP/sweep.out" 2>&1; then
        local n
        n=$(sed -n 's/^allocations \([0-9]*\):.*/\1/p' "$TMP/sweep.out")
        if [ "${n:-0}" -ge 3 ]; then pass "$desc: $(tail -1 "$TMP/sweep.out")"
        else fail "$desc: only ${n:-no} allocations counted, so the injector did not reach the program"; fi
    else
        fail "$desc: an allocation failure crashed, hung or changed the results:"
        grep -vE '^[0-9]+ [0-9]+ (refused|same) ' "$TMP/sweep.out" | head -8 | sed 's/^/  | /' >&2
    fi
}

# The sweep's own verdicts, both sides, on three small programs of one allocation
# each: one refuses (exit 3), one hides the failure and prints something else,
# one crashes. Only the first passes.
for kind in refuses hides crashes; do
    cat >"$TMP/$kind.c" <<C
#include <stdio.h>
#include <stdlib.h>
int main(void)
{
    char *p = malloc(16);
    if (!p && "$kind"[0] == 'r') { fprintf(stderr, "out of memory\\n"); return 3; }
    if (!p && "$kind"[0] == 'h') { puts("partial"); return 0; }
    p[0] = 'x'; /* crashes when p is NULL */
    puts(p[0] == 'x' ? "full" : "?");
    free(p);
    return 0;
}
C
    cc -O0 -o "$TMP/$kind" "$TMP/$kind.c" || fail "compiling the $kind probe"
    "$ROOT/tests/fault/sweep.sh" --lib "$LIB" -- "$TMP/$kind" >"$TMP/$kind.out" 2>&1
    echo "$? $(tail -1 "$TMP/$kind.out")" >"$TMP/$kind.verdict"
done
grep -qx "0 allocations 1: refused 1 same 0 ran 0 changed 0 signal 0 hang 0 other 0" "$TMP/refuses.verdict" &&
    grep -qx "1 allocations 1: refused 0 same 0 ran 0 changed 1 signal 0 hang 0 other 0" "$TMP/hides.verdict" &&
    grep -qx "1 allocations 1: refused 0 same 0 ran 0 changed 0 signal 1 hang 0 other 0" "$TMP/crashes.verdict" &&
    pass "sweep.sh: refused passes; a hidden failure (changed) and a crash (signal) fail" ||
    { fail "sweep.sh's verdicts on the probes:"; cat "$TMP"/*.verdict | sed 's/^/  | /' >&2; }

# --in: the allocations one function makes itself, named by addr2line; none found is bad usage.
"$ROOT/tests/fault/sweep.sh" --lib "$LIB" --in main --exe "$TMP/refuses" -- "$TMP/refuses" >"$TMP/in.out" 2>&1
in_rc=$?
"$ROOT/tests/fault/sweep.sh" --lib "$LIB" --in no_such_function --exe "$TMP/refuses" -- "$TMP/refuses" >"$TMP/none.out" 2>&1
none_rc=$?
[ "$in_rc" = 0 ] && grep -qx "1 3 refused  out of memory" "$TMP/in.out" && [ "$none_rc" = 2 ] &&
    grep -q "no allocation of .*'s no_such_function was counted" "$TMP/none.out" &&
    pass "sweep.sh --in: main's one allocation swept; a function with none is refused (exit 2)" ||
    { fail "sweep.sh --in (exits $in_rc, $none_rc):"; cat "$TMP/in.out" "$TMP/none.out" | sed 's/^/  | /' >&2; }

sweep "plan, a ranking with --json" --compare "$TMP/rank.json" -- \
    "$BIN/plan" --model llama-70b --cluster a100 --gpus 256 --top 5 --json "$TMP/rank.json"
sweep "plan --reproduce" -- "$BIN/plan" --reproduce

R=$TMP/run
mark_run "$R"
cat >"$R/coll_sweep.csv" <<'CSV'
# parabench coll_sweep
collective,bytes,count,nranks,link_class,time_us,algbw_GBps,busbw_GBps,wrong
allreduce,8,2,3,intra,5.0,0.0016,0.002,0
allreduce,67108860,16777215,3,intra,30000,2.2,3.0,0
# complete
CSV
cat >"$TMP/rules.thr" <<'THR'
busbw coll=allreduce size=64M link=intra >= 2.5 GB/s
coll_latency coll=allreduce size=8 <= 10 us
THR
# acceptance fails closed: a rule it could not check fails (exit 1), saying why.
sweep "acceptance with --junit" --refused-exit 1,3 --compare "$TMP/acc.xml" -- \
    "$BIN/acceptance" --thresholds "$TMP/rules.thr" --results "$R" --junit "$TMP/acc.xml"
# An MPI benchmark's whole run (start-up, the timed pipeline steps, the
# validation step, the trace, the report), each allocation failing on one rank,
# sampled: allocations 1, 4, 7... on rank 0 (which writes the outputs), 3, 6, 9... on rank 1 (3: the node numbering).
# A failure inside a step leaves the peer stage blocked in a receive: the rank
# that failed must end the job with exit 3 (pb_world_wait_after_step), not leave
# it to the watchdog (exit 4, "other") or hang. None of these allocations is one
# a run can do without: each must be refused, none ignored (exit 0, "ran": the
# metadata's command line, the printed metadata and the notes once were).
# Its output holds timings: not compared.
PP=("$BIN/pp_pipeline" --hidden 64 --heads 4 --seq 16 -n 1 -w 0 --layers 2 --micro-batches 2 --schedule 1f1b
    --timeout 10 --trace "$TMP/pp-trace.csv")
for sample in "0 3 1" "1 3 3"; do
    read -r rank every from <<<"$sample"
    sweep "pp_pipeline, allocations $from, $((from + every)), ... failing on rank $rank" --rank "$rank" \
        --timings --every "$every" --from "$from" -- mpirun -np 2 --oversubscribe --bind-to none \
        --mca btl self,vader,tcp "${PP[@]}"
    grep -q "^allocations .* ran 0 " "$TMP/sweep.out" && pass "rank $rank: every allocation failing is refused" \
        || { fail "rank $rank: an allocation failed and the run went on:"; grep " ran " "$TMP/sweep.out" | sed 's/^/  | /' >&2; }
done
# The trace's gather, whole (the sample above reaches one of its allocations):
# rank 0 short of memory for the gathered events must stop every rank, not
# gather into nothing.
sweep "pp_pipeline's trace gather, each of its allocations failing on rank 0" --rank 0 --timings \
    --in pb_pp_trace_gather --exe "$BIN/pp_pipeline" -- mpirun -np 2 --oversubscribe --bind-to none \
    --mca btl self,vader,tcp "${PP[@]}"
grep -q "^allocations .* refused 4 " "$TMP/sweep.out" && pass "the gather's four allocations (events, counts, offsets, the gathered buffer) each refused" ||
    { fail "the trace gather's allocations:"; sed 's/^/  | /' "$TMP/sweep.out" >&2; }
finish
