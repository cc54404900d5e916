#!/usr/bin/env bash
# The unit tests once more, the integration tests of the tools that run
# without MPI (acceptance, plan), and one validated run of every benchmark on
# 2 ranks, built with AddressSanitizer and UBSan (the CPU build, in $BUILD/san,
# as `make sanitize` builds them): an out-of-bounds access, a leak or
# undefined behaviour that the plain build passes unseen fails here (the
# benchmarks' leaks too: tests/lsan.supp leaves out only Open MPI's own). A
# sanitizer report exits 86 (tests/sanitizer-env.sh), a code no test expects.
# A tier of its own (make test-sanitized, which CI runs): its second build and
# its runs under the sanitizers were about a tenth of make test's CPU.
# test-runner: sanitized
source "$(dirname "$0")/lib.sh"
. "$TESTS_DIR/../sanitizer-env.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
case $BUILD in /*) SAN_DIR=$BUILD/san ;; *) SAN_DIR=$ROOT/$BUILD/san ;; esac

# A probe that leaks: whether this compiler builds with the sanitizers, and
# whether LeakSanitizer works here (it stops the process with ptrace, which
# some containers refuse); without it the run goes on with ASan and UBSan.
echo '#include <stdlib.h>
int main(void) { return malloc(64) == 0; }' >"$TMP/probe.c"
if ! cc -g -fsanitize=address,undefined "$TMP/probe.c" -o "$TMP/probe" 2>"$TMP/probe.err"; then
    skip_test "the C compiler cannot build with -fsanitize=address,undefined: $(head -1 "$TMP/probe.err")"
fi
"$TMP/probe" >"$TMP/probe.out" 2>&1
rc=$?
if [ $rc = 86 ] && grep -q "detected memory leaks" "$TMP/probe.out"; then
    pass "LeakSanitizer reports a leaked probe here"
else
    echo "note: LeakSanitizer does not work here (probe exit $rc: $(grep -m1 -E 'LeakSanitizer|ERROR' "$TMP/probe.out")); leaks are not checked"
    ASAN_OPTIONS=${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}
fi
units=()
for src in "$ROOT"/tests/unit/test_*.c; do units+=("$SAN_DIR/tests/$(basename "$src" .c)"); done
tools=(acceptance plan)
benchmarks=(coll_sweep p2p_sweep dp_allreduce tp_layer pp_pipeline hybrid_3d fsdp_step cp_attention moe_layer)
if ! make -C "$ROOT" -j2 --no-print-directory BUILD="$SAN_DIR" SAN=1 CUDA=0 "${units[@]}" \
    "${tools[@]/#/$SAN_DIR/bin/}" "${benchmarks[@]/#/$SAN_DIR/bin/}" >"$TMP/build.log" 2>&1; then
    fail "the sanitized build of the unit tests failed:"; tail -20 "$TMP/build.log" >&2
    finish
fi
for t in "${units[@]}"; do
    name=$(basename "$t")
    if "$t" >"$TMP/$name.log" 2>&1; then
        pass "$name under ASan and UBSan"
    else
        rc=$?
        fail "$name under ASan and UBSan exits $rc$([ $rc = 86 ] && echo ' (a sanitizer report)'):"
        grep -m5 -E "ERROR: |runtime error: |FAILED|SUMMARY: " "$TMP/$name.log" | sed 's/^/  | /' >&2
    fi
done
# The tools' own integration tests, on the sanitized binaries (lib.sh: BIN = $BUILD/bin).
for t in "${tools[@]}"; do
    if BUILD=$BUILD/san bash "$TESTS_DIR/test_$t.sh" >"$TMP/test_$t.log" 2>&1; then
        pass "test_$t.sh on the sanitized $t ($(grep -c '^ok' "$TMP/test_$t.log") checks)"
    else
        fail "test_$t.sh on the sanitized $t:"
        grep -E "^FAIL|ERROR: |runtime error: |SUMMARY: " "$TMP/test_$t.log" | head -8 | sed 's/^/  | /' >&2
    fi
done
# Every benchmark once, validated (-c 1), on small shapes with every mode of its
# main option, so each workload's validation and free paths run (cp_attention's lane
# threads on the NCCL rehearsal too, whose group state is per thread); and the CPU
# model's form (grouped-query attention, SwiGLU) through TP and PP.
model="--model tiny --layers 2 --hidden 128 --seq 64 -n 2 -w 1 -c 1"
while read -r name args; do
    out=$TMP/$name.${args%% *}
    # shellcheck disable=SC2086 # the arguments are words
    mpi 2 "$SAN_DIR/bin/$name" $args --csv "$out.csv" --json "$out.json" >"$out.log" 2>&1
    rc=$?
    if [ $rc = 0 ] && grep -q '^# complete' "$out.csv"; then
        pass "$name $args: exit 0 under ASan, UBSan and LeakSanitizer, its CSV complete"
    else
        fail "$name $args under ASan and UBSan: exit $rc$([ $rc = 86 ] && echo ' (a sanitizer report)')," \
            "CSV $(grep -q '^# complete' "$out.csv" 2>/dev/null && echo complete || echo incomplete):"
        grep -m5 -E "ERROR: |runtime error: |SUMMARY: |^$name" "$out.log" | sed 's/^/  | /' >&2
    fi
done <<EOF
coll_sweep --coll all -b 8 -e 64K -f 8 -n 2 -w 1 -c 1
p2p_sweep --mode all -b 1 -e 64K -f 16 -n 2 -w 1
p2p_sweep --matrix --sizes 8,64K -n 2 -w 1
dp_allreduce --overlap none,bucket --grad-bytes 256K $model
tp_layer --tp-comm allreduce,sp --tp 2 $model
pp_pipeline --schedule all --micro-batches 4 ${model/--layers 2/--layers 4} --trace $TMP/pp-trace.csv
hybrid_3d --tp 2 --pp 1 --dp 1 --compare-placements $model
fsdp_step --prefetch off,on $model
cp_attention --overlap off,on $model
cp_attention --backend nccl-rehearse --overlap on $model
tp_layer --model tiny-gqa --tp 2 --tp-comm allreduce,sp --layers 1 -n 2 -w 1 -c 1
pp_pipeline --model tiny-gqa --stages 2 --layers 2 --micro-batches 2 -n 2 -w 1 -c 1
moe_layer --model tiny-moe --layers 2 --seq 64 --skew uniform,2 -n 2 -w 1 -c 1
EOF
finish
