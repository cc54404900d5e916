#!/usr/bin/env bash
# parabench main job: install what is missing, build, run the suite on this
# machine (or a cluster), and write everything under results/<date>-<host>/.
#
#   ./run_all.sh [--quick|--full] [--np N] [--hostfile FILE] [--ranks-per-node N]
#                [--backend mpi|nccl] [--out DIR] [--quiet]
#
# A failing benchmark is recorded and the rest still run; the exit status is
# 0 when everything passed, 1 when something failed.
set -u
ROOT=$(cd "$(dirname "$0")" && pwd)
cd "$ROOT" || exit 3

PROFILE=default NP="" HOSTFILE="" RPN="" BACKEND="" OUT="" QUIET=0
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
die_usage() { echo "run_all.sh: option $1: $2" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) PROFILE=quick ;;
        --full) PROFILE=full ;;
        --np) [ $# -ge 2 ] || die_usage --np "needs a value"; NP=$2; shift
              [[ "$NP" =~ ^[1-9][0-9]*$ ]] || die_usage --np "'$NP' is not a positive integer" ;;
        --hostfile) [ $# -ge 2 ] || die_usage --hostfile "needs a file"; HOSTFILE=$2; shift
              [ -r "$HOSTFILE" ] || die_usage --hostfile "'$HOSTFILE' is not a readable file" ;;
        --ranks-per-node) [ $# -ge 2 ] || die_usage --ranks-per-node "needs a value"; RPN=$2; shift
              [[ "$RPN" =~ ^[1-9][0-9]*$ ]] || die_usage --ranks-per-node "'$RPN' is not a positive integer" ;;
        --backend) [ $# -ge 2 ] || die_usage --backend "needs mpi or nccl"; BACKEND=$2; shift
              [[ "$BACKEND" =~ ^(mpi|nccl)$ ]] || die_usage --backend "'$BACKEND' is not accepted; expected mpi or nccl" ;;
        --out) [ $# -ge 2 ] || die_usage --out "needs a directory"; OUT=$2; shift ;;
        --quiet) QUIET=1 ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "$1" "unknown option; see --help" ;;
    esac
    shift
done

say() { [ "$QUIET" = 1 ] || echo "run_all: $*" >&2; }

# ---- dependencies and build ----
scripts/install-deps.sh || { echo "run_all.sh: installing dependencies failed" >&2; exit 3; }
# -k: a benchmark that does not build is reported as such; the others still run.
BUILD_FAILED=0 BUILT=0
if ! make -q all >/dev/null 2>&1; then
    say "building"
    BUILT=1
    if ! make -k -j"$(nproc)" all >/tmp/parabench-build.log 2>&1; then
        BUILD_FAILED=1
        echo "run_all.sh: part of the build failed; see /tmp/parabench-build.log" >&2
        grep -E "error" /tmp/parabench-build.log | head -5 >&2
    fi
fi
BIN=$ROOT/build/bin

# ---- launcher: srun under Slurm, else mpirun (with a hostfile if given) ----
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
CORES=$(nproc)
if [ -z "$NP" ]; then
    if [ -n "${SLURM_NTASKS:-}" ]; then NP=$SLURM_NTASKS; else NP=$CORES; fi
    [ "$NP" -ge 2 ] || NP=2
fi
if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then
    LAUNCH=(srun -n "$NP" ${RPN:+--ntasks-per-node=$RPN})
    LAUNCHER=srun
else
    LAUNCH=(mpirun -np "$NP" --bind-to none)
    [ "$NP" -gt "$CORES" ] && [ -z "$HOSTFILE" ] && LAUNCH+=(--oversubscribe)
    [ -n "$HOSTFILE" ] && LAUNCH+=(--hostfile "$HOSTFILE")
    [ -n "$RPN" ] && LAUNCH+=(--npernode "$RPN")
    LAUNCHER=mpirun
fi
BACKEND_ARGS=()
[ -n "$BACKEND" ] && BACKEND_ARGS=(--backend "$BACKEND")

# ---- output directory: never overwrite an earlier run ----
if [ -z "$OUT" ]; then
    base="results/$(date +%Y%m%d-%H%M%S)-$(hostname -s)"
    OUT=$base; n=1
    while [ -e "$OUT" ]; do OUT="$base-$n"; n=$((n + 1)); done
fi
mkdir -p "$OUT/logs" || { echo "run_all.sh: cannot create $OUT" >&2; exit 3; }
[ "$BUILT" = 1 ] && cp /tmp/parabench-build.log "$OUT/logs/build.log"
OUT=$(cd "$OUT" && pwd)

