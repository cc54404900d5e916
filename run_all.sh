#!/usr/bin/env bash
# parabench main job: install what is missing, build, run the whole suite on this
# machine (or a cluster), and write everything under results/<date>-<time>-<host>/.
#
#   ./run_all.sh [--quick|--full] [--np N] [--hostfile FILE] [--ranks-per-node N]
#                [--backend mpi|nccl] [--bind none|core|numa|gpu] [--out DIR]
#                [--acceptance FILE] [--junit FILE] [--no-install] [--quiet] [--dry-run] [--reproduce]
#
#   --quick        a short pass (well under two minutes on a 2-core machine)
#   --full         long sweeps (to 256 MB) and bigger workloads
#   --np N         ranks (default: GPUs when the CUDA build finds devices, else cores, at least 2;
#                  under Slurm the job's tasks; with --hostfile the slots it lists)
#   --bind WHAT    where each rank runs: core (default on CPUs: one core per rank), numa (one NUMA
#                  domain), gpu (default with GPUs: the cores nearest the rank's GPU, via hwloc) or none
#   --acceptance FILE  evaluate thresholds (docs/acceptance.md): PASS/FAIL table, JUnit XML, exit 1 on a miss
#   --junit FILE   where the JUnit XML goes (default: RESULTS/acceptance-junit.xml)
#   --reproduce    also set up the documents' figures (DP 11%, PP 82%, TP bytes, 3D placement) scaled to
#                  the rates this run measured, measure them and write RESULTS/reproduce.csv (docs/reproduce.md)
#   --no-install   never install packages: say what is missing and exit 3 (dependencies found
#                  on PATH, by pkg-config or through MPI_HOME/CUDA_HOME/NCCL_HOME are never reinstalled)
#   --dry-run      print the steps, each one's launch line and an upper bound on its duration
#                  (BUILD/bin/run_estimate, when built), then exit 0: installs, builds and runs nothing
#
# A failing benchmark is recorded and the rest still run. Exit: 0 all passed;
# 1 a benchmark failed or a threshold was missed; 2 usage error or bad
# threshold file; 3 environment (dependencies, output directory); 130 SIGINT,
# 143 SIGTERM: the running step is stopped (its whole process tree) and recorded
# as interrupted, and meta.json and the report are written for what completed.
set -u
# bash drops a SIGINT that reaches it while it waits for a command substitution,
# a pipeline or a process substitution (it takes the child to have handled it),
# so a Ctrl-C between two steps could be lost and the run go on. The run itself
# goes on in a child process; this one only waits, where a trap runs at once,
# and hands SIGINT on as SIGUSR1 (which bash never drops) and SIGTERM as SIGTERM.
if [ -z "${PB_RUN_ALL_CHILD:-}" ]; then
    PB_RUN_ALL_CHILD=1 bash "$0" "$@" <&0 &
    child=$!
    trap 'kill -USR1 "$child" 2>/dev/null' INT
    trap 'kill -TERM "$child" 2>/dev/null' TERM
    while :; do
        wait "$child"
        rc=$?
        kill -0 "$child" 2>/dev/null || exit "$rc"
    done
fi
unset PB_RUN_ALL_CHILD
ROOT=$(cd "$(dirname "$0")" && pwd)
cd "$ROOT" || exit 3

REPRODUCE=0 PROFILE=default NP="" HOSTFILE="" RPN="" BACKEND="" OUT="" QUIET=0 ACCEPT="" JUNIT="" BIND="" INSTALL=1 DRY=0
BUILD=${BUILD:-build}
usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
die_usage() { echo "run_all.sh: option $1: $2" >&2; exit 2; }
need() { [ "$2" -ge 2 ] || die_usage "$1" "needs a value"; }
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) PROFILE=quick ;;
        --full) PROFILE=full ;;
        --np) need "$1" $#; NP=$2; shift
              [[ "$NP" =~ ^[1-9][0-9]*$ ]] || die_usage --np "'$NP' is not a positive integer" ;;
        --hostfile) need "$1" $#; HOSTFILE=$2; shift
              [ -r "$HOSTFILE" ] || die_usage --hostfile "'$HOSTFILE' is not a readable file" ;;
        --ranks-per-node) need "$1" $#; RPN=$2; shift
              [[ "$RPN" =~ ^[1-9][0-9]*$ ]] || die_usage --ranks-per-node "'$RPN' is not a positive integer" ;;
        --backend) need "$1" $#; BACKEND=$2; shift
              [[ "$BACKEND" =~ ^(mpi|nccl)$ ]] || die_usage --backend "'$BACKEND' is not accepted; expected mpi or nccl" ;;
        --bind) need "$1" $#; BIND=$2; shift
              [[ "$BIND" =~ ^(none|core|numa|gpu)$ ]] || die_usage --bind "'$BIND' is not accepted; expected none, core, numa or gpu" ;;
        --out) need "$1" $#; OUT=$2; shift ;;
        --acceptance) need "$1" $#; ACCEPT=$2; shift
              [ -r "$ACCEPT" ] || die_usage --acceptance "'$ACCEPT' is not a readable file" ;;
        --junit) need "$1" $#; JUNIT=$2; shift ;;
        --quiet) QUIET=1 ;;
        --no-install) INSTALL=0 ;;
        --dry-run) DRY=1 ;;
        --reproduce) REPRODUCE=1 ;;
        -h|--help) usage; exit 0 ;;
        *) die_usage "$1" "unknown option; see --help" ;;
    esac
    shift
