#!/usr/bin/env bash
# The overlapped rows of cp_attention and fsdp_step (run_all's default shapes on 2 ranks)
# with Open MPI's waits spinning (OMPI_MCA_mpi_yield_when_idle=0, set by the user, which the
# benchmarks keep) and with the benchmarks' own choice (docs/METRICS.md, "A communication
# thread on a shared core"), ROUNDS times each (default 5), alternating; for each row the measured step
# against the step model the benchmark prints beside it (over = step / predicted - 1).
# Recorded as docs/measured/overlap-yield.txt by tools/dev/measure-docs.sh. Exit 3 no build.
set -u
cd "$(dirname "$0")/../.." || exit 3
B=${BUILD:-build}/bin
[ -x "$B/cp_attention" ] || { echo "overlap-yield: build first" >&2; exit 3; }
ROUNDS=${ROUNDS:-5}
t=$(mktemp -d /tmp/parabench-yield.XXXXXX)
trap 'rm -rf "$t"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
MPI=(mpirun -np 2 --oversubscribe --bind-to none)
run() { # NAME ENV(-x ... or nothing) BINARY ARGS...
    local name=$1 env=$2; shift 2
    # shellcheck disable=SC2086
    "${MPI[@]}" $env "$@" --csv "$t/$name.csv" >"$t/$name.txt" 2>&1 || { echo "$name: exit $?"; cat "$t/$name.txt"; return 1; }
    grep -m1 '^# mpi_yield_when_idle' "$t/$name.txt" | sed "s/^# /$name: /"
    python3 - "$t/$name.csv" "$name" <<'PY'
import csv, sys
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#"))]
for r in rows:
    mode = r.get("overlap") or r.get("prefetch")
    step, pred = float(r["step_us"]), float(r["predicted_step_us"])
    print("%-22s %-4s step %9.0f us  predicted %9.0f us  over %+6.1f%%" % (sys.argv[2], mode, step, pred, 100 * (step / pred - 1)))
    with open(sys.argv[1][:-4] + ".over", "a") as f:  # bench-setting mode over, for the medians
        f.write("%s %s %.1f\n" % (sys.argv[2].rsplit("-", 1)[0], mode, 100 * (step / pred - 1)))
PY
}
rc=0
for i in $(seq 1 "$ROUNDS"); do
    for mode in spin auto; do
        env=; [ "$mode" = spin ] && env="-x OMPI_MCA_mpi_yield_when_idle=0"
        run "cp-$mode-$i" "$env" "$B/cp_attention" --overlap off,on --model tiny-gqa --cp 2 --seq 256 --layers 2 -n 5 -w 1 || rc=1
        run "fsdp-$mode-$i" "$env" "$B/fsdp_step" --prefetch off,on --model tiny-gqa --layers 2 -n 5 -w 1 || rc=1
    done
done
echo "the median over the $ROUNDS rounds of each row's over:"
cat "$t"/*.over | sort | awk '{ k = $1 " " $2; v[k] = v[k] " " $3 } END { for (k in v) print k, v[k] }' | sort |
    while read -r bench mode vals; do
        printf '%-12s %-4s %+6.1f%%   (%s)\n' "$bench" "$mode" "$(printf '%s\n' $vals | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')" "$vals"
    done
exit $rc
