#!/usr/bin/env bash
# run_all.sh's launch checks: a rank count the launcher cannot place is refused
# up front with exit 3 and the reason (it used to fail every step with exit 1,
# the code for wrong data); a bad --np is a usage error (2) naming --np; and
# --np 1 runs what one rank can and records the rest as skipped, with why.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
RA=$ROOT/run_all.sh

# check WANT FRAGMENT DESC -- ARGS...: exit WANT, stderr names FRAGMENT, and nothing was run.
check() {
    local want=$1 frag=$2 desc=$3 out=(--out "$TMP/never") profile=(--quick); shift 4
    # an option is given once (a second --out or --quick is refused as such)
    [[ " $* " == *" --out "* ]] && out=()
    [[ " $* " == *" --quick "* || " $* " == *" --full "* ]] && profile=()
    expect_rc "$want" "$desc" -- env BUILD="$BUILD" "$RA" "${profile[@]}" --no-install "${out[@]}" "$@"
    expect_in "$TMP/err" "$frag" "$desc: says '$frag'"
    if [ -e "$TMP/never" ]; then fail "$desc: a results folder was made"; rm -rf "$TMP/never"; fi
}

for bad in 0 -1 x 1.5 '' 2x; do check 2 "option --np" "--np '$bad'" -- --np "$bad"; done
# Above the documented maximum (2^20 ranks), however large: the range, never a traceback.
for bad in 0 -1 1048577 2000000 99999999999999999999; do
    check 2 "option --np: '$bad' is not accepted; expected an integer from 1 to 1048576" "--np $bad (range)" -- --np "$bad"
done

printf '# only comments\n\n   # and blanks\n' >"$TMP/empty.hosts"
printf 'localhost slots=0\n' >"$TMP/zero.hosts"
printf 'localhost slots=2\n' >"$TMP/two.hosts"
printf 'localhost slots=1 # one\nlocalhost\n' >"$TMP/onetwo.hosts"
printf 'localhost slots=two\n' >"$TMP/word.hosts"
printf 'localhost slots=-4\n' >"$TMP/neg.hosts"
check 3 "lists no slots" "a hostfile with no hosts" -- --hostfile "$TMP/empty.hosts"
check 3 "lists no slots" "a hostfile with slots=0" -- --hostfile "$TMP/zero.hosts"
check 3 "lists no slots" "--np with a hostfile with slots=0" -- --hostfile "$TMP/zero.hosts" --np 2
check 3 "more than the 2 slots" "--np above the hostfile's slots" -- --hostfile "$TMP/two.hosts" --np 3
check 3 "more than the 2 slots" "--np above slots summed over lines" -- --hostfile "$TMP/onetwo.hosts" --np 8
check 3 "'slots=two' is not a slot count" "a slot count that is not a number" -- --hostfile "$TMP/word.hosts"
check 3 "line 1" "a negative slot count names its line" -- --hostfile "$TMP/neg.hosts"
check 2 "option --hostfile" "a missing hostfile is a usage error" -- --hostfile "$TMP/none.hosts"
# Under Slurm, more ranks than the job's tasks (only where srun exists to refuse them).
if command -v srun >/dev/null 2>&1; then
    expect_rc 3 "--np above SLURM_NTASKS" -- env SLURM_JOB_ID=1 SLURM_NTASKS=2 BUILD="$BUILD" "$RA" --quick --no-install --np 4 --out "$TMP/never"
    # Each step runs its srun with Slurm's PMIx fences as rings (docs/run_all.md, "MPI_Init
    # under srun"), unless the user chose the fence.
    expect_rc 0 "--dry-run under Slurm" -- env -u SLURM_PMIX_FENCE SLURM_JOB_ID=1 SLURM_NTASKS=2 BUILD="$BUILD" \
        "$RA" --dry-run --quick --no-install --np 2
    expect_in "$TMP/out" "] coll_sweep: timeout -k 10 90 env SLURM_PMIX_FENCE=ring srun -n 2 " \
        "--dry-run under Slurm: srun runs with SLURM_PMIX_FENCE=ring"
    expect_rc 0 "--dry-run under Slurm, SLURM_PMIX_FENCE=tree" -- env SLURM_PMIX_FENCE=tree SLURM_JOB_ID=1 SLURM_NTASKS=2 \
        BUILD="$BUILD" "$RA" --dry-run --quick --no-install --np 2
    expect_in "$TMP/out" "] coll_sweep: timeout -k 10 90 srun -n 2 " "--dry-run under Slurm: the user's SLURM_PMIX_FENCE is left alone"
    if grep -qF "SLURM_PMIX_FENCE=ring" "$TMP/out"; then fail "--dry-run under Slurm, SLURM_PMIX_FENCE=tree: a step sets ring"; else
        pass "--dry-run under Slurm, SLURM_PMIX_FENCE=tree: no step sets ring"; fi
fi