# ---- the suite: one line per step: name|binary|arguments (profile-specific) ----
case "$PROFILE" in
    quick) SWEEP="-b 8 -e 4M -f 4 -n 20 -w 3 --max-seconds-per-size 2"
           P2P="-b 1 -e 4M -f 8 -n 200 -w 20 --max-seconds-per-size 2" ;;
    full)  SWEEP="-b 8 -e 256M -f 2 -n 100 -w 10 --max-seconds-per-size 20"
           P2P="-b 1 -e 64M -f 2 -n 1000 -w 100 --max-seconds-per-size 10" ;;
    *)     SWEEP="-b 8 -e 64M -f 4 -n 50 -w 5 --max-seconds-per-size 5"
           P2P="-b 1 -e 16M -f 4 -n 500 -w 50 --max-seconds-per-size 5" ;;
esac
STEPS=(
    "coll_sweep|coll_sweep|--coll all $SWEEP"
    "p2p_sweep|p2p_sweep|--mode all $P2P"
)

FAILED=() START=$SECONDS
run_step() { # k name binary args
    local k=$1 name=$2 bin=$3 args=$4
    local elapsed=$((SECONDS - START)) eta=""
    [ "$k" -gt 1 ] && eta=", about $(( elapsed * (${#STEPS[@]} - k + 1) / (k - 1) )) s left"
    say "[$k/${#STEPS[@]}] $name (${elapsed} s elapsed$eta)"
    if [ ! -x "$BIN/$bin" ]; then
        echo "run_all.sh: $name: $BIN/$bin is not built" >"$OUT/logs/$name.err"; FAILED+=("$name(not built)"); return
    fi
    # shellcheck disable=SC2086
    "${LAUNCH[@]}" "$BIN/$bin" $args "${BACKEND_ARGS[@]}" --csv "$OUT/$name.csv" --json "$OUT/$name.json" \
        >"$OUT/$name.txt" 2>"$OUT/logs/$name.err"
    local rc=$?
    echo "$rc" >"$OUT/logs/$name.rc"
    if [ "$rc" -ne 0 ]; then
        FAILED+=("$name(exit $rc)")
        say "$name failed with exit $rc; see $OUT/logs/$name.err"
    fi
}

k=0
for step in "${STEPS[@]}"; do
    k=$((k + 1))
    IFS='|' read -r name bin args <<<"$step"
    run_step "$k" "$name" "$bin" "$args"
done

# ---- meta.json: the run's own facts plus the first benchmark's metadata ----
python3 - "$OUT" "$PROFILE" "$LAUNCHER" "$NP" "${LAUNCH[*]}" "${FAILED[*]:-}" <<'PY'
import glob, json, os, sys
out, profile, launcher, np_, launch, failed = sys.argv[1:7]
meta = {"profile": profile, "launcher": launcher, "nranks": int(np_), "launch": launch,
        "failed": failed.split() if failed else [], "benchmarks": {}}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    if path.endswith("meta.json"):
        continue
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        continue
    meta["benchmarks"][os.path.basename(path)[:-5]] = {"complete": doc.get("complete"), "rows": len(doc.get("rows", []))}
    meta.setdefault("machine", doc.get("meta", {}))
json.dump(meta, open(os.path.join(out, "meta.json"), "w"), indent=2)
PY

# ---- summary ----
python3 - "$OUT" <<'PY' >"$OUT/summary.txt"
import csv, json, os, sys
out = sys.argv[1]
def rows(name):
    p = os.path.join(out, name + ".csv")
    if not os.path.exists(p):
        return []
    return list(csv.DictReader(l for l in open(p) if not l.startswith("#")))
coll = rows("coll_sweep")
for link in ("intra", "inter", "mixed"):
    ar = [r for r in coll if r["collective"] == "allreduce" and r["link_class"] == link]
    if ar:
        best = max(ar, key=lambda r: float(r["busbw_GBps"]))
        print(f"allreduce busbw ({link}): {float(best['busbw_GBps']):.2f} GB/s at {best['bytes']} B; "
              f"{float(ar[0]['time_us']):.2f} us at {ar[0]['bytes']} B")
p2p = rows("p2p_sweep")
lat = [r for r in p2p if r["mode"] == "latency"]
bw = [r for r in p2p if r["mode"] == "bw"]
if lat:
    print(f"p2p latency ({lat[0]['link_class']}): {float(lat[0]['time_us']):.2f} us at {lat[0]['bytes']} B")
if bw:
    best = max(bw, key=lambda r: float(r["bw_GBps"]))
    print(f"p2p bandwidth ({best['link_class']}): {float(best['bw_GBps']):.2f} GB/s at {best['bytes']} B")
PY
[ "$QUIET" = 1 ] || cat "$OUT/summary.txt" >&2
say "results in $OUT ($((SECONDS - START)) s)"
[ "$BUILD_FAILED" = 1 ] && FAILED+=("build")
if [ ${#FAILED[@]} -gt 0 ]; then
    echo "run_all.sh: failed: ${FAILED[*]}" >&2
    exit 1
fi
exit 0