done
[ -n "$JUNIT" ] && [ -z "$ACCEPT" ] && die_usage --junit "needs --acceptance FILE"

# ---- launch checks: ranks the launcher cannot place would fail every step (exit 1, "wrong
# data"); refuse them here, before anything is installed or built, as an environment error ----
die_env() { echo "run_all.sh: $1" >&2; exit 3; }
# hostfile_slots FILE: the slots it lists (Open MPI's syntax: "host [slots=N] [max_slots=M]",
# one slot when none is given, # comments), or "line N: WHY" for a line mpirun would reject.
hostfile_slots() {
    awk '{ sub(/#.*/, "") } NF == 0 { next }
         { n = 1
           for (i = 2; i <= NF; i++) if ($i ~ /^slots=/) {
               v = substr($i, 7)
               if (v !~ /^[0-9]+$/) { printf "line %d: \047%s\047 is not a slot count", NR, $i; bad = 1; exit }
               n = v + 0 }
           s += n }
         END { if (!bad) print s + 0 }' "$1"
}
if [ -n "$HOSTFILE" ]; then
    SLOTS=$(hostfile_slots "$HOSTFILE")
    [[ "$SLOTS" =~ ^[0-9]+$ ]] || die_env "--hostfile '$HOSTFILE': $SLOTS"
    [ "$SLOTS" -ge 1 ] || die_env "--hostfile '$HOSTFILE' lists no slots (no hosts, or slots=0 on every one): no rank could start"
    [ -n "$NP" ] && [ "$NP" -gt "$SLOTS" ] &&
        die_env "--np $NP is more than the $SLOTS slots '$HOSTFILE' lists: mpirun would refuse every step; use --np $SLOTS or fewer, or add slots"
fi
if [ -n "${SLURM_JOB_ID:-}" ] && [ -n "${SLURM_NTASKS:-}" ] && [ -n "$NP" ] && [ "$NP" -gt "$SLURM_NTASKS" ] &&
    command -v srun >/dev/null 2>&1; then
    die_env "--np $NP is more than this Slurm job's $SLURM_NTASKS tasks: srun would refuse every step; use --np $SLURM_NTASKS or fewer"
fi

say() { [ "$QUIET" = 1 ] || echo "run_all: $*" >&2; }
hms() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

