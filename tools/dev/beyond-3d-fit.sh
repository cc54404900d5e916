#!/usr/bin/env bash
# The beyond-3D rows of a default run_all.sh on this machine against the planner: plan --fit with the
# run's own calibration (cluster.txt), the fsdp_step, cp_attention and moe_layer rows (docs/plan.md).
# Recorded as docs/measured/beyond-3d-fit.txt by tools/dev/measure-docs.sh. Exit: run_all's or plan's.
set -u
cd "$(dirname "$0")/../.." || exit 3
t=$(mktemp -d /tmp/parabench-beyond3d.XXXXXX)
trap 'rm -rf "$t"' EXIT
./run_all.sh --no-install --quiet --out "$t/run" >/dev/null 2>&1 || { rc=$?; echo "run_all.sh: exit $rc"; exit $rc; }
echo "run_all.sh (default profile): exit 0; plan --fit RUN --cluster RUN/cluster.txt, the beyond-3D rows:"
"${BUILD:-build}/bin/plan" --fit "$t/run" --cluster "$t/run/cluster.txt" >"$t/fit.txt" || exit $?
grep -E '^(benchmark|fsdp_step|cp_attention|moe_layer) ' "$t/fit.txt"
