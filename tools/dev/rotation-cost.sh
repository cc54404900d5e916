#!/usr/bin/env bash
# What the opt-in cold-cache mode (--rotate 1) costs against the default fixed
# buffers: the same sweep both ways, alternating, several rounds; prints the
# median time of each and their ratio per operation and size.
#   Usage: tools/dev/rotation-cost.sh [ROUNDS]   (recorded as docs/measured/rotation-cost.txt by tools/dev/record.sh)
set -eu
cd "$(dirname "$0")/../.."
ROUNDS=${1:-5}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
make -s CUDA=0 BUILD=build-cpu all >/dev/null
M=(mpirun -np 2 --map-by core --bind-to core)
tmp=$(mktemp -d /tmp/pb-rot.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "# launch: ${M[*]}; default iteration counts; medians of $ROUNDS rounds"
for r in $(seq "$ROUNDS"); do
    for rot in 0 1; do
        "${M[@]}" build-cpu/bin/coll_sweep --sizes 8,64K,1M -c 0 --rotate $rot --csv "$tmp/c$rot-$r.csv" >/dev/null 2>&1
        "${M[@]}" build-cpu/bin/p2p_sweep --sizes 8,64K,1M -c 0 --rotate $rot --csv "$tmp/p$rot-$r.csv" >/dev/null 2>&1
    done
done
python3 - "$tmp" "$ROUNDS" <<'PY'
import csv, glob, os, statistics, sys
tmp, rounds = sys.argv[1], int(sys.argv[2])
def times(pattern):
    out = {}
    for path in glob.glob(os.path.join(tmp, pattern)):
        for row in csv.DictReader(l for l in open(path) if not l.startswith("#")):
            out.setdefault(int(row["bytes"]), []).append(float(row["time_us"]))
    return {k: statistics.median(v) for k, v in out.items()}
print(f"{'operation':<16}{'size (B)':>10}{'fixed (us)':>12}{'rotate (us)':>13}{'rotate/fixed':>14}")
for name, key in (("allreduce", "c"), ("p2p latency", "p")):
    fixed, rot = times(f"{key}0-*.csv"), times(f"{key}1-*.csv")
    for size in sorted(fixed):
        print(f"{name:<16}{size:>10}{fixed[size]:>12.3f}{rot[size]:>13.3f}{rot[size] / fixed[size]:>14.2f}")
PY