# ---- signals: SIGINT (Ctrl-C) and SIGTERM (Slurm at the time limit) stop the run cleanly ----
# Long commands run in the background and are waited for (run_bg), so that a trap runs at once
# instead of when the command ends. On a signal: stop the running command's whole process tree
# (TERM, then KILL after STOP_GRACE seconds), record the step as interrupted, write meta.json and
# the report for what completed, and exit 128 + the signal's number (130, 143).
CHILD="" STEP_NAME="" STEP_T0=0 OUT_READY=0 BUILD_LOG="" STOP_GRACE=${STOP_GRACE:-5}
[[ "$STOP_GRACE" =~ ^[0-9]{1,4}$ ]] || STOP_GRACE=5
# descendants PID: every process below PID (Linux /proc; the names may hold spaces).
descendants() {
    cat /proc/[0-9]*/stat 2>/dev/null | awk -v root="$1" '{ pid = $1; sub(/.*\) /, ""); parent[pid] = $2 }
        END { q[1] = root; n = 1
              for (i = 1; i <= n; i++) for (p in parent) if (parent[p] == q[i]) { q[++n] = p; print p } }'
}
# stop_tree PID: TERM to PID, its process group when it leads one (timeout makes its own) and
# every descendant found now (a launcher may put ranks in groups of their own); KILL what is
# left after STOP_GRACE seconds; reap PID.
stop_tree() {
    local pid=$1 pids p left pgid
    [ -n "$pid" ] || return 0
    mapfile -t pids < <(echo "$pid"; descendants "$pid")
    pgid=$(awk '{ sub(/.*\) /, ""); print $3 }' "/proc/$pid/stat" 2>/dev/null)
    [ "$pgid" = "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null
    kill -TERM "${pids[@]}" 2>/dev/null
    left=("${pids[@]}")
    for _ in $(seq $((STOP_GRACE * 10))); do
        left=()
        for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && left+=("$p"); done
        [ ${#left[@]} -eq 0 ] && break
        sleep 0.1
    done
    if [ ${#left[@]} -gt 0 ]; then
        [ "$pgid" = "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null
        kill -KILL "${left[@]}" 2>/dev/null
    fi
    wait "$pid" 2>/dev/null
    return 0
}
# run_bg OUTFILE ERRFILE COMMAND...: run it in the background (stdin from /dev/null, stdout and
# stderr to the files; ERRFILE - : with stdout), wait, return its status. The redirections are
# made here, not on the call, so that a trap running during the wait writes to run_all's own.
run_bg() {
    local out=$1 err=$2; shift 2
    if [ "$err" = - ]; then "$@" </dev/null >"$out" 2>&1 &
    else "$@" </dev/null >"$out" 2>"$err" &
    fi
    CHILD=$!
    wait "$CHILD"
    local rc=$?
    CHILD=""
    return $rc
}
on_signal() { # SIGNAL (INT or TERM)
    local sig=$1 code=$((128 + $(kill -l "$1")))
    # A second signal while finishing: stop what runs (the report) and leave at once.
    trap 'stop_tree "$CHILD"; exit '"$code" INT TERM USR1
    echo "run_all.sh: SIG$sig: stopping${STEP_NAME:+ the step $STEP_NAME}" >&2
    stop_tree "$CHILD"; CHILD=""
    if [ "$OUT_READY" != 1 ]; then
        echo "run_all.sh: interrupted by SIG$sig before any step ran" >&2
        exit "$code"
    fi
    local step=$STEP_NAME
    STEP_NAME=""
    [ -n "$step" ] && record "$step" interrupted - $((SECONDS - STEP_T0)) "stopped by SIG$sig"
    write_meta "SIG$sig" "$step"
    [ "$step" = report ] || run_report
    summary
    echo "run_all.sh: interrupted by SIG$sig${step:+ during $step}; what completed is in $OUT (meta.json, report.md)" >&2
    exit "$code"
}
trap 'on_signal INT' INT USR1 # USR1: SIGINT as the supervisor above hands it on
trap 'on_signal TERM' TERM
# The build log waits in /tmp until the results directory exists: never leave it there.
trap '[ -n "$BUILD_LOG" ] && rm -f "$BUILD_LOG"' EXIT

# ---- dependencies and build (--dry-run: neither) ----
BIN=$ROOT/$BUILD/bin
BUILD_FAILED=0
if [ "$DRY" = 0 ]; then
DEPS_ARGS=(--for run)
[ "$INSTALL" = 0 ] && DEPS_ARGS+=(--no-install)
scripts/install-deps.sh "${DEPS_ARGS[@]}" || { echo "run_all.sh: dependencies are missing (above); nothing was run" >&2; exit 3; }
BUILD_LOG=$(mktemp /tmp/parabench-build.XXXXXX)
if ! make -q BUILD="$BUILD" all >/dev/null 2>&1; then
    say "building ($BUILD/)"
    # -k: a benchmark that does not build is reported as such; the others still run.
    if ! run_bg "$BUILD_LOG" - make -k -j"$(nproc)" BUILD="$BUILD" all; then
        BUILD_FAILED=1
        echo "run_all.sh: part of the build failed; see the build log in the results" >&2
        grep -E "error" "$BUILD_LOG" | head -5 >&2
    fi
fi
# A bad threshold file is a usage error: say so before spending time on the suite.
if [ -n "$ACCEPT" ]; then
    [ -x "$BIN/acceptance" ] || { echo "run_all.sh: $BIN/acceptance is not built" >&2; exit 3; }
    "$BIN/acceptance" --check "$ACCEPT" >/dev/null || exit 2
fi
fi

# ---- machine: ranks and launcher (srun under Slurm, else mpirun, optionally with a hostfile) ----
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_base_warn_component_unused=0
CORES=$(nproc)
GPUS=0
if command -v nvidia-smi >/dev/null 2>&1 && ldd "$BIN/coll_sweep" 2>/dev/null | grep -q libnccl; then
    GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi
[ "$BACKEND" = mpi ] && GPUS=0
DEVICE="$CORES cores"
[ "$GPUS" -gt 0 ] && DEVICE="$GPUS GPUs"
if [ -z "$NP" ]; then
    if [ -n "${SLURM_NTASKS:-}" ]; then NP=$SLURM_NTASKS
    elif [ -n "$HOSTFILE" ]; then
        NP=$SLOTS # checked above: at least 1
    elif [ "$GPUS" -gt 0 ]; then NP=$GPUS
    else NP=$CORES; [ "$NP" -ge 2 ] || NP=2
    fi
fi
# Binding, as OSU's and nccl-tests' guides ask: a rank per core on CPUs, near its GPU with GPUs.
[ -z "$BIND" ] && { [ "$GPUS" -gt 0 ] && BIND=gpu || BIND=core; }
[ "$BIND" = gpu ] && [ "$GPUS" -eq 0 ] && die_usage --bind "gpu needs visible GPUs and a CUDA build; expected none, core or numa"
BIND_APPLIED=$BIND BIND_NOTE=""
if [ "$BIND" = core ] && [ -z "$HOSTFILE" ] && [ -z "${SLURM_JOB_ID:-}" ] && [ "$NP" -gt "$CORES" ]; then
    BIND_APPLIED=none BIND_NOTE="$NP ranks on $CORES cores cannot have a core each; ranks run unbound"
fi
WRAP=()
[ "$BIND_APPLIED" = gpu ] && WRAP=("$ROOT/scripts/bind-near-gpu.sh")
if [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then
    case "$BIND_APPLIED" in core) CPU_BIND=cores ;; numa) CPU_BIND=ldoms ;; *) CPU_BIND=none ;; esac
    BIND_ARGS=("--cpu-bind=$CPU_BIND")
    LAUNCH=(srun -n "$NP" ${RPN:+--ntasks-per-node=$RPN} "${BIND_ARGS[@]}")
    # The PMI Open MPI needs, named where the site's MpiDefault may be none (and
    # so recorded in meta.json's launch line); SLURM_MPI_TYPE, when set, wins.
    [ -z "${SLURM_MPI_TYPE:-}" ] && srun --mpi=list 2>&1 | grep -qw pmix && LAUNCH+=(--mpi=pmix)
    LAUNCHER=srun
else
    case "$BIND_APPLIED" in
        core) BIND_ARGS=(--map-by core --bind-to core) ;;
        numa) BIND_ARGS=(--map-by numa --bind-to numa) ;;
        *) BIND_ARGS=(--bind-to none) ;;
    esac
    LAUNCH=(mpirun -np "$NP" "${BIND_ARGS[@]}")
    [ "$NP" -gt "$CORES" ] && [ -z "$HOSTFILE" ] && LAUNCH+=(--oversubscribe)
    [ -n "$HOSTFILE" ] && LAUNCH+=(--hostfile "$HOSTFILE")
    [ -n "$RPN" ] && LAUNCH+=(--npernode "$RPN")
    LAUNCHER=mpirun
fi
LAUNCH+=("${WRAP[@]}")
BACKEND_ARGS=()
[ -n "$BACKEND" ] && BACKEND_ARGS=(--backend "$BACKEND")

# ---- output directory: never overwrite an earlier run ----
if [ -z "$OUT" ]; then
    base="results/$(date +%Y%m%d-%H%M%S)-$(hostname -s)"
    OUT=$base; n=1
    while [ -e "$OUT" ]; do OUT="$base-$n"; n=$((n + 1)); done
elif [ -e "$OUT" ] && [ -n "$(ls -A "$OUT" 2>/dev/null)" ]; then
    die_usage --out "'$OUT' exists and is not empty; results are never overwritten"
fi
if [ "$DRY" = 0 ]; then
mkdir -p "$OUT/logs" || { echo "run_all.sh: cannot create $OUT" >&2; exit 3; }
OUT=$(cd "$OUT" && pwd)
mv "$BUILD_LOG" "$OUT/logs/build.log" && BUILD_LOG=""
: >"$OUT/steps.tsv"
OUT_READY=1
fi

# ---- the suite, per profile (weights: rough seconds here, for the time-left estimate) ----
# The sweeps take OSU's iteration counts per size (many for small messages, fewer for large ones);
# each profile only caps the time a size may take, warm-up included. Arguments are bash arrays,
# never split on spaces, so that paths with spaces (the checkout, --out) pass through whole.
MODEL_GPU=(--model gpt-1.3b --layers 4)
# shellcheck disable=SC2054 # commas separate the values of one option
case "$PROFILE" in
    quick) SWEEP=(-b 8 -e 1M -f 8 --max-seconds-per-size 0.25)
           P2P=(-b 1 -e 1M -f 16 --max-seconds-per-size 0.25)
           MODEL=(--model tiny --layers 2 --hidden 128 --seq 64)
           DP=(--grad-bytes 256K,1M,4M -n 3 -w 1)
           TP=(--hidden-list 64,128,256 --layers 1 --seq 64 -n 3 -w 1)
           PP=(--micro-batches 1,2,4,8 -n 2 -w 1)
           STEP_LIMIT=90 ;;
    full)  SWEEP=(-b 8 -e 256M -f 2 --max-seconds-per-size 20)
           P2P=(-b 1 -e 64M -f 2 --max-seconds-per-size 10)
           MODEL=(--model tiny --layers 8 --hidden 512 --seq 256)
           DP=(--grad-bytes 1M,4M,16M,64M,256M -n 10 -w 2)
           TP=(--hidden-list 256,512,1024,2048 --layers 2 --seq 256 -n 10 -w 2)
           PP=(--micro-batches 1,2,4,8,16,32 -n 5 -w 1)
           STEP_LIMIT=3600 ;;
    *)     SWEEP=(-b 8 -e 64M -f 4 --max-seconds-per-size 3)
           P2P=(-b 1 -e 16M -f 4 --max-seconds-per-size 3)
           MODEL=(--model tiny)
           DP=(--grad-bytes 1M,4M,16M,64M -n 5 -w 1)
           TP=(--hidden-list 128,256,512,1024 --layers 1 --seq 128 -n 5 -w 1)
           PP=(--micro-batches 1,2,4,8,16 -n 3 -w 1)
           STEP_LIMIT=900 ;;
