#!/usr/bin/env bash
# coll_sweep's two timings of one collective, inside each launch: time_us (a
# whole loop of back-to-back iterations and one wait, divided by the count, as
# nccl-tests times) against time_us_sample_mean (the sample pass, each
# iteration timed from an aligned start, as OSU's collectives time). Both come
# from the same launch, so the launch's speed (docs/fidelity.md) cancels in
# their ratio. LAUNCHES launches of a 2-rank float allreduce at 8 B, 64 KiB and
# 1 MiB; per launch and size both times and whole/samples; then each size's
# median ratio over the launches.
#   Usage: tools/dev/whole-loop-vs-samples.sh [LAUNCHES]   (default 7; recorded as
#   docs/measured/whole-loop-vs-samples.txt by tools/dev/record.sh)
set -eu
cd "$(dirname "$0")/../.."
LAUNCHES=${1:-7}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
make -s CUDA=0 BUILD=build-cpu all >/dev/null
M=(mpirun -np 2 --map-by core --bind-to core)
csv=$(mktemp /tmp/pb-whole.XXXXXX)
trap 'rm -f "$csv" "$csv.all"' EXIT
echo "# launch: ${M[*]} build-cpu/bin/coll_sweep --coll allreduce -d float --sizes 8,64K,1M (default counts)"
echo "launch bytes time_us time_us_sample_mean whole/samples"
for l in $(seq "$LAUNCHES"); do
    "${M[@]}" build-cpu/bin/coll_sweep --coll allreduce -d float --sizes 8,64K,1M --csv "$csv" >/dev/null 2>&1
    python3 - "$csv" "$l" <<'PY' | tee -a "$csv.all"
import csv, sys
for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")):
    t, s = float(r["time_us"]), float(r["time_us_sample_mean"])
    print(f"{sys.argv[2]} {r['bytes']} {t:.4g} {s:.4g} {t / s:.3f}")
PY
done
python3 - "$csv.all" <<'PY'
import statistics, sys
by = {}
for line in open(sys.argv[1]):
    f = line.split()
    by.setdefault(int(f[1]), []).append(float(f[4]))
for b, r in sorted(by.items()):
    print(f"median whole/samples at {b} B over {len(r)} launches: {statistics.median(r):.3f} "
          f"(from {min(r):.3f} to {max(r):.3f})")
PY
