#!/usr/bin/env bash
# emulated-run.sh [--quick|--full]: one run_all.sh on an emulated cluster of 4
# nodes x 2 ranks (scripts/emulate-cluster.sh, 1 Gbit/s uplinks), beside the
# bound its --dry-run gives for the same hostfile: per step, the seconds the
# run took (meta.json) and the bound, then the totals. Default profile unless
# a flag says otherwise. On this one machine the 8 ranks share its cores, so
# the seconds measure the emulation, not a cluster; what it shows is that the
# bound holds. Waits for the emulated cluster's lock, brings the cluster up
# and always down. Recorded as docs/measured/emulated-4x2-default.txt:
#   tools/dev/record.sh emulated-4x2-default tools/dev/emulated-run.sh
set -u
cd "$(dirname "$0")/../.." || exit 3
EMU=scripts/emulate-cluster.sh
[ "$(id -u)" -eq 0 ] || { echo "emulated-run.sh: needs root (network namespaces)" >&2; exit 3; }
exec 9>/run/parabench-emu-owner.lock
flock 9
"$EMU" up --nodes 4 --rate 1gbit --slots 2 >/dev/null || exit 3
trap '"$EMU" down >/dev/null 2>&1' EXIT
eval "$("$EMU" env)"
export OMPI_MCA_mpi_yield_when_idle=1
out=$(mktemp -d /tmp/parabench-emulated-run.XXXXXX)
./run_all.sh --dry-run --hostfile "$PB_EMU_HOSTFILE" "$@" >"$out/dry.txt" 2>&1 || { cat "$out/dry.txt"; exit 1; }
start=$SECONDS
./run_all.sh --hostfile "$PB_EMU_HOSTFILE" --bind none --no-install --quiet --out "$out/run" "$@" >"$out/run.txt" 2>&1
rc=$?
wall=$((SECONDS - start))
echo "run_all.sh --hostfile (4 nodes x 2 ranks, 1 Gbit/s uplinks) $*: exit $rc, $wall s wall"
python3 - "$out/dry.txt" "$out/run/meta.json" "$wall" <<'PY'
import json, re, sys
dry, meta, wall = sys.argv[1], sys.argv[2], int(sys.argv[3])
bound = {m.group(1): int(m.group(2)) for m in
         (re.match(r"^(\w+)\s+(\d+) s\s", l) for l in open(dry)) if m and m.group(1) != "total"}
total = int(re.search(r"^total\s+(\d+) s", open(dry).read(), re.M).group(1))
steps = json.load(open(meta))["steps"]
print(f"{'step':<18}{'status':<9}{'measured':>10}{'bound':>8}{'share':>8}")
for s in steps:
    b = bound.get(s["name"])
    sec = int(s["seconds"])
    print(f"{s['name']:<18}{s['status']:<9}{sec:>8} s{b if b is not None else '-':>6} s"
          f"{(f'{sec / b:.0%}' if b else '-'):>8}")
print(f"{'all steps':<18}{'':<9}{sum(int(s['seconds']) for s in steps):>8} s{total:>6} s"
      f"{sum(int(s['seconds']) for s in steps) / total:>8.0%}")
print(f"whole run (launches included): {wall} s of the {total} s bound ({wall / total:.0%})")
over = [s["name"] for s in steps if s["name"] in bound and int(s["seconds"]) > bound[s["name"]]]
print("every step within its bound" if not over else "over their bound: " + ", ".join(over))
PY
rm -rf "$out"
exit "$rc"