esac
[ "$GPUS" -gt 0 ] && MODEL=("${MODEL_GPU[@]}")
# The all-pairs matrix runs at most NP-1 rounds of 2 sizes: cap each size so the
# whole matrix takes at most half the step limit (1 s a size on small worlds).
MATRIX_CAP=$(awk -v n="$NP" -v lim="$STEP_LIMIT" 'BEGIN { c = lim / 2 / (2 * (n > 1 ? n - 1 : 1))
    if (c > 1) c = 1; if (c < 0.01) c = 0.01; printf "%.3g", c }')
# One pipeline stage per rank: the stages must divide the layers, so round the model's layers up to a multiple of NP.
model_layers=4 # tiny has 4
for ((i = 0; i + 1 < ${#MODEL[@]}; i++)); do [ "${MODEL[i]}" = --layers ] && model_layers=${MODEL[i + 1]}; done
PP_LAYERS=$(( (model_layers + NP - 1) / NP * NP ))
HYBRID=() HYBRID_NOTE=""
if [ $((NP % 4)) -eq 0 ]; then HYBRID=(--tp 2 --pp 2 --dp $((NP / 4)) --compare-placements "${MODEL[@]}" -n 2 -w 1)
else HYBRID_NOTE="needs a world size divisible by 4 (TP 2 x PP 2 x DP n/4); this run has $NP ranks"; fi

# name|binary|weight ('-' binary: a step of this script); step_args gives each step's arguments.
STEPS=(
    "coll_sweep|coll_sweep|30"
    "coll_sweep_intra|coll_sweep|20"
    "p2p_sweep|p2p_sweep|10"
    "p2p_matrix|p2p_sweep|4"
    "dp_allreduce|dp_allreduce|10"
    "tp_layer|tp_layer|8"
    "pp_pipeline|pp_pipeline|10"
    "hybrid_3d|hybrid_3d|8"
    "compute_probe|compute_probe|2"
    "plan_fit|plan|1"
    "calibrate|plan|1"
)
# --reproduce: the documents' figures, each set up from the rates measured above (scripts/reproduce.py).
[ "$REPRODUCE" = 1 ] && STEPS+=("repro_busbw|coll_sweep|6" "repro_setup|-|1" "repro_dp|dp_allreduce|15" "repro_pp|pp_pipeline|10"
                                "repro_tp|tp_layer|4" "repro_write|-|2")
[ -n "$ACCEPT" ] && STEPS+=("acceptance|acceptance|1")
STEPS+=("report|-|5")
# step_args NAME: the step's arguments in the array ARGS, one word per element.
# shellcheck disable=SC2054
step_args() {
    case "$1" in
        coll_sweep)       ARGS=(--coll all "${SWEEP[@]}") ;;
        coll_sweep_intra) ARGS=(--coll all --groups node "${SWEEP[@]}") ;;
        p2p_sweep)        ARGS=(--mode all "${P2P[@]}") ;;
        p2p_matrix)       ARGS=(--matrix --sizes 8,1M --max-seconds-per-size "$MATRIX_CAP" --matrix-csv "$OUT/p2p_matrix") ;;
        dp_allreduce)     ARGS=(--overlap none,bucket "${MODEL[@]}" "${DP[@]}") ;;
        tp_layer)         ARGS=(--tp-comm allreduce,sp "${MODEL[@]}" "${TP[@]}") ;;
        pp_pipeline)      ARGS=(--schedule gpipe,1f1b "${MODEL[@]}" --layers "$PP_LAYERS" "${PP[@]}" --trace "$OUT/pp_trace.csv") ;;
        hybrid_3d)        ARGS=("${HYBRID[@]}") ;;
        plan_fit)         ARGS=(--fit "$OUT" --csv "$OUT/plan_fit.csv") ;;
        compute_probe)    ARGS=(--sizes 256,512,1024 -n 5 --copy-bytes 0 --csv "$OUT/compute_probe.csv") ;;
        calibrate)        ARGS=(--calibrate "$OUT" -o "$OUT/cluster.txt") ;;
        repro_busbw)      ARGS=(--coll allreduce -b 1M -e 64M -f 2 --max-seconds-per-size 0.5) ;; # sizes DP will use
        repro_dp|repro_pp|repro_tp) mapfile -t ARGS <"$OUT/reproduce/$1.args" ;;
        acceptance)       ARGS=(--thresholds "$ACCEPT" --results "$OUT" --junit "${JUNIT:-$OUT/acceptance-junit.xml}") ;;
        *)                ARGS=() ;;
    esac
}
TOTAL_W=0
for s in "${STEPS[@]}"; do IFS='|' read -r _ _ w <<<"$s"; TOTAL_W=$((TOTAL_W + w)); done

