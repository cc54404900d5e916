#!/usr/bin/env bash
# sweep.sh [OPTIONS] -- COMMAND...: run COMMAND once counting the heap
# allocations of its own code (tests/fault/failmalloc.c), then once more for
# each of them, that allocation failing, and print one line per run:
#   N EXIT VERDICT  (the first line of stderr that is not the injector's)
# VERDICT is
#   refused   exit 3 (the environment's code; --refused-exit says another) with
#             "out of memory" (or "Cannot allocate memory") in its output;
#   same      exit 0 and stdout, and every --compare file, as the clean run's;
#   changed   exit 0 with other output: the failure was hidden and changed results;
#   ran       exit 0, output not compared (--timings: a benchmark's stdout differs
#             between any two runs), so only crashes and hangs are judged;
#   signal    killed by a signal (a crash);
#   hang      still running after --timeout seconds;
#   other     any other exit status.
# A last line counts each verdict. Exit 0 when every run was refused, same or ran,
# 1 otherwise, 2 on bad usage.
# Options: --lib PATH (the injector, default build/lib/libpb_failmalloc.so),
# --rank R (fail in that MPI rank only: needed under mpirun, whose own
# processes must not fail), --min-bytes B, --timeout S (default 20),
# --compare FILE (an output the command writes), --only N[,N...] (those runs),
# --refused-exit CODE[,CODE...] (acceptance fails closed: a rule it could
# not check fails, exit 1), --timings (exit 0 is "ran", not compared),
# --every K [--from F] (allocations F, F+K, F+2K...: a sample of a long run,
# every phase of which spans more than K allocations), --in FUNCTION --exe PATH
# (only the allocations that FUNCTION of executable PATH makes itself, found
# with addr2line: one phase of a long run, whole).
set -u
lib=build/lib/libpb_failmalloc.so rank="" min="" timeout_s=20 compare=() only="" refused_exit=3 timings=0 every=1 from=1 in_fn="" exe=""
while [ $# -gt 0 ]; do
    case $1 in
    --lib) lib=$2; shift 2 ;;
    --rank) rank=$2; shift 2 ;;
    --min-bytes) min=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --compare) compare+=("$2"); shift 2 ;;
    --only) only=$2; shift 2 ;;
    --refused-exit) refused_exit=$2; shift 2 ;;
    --timings) timings=1; shift ;;
    --every) every=$2; shift 2 ;;
    --from) from=$2; shift 2 ;;
    --in) in_fn=$2; shift 2 ;;
    --exe) exe=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "sweep.sh: unknown option '$1'; see the comment at the top" >&2; exit 2 ;;
    esac
done
for v in "$every" "$from"; do
    [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "sweep.sh: --every and --from take a positive whole number, not '$v'" >&2; exit 2; }
done
if [ -n "$in_fn" ] && { [ ! -f "$exe" ] || ! command -v addr2line >/dev/null; }; then
    echo "sweep.sh: --in needs --exe naming the program's executable ('$exe') and addr2line (binutils)" >&2; exit 2
fi
[ $# -gt 0 ] && [ -f "$lib" ] || { echo "sweep.sh: usage: sweep.sh [--lib SO] [--rank R] ... -- COMMAND... (injector: '$lib')" >&2; exit 2; }
lib=$(cd "$(dirname "$lib")" && pwd)/$(basename "$lib")
work=$(mktemp -d /tmp/parabench-sweep.XXXXXX)
trap 'rm -rf "$work"' EXIT

run() { # N OUT COMMAND...: the command with allocation N failing (0: counting only)
    local n=$1 out=$2
    shift 2
    env LD_PRELOAD="$lib" PB_FAILMALLOC_NTH="$n" ${rank:+PB_FAILMALLOC_RANK=$rank} ${min:+PB_FAILMALLOC_MIN_BYTES=$min} \
        ${in_fn:+PB_FAILMALLOC_CALLERS=1} \
        timeout -k 5 "$timeout_s" "$@" >"$out.out" 2>"$out.err" </dev/null
}
cmd=("$@")
run 0 "$work/clean" "${cmd[@]}"
rc=$?
total=$(sed -n 's/^failmalloc: allocations \([0-9]*\) .*/\1/p' "$work/clean.err" | head -1)
if [ "$rc" -ne 0 ] || [ -z "$total" ]; then
    echo "sweep.sh: the clean run exited $rc, counting '${total:-nothing}':" >&2; head -5 "$work/clean.err" >&2; exit 2
fi
if [ -n "$in_fn" ]; then # the allocations whose caller lies in FUNCTION (addr2line -f: function, then file:line)
    sed -n 's/^failmalloc: caller \([0-9]*\) \(0x[0-9a-f]*\)$/\1 \2/p' "$work/clean.err" >"$work/callers"
    only=$(cut -d' ' -f2 "$work/callers" | addr2line -f -e "$exe" | sed -n 'p;n' | paste -d' ' <(cut -d' ' -f1 "$work/callers") - |
        awk -v f="$in_fn" '$2 == f { printf "%s%s", sep, $1; sep = "," }')
    [ -n "$only" ] || { echo "sweep.sh: no allocation of $exe's $in_fn was counted" >&2; exit 2; }
fi
for f in "${compare[@]}"; do cp "$f" "$work/clean.$(basename "$f")"; done
declare -A count
bad=0
for n in $(if [ -n "$only" ]; then tr ',' ' ' <<<"$only"; else seq "$from" "$every" "$total"; fi); do
    run "$n" "$work/run" "${cmd[@]}"
    rc=$?
    first=$(grep -v '^failmalloc: ' "$work/run.err" | grep -m1 . | cut -c1-160)
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict=hang
    elif [ "$rc" -gt 128 ]; then verdict=signal
    elif [[ ",$refused_exit," == *",$rc,"* ]] && grep -qiE "out of .*memory|cannot allocate memory" "$work/run.err" "$work/run.out"; then
        verdict=refused
    elif [ "$rc" = 0 ] && [ "$timings" = 1 ]; then verdict=ran
    elif [ "$rc" = 0 ]; then
        verdict=same
        cmp -s "$work/run.out" "$work/clean.out" || verdict=changed
        for f in "${compare[@]}"; do cmp -s "$f" "$work/clean.$(basename "$f")" || verdict=changed; done
    else verdict=other; fi
    count[$verdict]=$((${count[$verdict]:-0} + 1))
    case $verdict in refused | same | ran) ;; *) bad=1 ;; esac
    echo "$n $rc $verdict  $first"
done
summary="allocations $total:"
for v in refused same ran changed signal hang other; do summary="$summary $v ${count[$v]:-0}"; done
echo "$summary"
exit $bad
