#!/usr/bin/env bash
# --max-seconds-per-size bounds one configuration of every workload, warm-up included: asked for
# 100000 iterations with a cap of CAP s, each of dp_allreduce, tp_layer (sharded and unsharded
# loops together), pp_pipeline and hybrid_3d stops at the cap. Measured as the wall time of the
# capped run less that of the same configuration with one iteration (start-up, setup and
# validation cancel out): at least half the cap (the loops really ran until it), at most 1.3 x
# the cap + 2 s (one iteration past it, and noise). A real run's iters column says how many ran.
. "$(dirname "$0")/lib.sh"
CAP=6
SMALL=(--layers 2 --hidden 64 --heads 8 --seq 32 --micro-batch 1)
now() { date +%s.%N; }
bounded() { # NAME ARGS...: the workload under the cap and once with one iteration
    local name=$1; shift
    local t0 t1 t2 rc base capped iters
    t0=$(now)
    mpi 2 "$BIN/$name" "$@" -n 1 -w 0 >"$TMP/$name-1.txt" 2>&1
    rc=$?
    t1=$(now)
    mpi 2 "$BIN/$name" "$@" -n 100000 -w 1 --max-seconds-per-size "$CAP" --csv "$TMP/$name.csv" \
        >"$TMP/$name.txt" 2>&1
    rc=$((rc + $?))
    t2=$(now)
    [ "$rc" -eq 0 ] || { fail "$name: exit codes not 0"; tail -5 "$TMP/$name.txt" >&2; return; }
    iters=$(python3 -c 'import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
print(",".join(r["iters"] for r in rows))' "$TMP/$name.csv")
    python3 - "$name" "$CAP" "$t0" "$t1" "$t2" "$iters" <<'PY' && pass "$name: $(cat "$TMP/verdict")" || { fail "$name: $(cat "$TMP/verdict")"; }
import sys
name, cap, t0, t1, t2, iters = sys.argv[1], float(sys.argv[2]), *map(float, sys.argv[3:6]), sys.argv[6]
base, capped = t1 - t0, t2 - t1
extra = capped - base
ok = 0.5 * cap <= extra <= 1.3 * cap + 2 and all(0 < int(i) < 100000 for i in iters.split(","))
verdict = "cap %g s: %.1f s more than one iteration (bounds %.1f..%.1f), iters %s" % (cap, extra, 0.5 * cap, 1.3 * cap + 2, iters)
import os
open(os.path.join(os.environ["TMP"], "verdict"), "w").write(verdict)
sys.exit(0 if ok else 1)
PY
}
export TMP
bounded dp_allreduce "${SMALL[@]}" --grad-bytes 256K
bounded tp_layer "${SMALL[@]}" --tp 2
bounded pp_pipeline "${SMALL[@]}" --schedule 1f1b --micro-batches 2
bounded hybrid_3d "${SMALL[@]}" --tp 2 --pp 1
finish