# ---- --dry-run: the steps, their launch lines and an upper bound on the time, nothing run ----
# sweep_spec ARGS...: "B,E,F,CAP" from a sweep's -b, -e, -f and --max-seconds-per-size.
sweep_spec() {
    local b="" e="" f="" cap=""
    while [ $# -gt 1 ]; do
        case "$1" in -b) b=$2 ;; -e) e=$2 ;; -f) f=$2 ;; --max-seconds-per-size) cap=$2 ;; esac
        shift
    done
    echo "$b,$e,$f,$cap"
}
dry_run() {
    local k=0 step name bin w nodes rpn
    echo "run_all.sh --dry-run: $PROFILE profile, $NP ranks ($DEVICE), $LAUNCHER, bound to: $BIND_APPLIED; nothing is installed, built or run"
    echo "results would go to $OUT"
    for step in "${STEPS[@]}"; do
        k=$((k + 1))
        IFS='|' read -r name bin w <<<"$step"
        ARGS=()
        # repro_dp/pp/tp take the arguments repro_setup writes from this run's rates
        local later=""
        if [[ "$name" =~ ^repro_(dp|pp|tp)$ ]]; then later="  # + the arguments repro_setup chooses"; else step_args "$name"; fi
        case "$name" in
            repro_setup) bin=- ARGS=(python3 scripts/reproduce.py setup "$OUT" "$NP") ;;
            repro_write) bin=- ARGS=(python3 scripts/reproduce.py write "$OUT" "$BIN") ;;
            report)      ARGS=(python3 scripts/report.py --quiet "$OUT") ;;
        esac
        case "$bin" in
            -) printf '[%d/%d] %s: %s\n' "$k" ${#STEPS[@]} "$name" "$(printf '%q ' "${ARGS[@]}")" ;;
            plan|acceptance|compute_probe) printf '[%d/%d] %s: %s\n' "$k" ${#STEPS[@]} "$name" "$(printf '%q ' "$BIN/$bin" "${ARGS[@]}")" ;;
            *) printf '[%d/%d] %s: %s\n' "$k" ${#STEPS[@]} "$name" "$(printf '%q ' timeout -k 10 "$STEP_LIMIT" "${LAUNCH[@]}" "$BIN/$bin" \
                   "${ARGS[@]}" "${BACKEND_ARGS[@]}" --csv "$OUT/$name.csv" --json "$OUT/$name.json")$later" ;;
        esac
    done
    # Ranks per node: --ranks-per-node, else the hostfile's slots spread over its hosts, else one node.
    rpn=$RPN
    if [ -z "$rpn" ] && [ -n "$HOSTFILE" ]; then
        nodes=$(awk '{ sub(/#.*/, "") } NF { n++ } END { print n + 0 }' "$HOSTFILE")
        rpn=$(( (NP + nodes - 1) / nodes ))
    fi
    [ -z "$rpn" ] || [ "$rpn" -gt "$NP" ] && rpn=$NP
    local est=(--np "$NP" --ranks-per-node "$rpn" --step-limit "$STEP_LIMIT" --sweep "$(sweep_spec "${SWEEP[@]}")"
               --p2p "$(sweep_spec "${P2P[@]}")" --matrix-cap "$MATRIX_CAP")
    [ -n "${HYBRID[*]}" ] && est+=(--hybrid)
    [ -n "$ACCEPT" ] && est+=(--acceptance)
    [ "$REPRODUCE" = 1 ] && est+=(--reproduce)
    echo ""
    if [ -x "$BIN/run_estimate" ]; then "$BIN/run_estimate" "${est[@]}" || return $?
    else echo "no estimate: $BIN/run_estimate is not built (make $BUILD/bin/run_estimate); it would be: run_estimate ${est[*]}"
    fi
}
if [ "$DRY" = 1 ]; then dry_run; exit $?; fi

