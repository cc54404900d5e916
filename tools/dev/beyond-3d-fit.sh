#!/usr/bin/env bash
# The beyond-3D rows of a default run_all.sh on this machine against the planner: plan --fit with the
# run's own calibration (cluster.txt), the fsdp_step, cp_attention and moe_layer rows (docs/plan.md);
# ROUNDS runs (default 3), one after another, each with its own calibration, then the largest
# error of each row over them. Recorded as docs/measured/beyond-3d-fit.txt by
# tools/dev/measure-docs.sh. Exit: run_all's or plan's.
set -u
cd "$(dirname "$0")/../.." || exit 3
ROUNDS=${ROUNDS:-3}
t=$(mktemp -d /tmp/parabench-beyond3d.XXXXXX)
trap 'rm -rf "$t"' EXIT
for i in $(seq 1 "$ROUNDS"); do
    ./run_all.sh --no-install --quiet --out "$t/run$i" >/dev/null 2>&1 || { rc=$?; echo "run_all.sh: exit $rc"; exit $rc; }
    echo "run $i: run_all.sh (default profile): exit 0; plan --fit RUN --cluster RUN/cluster.txt, the beyond-3D rows:"
    "${BUILD:-build}/bin/plan" --fit "$t/run$i" --cluster "$t/run$i/cluster.txt" >"$t/fit$i.txt" || exit $?
    grep -E '^(benchmark|fsdp_step|cp_attention|moe_layer) ' "$t/fit$i.txt" | tee -a "$t/rows.txt"
done
echo "the largest error of each row over the $ROUNDS runs:"
grep -Ev '^benchmark ' "$t/rows.txt" | awk '{
    key = $1; for (i = 2; i <= NF - 4; i++) if ($i !~ /\//) key = key " " $i
    e = $NF; sub(/%/, "", e); a = e < 0 ? -e : e
    if (!(key in worst) || a > worst[key]) { worst[key] = a; shown[key] = $NF }
    if (!(key in order)) order[key] = ++n; name[n] = key
} END { for (k = 1; k <= n; k++) printf "%-66s %8s\n", name[k], shown[name[k]] }'