# The whole run's preconditions, checked before anything is installed, built or run: each
# used to be found only by the steps (every one failing), after the suite, or never.
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
    check 3 "--backend nccl needs a GPU; none is visible" "--backend nccl without a GPU" -- --backend nccl
    [ "$(grep -c . "$TMP/err")" -eq 1 ] && pass "--backend nccl without a GPU: one message" ||
        fail "--backend nccl without a GPU: more than one line on stderr: $(cat "$TMP/err")"
fi
# A GPU listed but binaries that do not link NCCL (a CPU build): refused before any step,
# saying so, whatever the number of GPUs. On PATH, a fake nvidia-smi lists them and a
# fake ldd hides libnccl from the real one's listing, so this runs on any build.
mkdir -p "$TMP/smi"
printf '#!/bin/sh\n/usr/bin/ldd "$@" | grep -v libnccl\n' >"$TMP/smi/ldd"
chmod +x "$TMP/smi/ldd"
for n in 1 2; do
    fake_gpus "$TMP/smi" $n
    expect_rc 3 "--backend nccl, $n GPU(s) listed, no NCCL in the build" -- \
        env PATH="$TMP/smi:$PATH" BUILD="$BUILD" "$RA" --quick --no-install --out "$TMP/never" --backend nccl
    expect_in "$TMP/err" "--backend nccl needs a CUDA build with NCCL" "$n GPU(s) listed, no NCCL: says the build lacks it"
    if [ -e "$TMP/never" ]; then fail "$n GPU(s) listed, no NCCL: a results folder was made"; rm -rf "$TMP/never"; fi
done
mkdir -p "$TMP/ro" "$TMP/adir"
chmod 555 "$TMP/ro"
printf 'busbw_gbps >= 0\n' >"$TMP/rules.txt"
check 2 "option --junit: '$TMP/adir' is a directory" "--junit a directory" -- --acceptance "$TMP/rules.txt" --junit "$TMP/adir"
check 2 "option --junit: '$TMP/nodir/j.xml' cannot be created" "--junit in a missing directory" -- \
    --acceptance "$TMP/rules.txt" --junit "$TMP/nodir/j.xml"
if [ "$(id -u)" -ne 0 ]; then  # root writes anywhere
    check 2 "option --junit" "--junit in a read-only directory" -- --acceptance "$TMP/rules.txt" --junit "$TMP/ro/j.xml"
fi
check 2 "option --hostfile: '$TMP/adir' is not a readable file" "--hostfile a directory" -- --hostfile "$TMP/adir"
check 2 "option --acceptance: '$TMP/adir' is not a readable file" "--acceptance a directory" -- --acceptance "$TMP/adir"
check 2 "option --out: an empty path is not accepted" "--out ''" -- --out ''
check 2 "option --quick: --quick and --full together" "--quick --full" -- --quick --full
check 2 "option --quick: --quick and --full together" "--full --quick" -- --full --quick
mkdir -p "$TMP/oldrun/logs" "$TMP/oldrun2"
: >"$TMP/oldrun/steps.tsv"
echo '{}' >"$TMP/oldrun2/meta.json"
check 2 "option --out: '$TMP/oldrun/logs/new' is inside another run's results folder '$TMP/oldrun'" \
    "--out inside a run (steps.tsv)" -- --out "$TMP/oldrun/logs/new"
check 2 "inside another run's results folder" "--out inside a run (meta.json)" -- --out "$TMP/oldrun2/new"
check 2 "option --out: '$TMP/oldrun' exists and is not empty" "--out an earlier run" -- --out "$TMP/oldrun"
[ -e "$TMP/oldrun/logs/new" ] || [ -e "$TMP/oldrun2/new" ] && fail "--out inside a run: a folder was made"

# --np 1: the single-rank steps run; p2p, the link fit and hybrid are skipped with a reason; exit 0.
RUN=$TMP/one
BUILD=$BUILD timeout 600 "$RA" --quick --quiet --no-install --np 1 --bind none --out "$RUN" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
if [ "$rc" -eq 0 ]; then pass "--np 1 exits 0"; else
    fail "--np 1: exit $rc"; sed 's/^/  | /' "$TMP/stderr" | tail -15 >&2; cat "$RUN/steps.tsv" >&2; fi
for s in p2p_sweep p2p_matrix plan_fit; do
    expect_in "$RUN/steps.tsv" "$s	skipped	-	0	needs at least 2 ranks; this run has 1" "--np 1: $s skipped with its reason"
done
expect_in "$RUN/steps.tsv" "hybrid_3d	skipped" "--np 1: hybrid_3d skipped"
for s in coll_sweep dp_allreduce tp_layer pp_pipeline report; do
    expect_in "$RUN/steps.tsv" "$s	ok	0" "--np 1: $s runs"
done
expect_in "$TMP/stdout" "parabench quick run: 1 ranks" "--np 1: the summary says one rank"
finish