FAILED=() ACCEPT_FAILED=0 START=$SECONDS DONE_W=0
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" >>"$OUT/steps.tsv"; } # name status rc secs note

# Number of nodes and ranks on rank 0's node, from the metadata of the first sweep.
nodes_of_run() {
    awk -F': *' '/^# nnodes:/ { n = $2 } /^# ranks_per_node:/ { r = $2; gsub(/[^0-9,]/, "", r); split(r, a, ","); r = a[1] }
                 END { print (n ? n : 1), (r ? r : 0) }' "$OUT/coll_sweep.csv" 2>/dev/null || echo "1 0"
}

# write_meta [SIGNAL STEP]: meta.json from steps.tsv and the benchmarks' JSON; after a signal,
# which signal, the step it stopped and the steps that never ran.
write_meta() {
    local planned=() s
    for s in "${STEPS[@]}"; do planned+=("${s%%|*}"); done
    python3 - "$OUT" "$PROFILE" "$LAUNCHER" "$NP" "$DEVICE" "${LAUNCH[*]}" "$BACKEND" "$ACCEPT" "$BIND" "$BIND_APPLIED" \
        "$BIND_NOTE" "${1:-}" "${2:-}" "${planned[@]}" <<'PY'
import glob, json, os, sys, socket, time
out, profile, launcher, np_, device, launch, backend, accept, bind_req, bind, bind_note, signal, sig_step = sys.argv[1:14]
planned = sys.argv[14:]
steps = [dict(zip(("name", "status", "rc", "seconds", "note"), l.rstrip("\n").split("\t")))
         for l in open(os.path.join(out, "steps.tsv")) if l.strip()]
meta = {"profile": profile, "launcher": launcher, "nranks": int(np_), "devices": device, "launch": launch,
        "backend": backend or "default", "host": socket.gethostname(),
        "binding": {"requested": bind_req, "applied": bind, "note": bind_note or None,
                    "per_rank": "meta.binding in each benchmark's JSON (one entry per rank)"}, "acceptance_file": accept or None,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "steps": steps,
        "failed": [s["name"] for s in steps if s["status"] in ("failed", "not built") and s["name"] != "acceptance"],
        "interrupted": signal or None, "benchmarks": {}}
if signal:
    done = {s["name"] for s in steps}
    meta["interrupted_step"] = sig_step or None
    meta["not_run"] = [n for n in planned if n not in done and n != "report"]
for path in sorted(glob.glob(os.path.join(glob.escape(out), "*.json"))):
    if path.endswith("meta.json"):
        continue
    try:
        doc = json.load(open(path))
    except (OSError, ValueError):
        continue
    meta["benchmarks"][os.path.basename(path)[:-5]] = {"complete": doc.get("complete"), "rows": len(doc.get("rows", []))}
    meta.setdefault("machine", doc.get("meta", {}))
tmp = os.path.join(out, ".meta.json.tmp")
json.dump(meta, open(tmp, "w"), indent=2)
os.replace(tmp, os.path.join(out, "meta.json"))
PY
}

