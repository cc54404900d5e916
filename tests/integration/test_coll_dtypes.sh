#!/usr/bin/env bash
# coll_sweep's reductions for every datatype and operation, on 2, 3 and 4
# ranks (the bf16 and fp16 sums are the library's own user ops).
source "$(dirname "$0")/lib.sh"
# Every datatype and reduction validates on 2, 3 and 4 ranks. The inputs make
# every expected output vary by element (common/coll/coll_expect.h), so a broken
# reduction cannot pass by producing a constant.
export OMPI_MCA_mpi_yield_when_idle=1
for np in 2 3 4; do
    for d in float bfloat16 half int32; do
        for op in sum max min; do
            expect_rc 0 "allreduce/reducescatter/reduce $d $op, $np ranks" -- \
                mpi $np "$BIN/coll_sweep" --coll allreduce,reducescatter,reduce -d $d -o $op -r $((np - 1)) \
                --sizes 6,1K,10K -n 2 -w 0
            expect_in "$TMP/out" "# wrong values: 0 OK" "no wrong values for $d $op, $np ranks"
        done
    done
done
# Sizes a collective cannot take as asked: 1, 2 and 4 B of int32 reduce-scatter on 2 ranks all round
# up to one element a rank (8 B, as nccl-tests rounds): measured once, and said.
expect_rc 0 "reducescatter int32 -b 1 -e 7" -- mpi 2 "$BIN/coll_sweep" --coll reducescatter -d int32 -b 1 -e 7 -n 2 -w 1 \
    --csv "$TMP/round.csv"
[ "$(grep -v '^#' "$TMP/round.csv" | tail -n +2 | wc -l)" = 1 ] && pass "the rounded sizes measured once" \
    || fail "rounded sizes: $(grep -v '^#' "$TMP/round.csv" | tail -n +2 | cut -d, -f1-3 | tr '\n' ' ')"
expect_in "$TMP/err" "3 requested size(s) round up (whole elements, at least one a rank; e.g. 1 B to 8 B); 2 not measured again" \
    "the rounding is said, once"
expect_rc 0 "reducescatter int32 -b 8 -e 32" -- mpi 2 "$BIN/coll_sweep" --coll reducescatter -d int32 -b 8 -e 32 -n 2 -w 1
grep -q "round up" "$TMP/err" && fail "sizes that need no rounding got a rounding note" || pass "no note where nothing rounds"
finish
