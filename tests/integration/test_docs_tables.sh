#!/usr/bin/env bash
# Every benchmark's printed table, in each of its modes, looks as the docs
# show it (tests/integration/table_format.py): the same title and units
# lines, values ending in the same columns with the same decimals. A column's
# width or precision changed in the code and not in the docs fails here. Then
# the checker's own verdicts, both sides, on a table it must refuse. Seconds.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
docs=()
for d in "$ROOT"/docs/*.md; do docs+=("$d"); done
check_tables() { python3 "$TESTS_DIR/table_format.py" "$1" "${docs[@]}"; }

shape="--model tiny --hidden 128 --seq 64 -n 2 -w 1" model="--model tiny --layers 2 --hidden 128 --seq 64 -n 2 -w 1"
i=0
while read -r name args; do
    i=$((i + 1)) out=$TMP/$i.$name.out
    # shellcheck disable=SC2086 # the arguments are words
    if ! mpi 2 "$BIN/$name" $args >"$out" 2>&1; then
        fail "$name $args exits $?:"; tail -5 "$out" >&2; continue
    fi
    if check_tables "$out" >"$out.check"; then pass "$name $args: $(sed "s/^[^:]*: [^:]*: //" "$out.check")"
    else fail "$name $args prints a table unlike the docs':"; sed 's/^/  | /' "$out.check" >&2; fi
done <<EOF2
coll_sweep --coll allreduce,allgather -b 8 -e 64K -f 32 -n 2 -w 1
p2p_sweep --mode all -b 8 -e 64K -f 64 -n 2 -w 1
p2p_sweep --matrix --sizes 8,64K -n 2 -w 1
dp_allreduce --overlap none,bucket --grad-bytes 256K $model
tp_layer --tp-comm allreduce,sp $model
pp_pipeline --schedule all --micro-batches 4 $shape --layers 4
hybrid_3d --tp 2 --compare-placements $model
fsdp_step --prefetch off,on $model
cp_attention --overlap off,on $model
moe_layer --model tiny-moe --layers 1 --seq 64 --skew uniform,2 -n 2 -w 1
EOF2

# The checker's other side: a table whose column lost a decimal, one one column
# wider, and one whose title no doc shows, each refused and named.
good=$(ls "$TMP"/*.tp_layer.out 2>/dev/null)
if [ -f "$good" ]; then
    row=$(grep -m1 -n '^ .*allreduce' "$good" | cut -d: -f1)
    sed -E "${row}s/ ([0-9]+)\.([0-9]) /  \1\2 /" "$good" >"$TMP/decimal.out"  # 1856.5 -> 18565, same end
    sed "${row}s/^/ /" "$good" >"$TMP/wider.out"
    sed 's/#   tp   link/#   tp   LINK/' "$good" >"$TMP/title.out"
    for bad in decimal wider title; do
        if check_tables "$TMP/$bad.out" >"$TMP/$bad.check"; then fail "a table with a $bad change passed: $(cat "$TMP/$bad.check")"
        else pass "a table with a $bad change refused: $(head -1 "$TMP/$bad.check" | cut -c1-160)"; fi
    done
else
    fail "no tp_layer output to change"
fi
finish