run_report() { run_bg "$OUT/logs/report.out" "$OUT/logs/report.err" python3 scripts/report.py --quiet "$OUT"; }

run_step() { # k name binary
    local k=$1 name=$2 bin=$3 t0=$SECONDS launch=("${LAUNCH[@]}") ARGS=()
    local elapsed=$((SECONDS - START)) eta=""
    [ "$DONE_W" -gt 0 ] && [ "$elapsed" -gt 0 ] && eta=", about $(hms $((elapsed * (TOTAL_W - DONE_W) / DONE_W))) left"
    say "[$k/${#STEPS[@]}] $name ($(hms "$elapsed") elapsed$eta)"
    if [ "$name" = coll_sweep_intra ]; then # every node's intra-node sweep at once (--groups node)
        read -r nnodes rpn <<<"$(nodes_of_run)"
        if [ "$nnodes" -le 1 ] || [ "$rpn" -lt 2 ]; then record "$name" skipped - 0 "single-node run: coll_sweep is already intra-node"; return; fi
    fi
    # One rank: what needs a peer (point-to-point, the link fit) is skipped with its reason, the
    # rest runs, as nccl-tests and OSU do with -np 1.
    if [ "$NP" -lt 2 ] && [[ "$name" =~ ^(p2p_sweep|p2p_matrix|plan_fit|calibrate)$ ]]; then
        record "$name" skipped - 0 "needs at least 2 ranks; this run has $NP"; say "  skipped: needs at least 2 ranks"; return
    fi
    if [ "$name" = hybrid_3d ] && [ -n "$HYBRID_NOTE" ]; then
        record "$name" skipped - 0 "$HYBRID_NOTE"; say "  skipped: $HYBRID_NOTE"; return
    fi
    local rc
    STEP_NAME=$name STEP_T0=$t0 # from here a signal records this step as interrupted
    if [[ "$name" =~ ^repro_(dp|pp|tp)$ ]] && [ ! -f "$OUT/reproduce/$name.args" ]; then
        record "$name" skipped - 0 "repro_setup chose no configuration (see logs/repro_setup.err)"; return
    fi
    if [ "$name" = repro_setup ] || [ "$name" = repro_write ]; then # scripts/reproduce.py
        local what=setup arg=$NP
        [ "$name" = repro_write ] && what=write arg=$BIN
        run_bg "$OUT/$name.txt" "$OUT/logs/$name.err" python3 scripts/reproduce.py "$what" "$OUT" "$arg"
        rc=$?
        STEP_NAME=""
        if [ "$rc" -eq 0 ]; then record "$name" ok 0 $((SECONDS - t0)) ""
        else FAILED+=("$name(exit $rc)"); record "$name" failed "$rc" $((SECONDS - t0)) "see logs/$name.err"; fi
        return
    fi
    if [ "$bin" = - ]; then
        run_report
        rc=$?
        STEP_NAME=""
        [ "$rc" -eq 0 ] && record report ok 0 $((SECONDS - t0)) "" || { record report failed "$rc" $((SECONDS - t0)) "see logs/report.err"; FAILED+=("report(exit $rc)"); }
        return
    fi
    if [ ! -x "$BIN/$bin" ]; then
        STEP_NAME=""
        echo "run_all.sh: $name: $BIN/$bin is not built" >"$OUT/logs/$name.err"
        record "$name" "not built" - 0 "$BIN/$bin is missing"; FAILED+=("$name(not built)"); say "  $name: not built"; return
    fi
    step_args "$name"
    # timeout puts itself and the launcher in a process group of their own: a signal's trap stops that.
    case "$bin" in
        plan|acceptance|compute_probe) run_bg "$OUT/$name.txt" "$OUT/logs/$name.err" timeout -k 5 "$STEP_LIMIT" "$BIN/$bin" "${ARGS[@]}" ;;
        *) run_bg "$OUT/$name.txt" "$OUT/logs/$name.err" timeout -k 10 "$STEP_LIMIT" "${launch[@]}" "$BIN/$bin" \
               "${ARGS[@]}" "${BACKEND_ARGS[@]}" --csv "$OUT/$name.csv" --json "$OUT/$name.json" ;;
    esac
    rc=$?
    STEP_NAME=""
    local secs=$((SECONDS - t0)) note=""
    [ "$rc" -eq 124 ] && note="stopped after the step limit of $STEP_LIMIT s"
    if [ "$rc" -eq 0 ]; then record "$name" ok 0 "$secs" ""
    elif [ "$name" = acceptance ] && [ "$rc" -eq 1 ]; then
        ACCEPT_FAILED=1; record "$name" failed 1 "$secs" "thresholds missed"
    else
        FAILED+=("$name(exit $rc)"); record "$name" failed "$rc" "$secs" "${note:-see logs/$name.err}"
        say "  $name failed with exit $rc; see $OUT/logs/$name.err"
    fi
}

# ---- summary (stdout, also with --quiet) ----
summary() {
    echo ""
    echo "parabench $PROFILE run: $NP ranks ($DEVICE), $(hms $((SECONDS - START)))"
    sed 's/^/  /' "$OUT/summary.txt" 2>/dev/null
    [ -n "$ACCEPT" ] && [ -f "$OUT/acceptance.txt" ] && tail -n 1 "$OUT/acceptance.txt" | sed 's/^/  /'
    grep -P '\t(failed|not built|interrupted)\t' "$OUT/steps.tsv" | awk -F'\t' '{ printf "  %s: %s (%s)\n", $1, $2, $5 }'
    echo "  report: $OUT/report.md"
    echo "          $OUT/index.html"
}

say "$PROFILE profile: $NP ranks ($DEVICE), $LAUNCHER, bound to: $BIND_APPLIED, results in $OUT"
[ -n "$BIND_NOTE" ] && say "  binding: $BIND_NOTE"
k=0
for step in "${STEPS[@]}"; do
    k=$((k + 1))
    IFS='|' read -r name bin w <<<"$step"
    [ "$name" = report ] && write_meta
    run_step "$k" "$name" "$bin"
    DONE_W=$((DONE_W + w))
done
trap - INT TERM # every step is recorded and the report written: a signal now just ends the summary
trap 'exit 130' USR1
[ "$BUILD_FAILED" = 1 ] && FAILED+=("build")

summary
rc=0
if [ ${#FAILED[@]} -gt 0 ]; then echo "run_all.sh: failed: ${FAILED[*]}" >&2; rc=1; fi
if [ "$ACCEPT_FAILED" = 1 ]; then echo "run_all.sh: acceptance: FAIL (thresholds missed; see $OUT/acceptance.txt)" >&2; rc=1; fi
exit $rc
