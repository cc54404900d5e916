#!/usr/bin/env bash
# The GPU check: every GPU code path of parabench, once, briefly, on one GPU
# node: the GPU unit tests, the cuBLAS compute probe, coll_sweep and p2p_sweep
# on NCCL, coll_sweep and p2p_sweep on the MPI backend with device buffers,
# dp_allreduce / tp_layer / pp_pipeline / hybrid_3d with the cuBLAS engine,
# with 1 rank and with one rank per GPU (up to 8); then what users run:
# p2p_sweep --matrix on NCCL and run_all.sh --backend nccl --quick (one rank per
# GPU, through scripts/bind-near-gpu.sh), judged. See docs/gpu/README.md.
#
#   bash scripts/gpu-check.sh [--out DIR] [options]
#
# Which node it is on (first match; --launcher forces one):
#   bundle  --bundle DIR given, PB_BUNDLE_DIR set, or the script runs from inside
#           a bundle (DIR/gpu-check.sh next to DIR/env.sh): CUDA and NCCL here,
#           no MPI; runs the binaries and Open MPI that scripts/gpu-bundle.sh
#           packed on a machine with MPI. Nothing is built.
#   slurm   SLURM_JOB_ID set and srun present (inside salloc or an sbatch
#           script): builds here, then launches every step as a job step,
#           srun -N 1 -n R --mpi=TYPE (TYPE: PB_SRUN_MPI, else SLURM_MPI_TYPE,
#           else pmix if srun lists it, else pmi2).
#   mpirun  mpirun on PATH: builds here (make CUDA=1), launches with mpirun.
#   bundle  otherwise, when .gpu-bundle/ lies in the repository.
#
# Options:
#   --out DIR            where the results go (default results/gpu-check-DATE-HOST
#                        in the repository, ./gpu-check-DATE-HOST from a bundle)
#   --bundle DIR         use this bundle (case a)
#   --launcher NAME      mpirun, slurm or bundle instead of detecting
#   --build DIR          build folder (default build-gpu)
#   --no-build           use the binaries already in the build folder
#   --max-ranks N        ranks of the multi-rank steps: min(GPUs, N) (default 8)
#   --budget SECS        all steps together (default 450 on one GPU, so one call
#                        stays under 8 minutes once built; 900 with more); a step that would
#                        start later is skipped and counted as failed
#   --step-timeout SECS  per step (default 180, at least 90: above the benchmarks'
#                        60 s watchdog, so a hang is diagnosed, not killed);
#                        the build has its own (1800)
#   --dry-run            print every step's command line (as PLAN lines) and run
#                        nothing; works without a GPU when nvidia-smi is faked
#   --node               the first node's check: the main steps, then nccl-tests'
#                        all_reduce_perf and sendrecv_perf beside parabench's
#                        coll_sweep allreduce and sendrecv at the same sizes, a
#                        table per size (nccl-tests busbw, parabench busbw,
#                        ratio) in vs-nccl-tests-R.txt, printed and in
#                        gpu-check.md. nccl-tests from NCCL_TESTS_DIR (a built
#                        tree: all_reduce_perf in it or in its build/), else
#                        the bundle's nccl-tests/ (NCCL_TESTS_SRC=TARBALL
#                        scripts/gpu-bundle.sh); without either those steps
#                        are skipped, with the reason
#   --sanitize           the compute-sanitizer phase instead of the main steps:
#                        memcheck, racecheck and synccheck on the GPU unit tests,
#                        memcheck on one small run of each program (a call of
#                        its own: instrumented NCCL kernels are slow)
#   --rehearse           run every step here without a GPU: each GPU step's own
#                        command line with CPU stand-ins (--backend mpi --mem host
#                        for nccl and device memory, --engine blas for cublas, no
#                        -G, no --in-place, no compute-sanitizer prefix), the
#                        same output names, then every judge, the summary,
#                        gpu-check.md and --pack on those files. Sizes are
#                        capped at PB_REHEARSE_CAP bytes (default 1M; GEMM
#                        sides at 256, -n/-w at 2, --model tiny --seq 32; 0:
#                        the real sizes). A GPU figure (busbw against the
#                        model, device time, GEMM rates) is "rehearsed, not
#                        judged" (verdict REH); a missing file, a judge called
#                        wrongly or a figure whose filter matches nothing
#                        fails. It counts the launches (PB_REHEARSE_GPUS: the
#                        GPUs it plays, default 1, an H200). run_all runs
#                        with --backend mpi (and, capped, --steps
#                        coll_sweep,p2p_matrix); nccl-tests is not run (it
#                        needs a GPU): its steps are skipped, with the reason
#   --only LIST          run only these steps (comma-separated names, as in the
#                        summary; a judge needs the steps whose files it reads)
#   --pack DIR           at the end, DIR gets at most 8 files: gpu-check.md,
#                        summary.txt, check.log, vs-nccl-tests-R.txt (--node)
#                        and rest.tar.gz (every other file of the output
#                        folder); DIR outside the output folder
# Environment: PB_MPIRUN_ARGS (extra mpirun arguments), PB_SRUN_ARGS (extra srun
# arguments, e.g. --gpus-per-task=1), PB_SRUN_MPI, PB_CUDA_LIB_DIRS (bundle case:
# colon-separated folders holding libcudart, libcublas, libnccl), NCCL_TESTS_DIR
# (--node).
#
# Writes to the output folder (printed at the start and at the end):
#   summary.txt   one line per step: PASS/FAIL/SKIP/FIND, ranks, seconds, headline
#                 or reason; then the key figures (allreduce busbw at the
#                 largest size against the node's expected figure, GEMM TFLOP/s)
#   gpu-check.md  the same on one page for a bug report: verdict, failures,
#                 findings (a reference or expectation missed: FIND, not a
#                 failure), every step, key figures (scripts/gpu-check-judge.py)
#   check.log     every step's command, output, exit code and duration
#   *.csv, *.json what each benchmark step wrote
# Every step runs under `timeout` (and each benchmark with --timeout), a failed
# step does not stop the others, nothing waits for input.
#
# Exit status:
#   0   every step that can run here passed (steps that cannot run here are
#       skipped, each with its reason)
#   1   a step that should have worked failed, or was skipped for lack of time
#   2   usage error
#   3   environment: no MPI launcher and no bundle, nothing to build with, or
#       no binaries
#   77  skipped: no GPU on this node (nothing was run; every GPU step is listed
#       as needing a GPU)
# shellcheck disable=SC2317,SC2086,SC2046,SC1091  # headlines are called by name; launch prints a command line to split
set -u

SELF_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GC_PY=$SELF_DIR/gpu-check-judge.py   # the judging helpers and the one-page summary (a bundle carries a copy)
ROOT=$(cd "$SELF_DIR/.." && pwd)
BUNDLE="" LAUNCHER="" OUTDIR=${GPU_CHECK_OUT:-} BUILD=build-gpu DO_BUILD=1
MAX_RANKS=8 BUDGET='' STEP_TO=180 BUILD_TO=1800 DRY=0 REHEARSE=0 SANITIZE=0 NODE=0 PACK="" ONLY=""
LD_LIBRARY_PATH_AT_START=${LD_LIBRARY_PATH-}   # before a bundle's env.sh: PyTorch brings its own cuBLAS
# Every benchmark runs with --timeout $WD_S (its hang watchdog). A step is
# killed only WD_MARGIN_S later, so a hang is reported by the watchdog (what,
# where, which rank) instead of showing up as a bare "killed".
WD_S=60 WD_MARGIN_S=30

usage() { sed -n '2,/^# shellcheck/p' "${BASH_SOURCE[0]}" | sed -e '/^# shellcheck/d' -e 's/^# \{0,1\}//'; }
die_usage() { echo "gpu-check.sh: $*" >&2; echo "run with --help for the options" >&2; exit 2; }
is_uint() { case "$1" in ''|*[!0-9]*) return 1 ;; esac; }

while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || die_usage "--out needs a folder"; OUTDIR=$2; shift 2 ;;
    --bundle) [ $# -ge 2 ] || die_usage "--bundle needs a folder"; BUNDLE=$2; shift 2 ;;
    --launcher) [ $# -ge 2 ] || die_usage "--launcher needs mpirun, slurm or bundle"; LAUNCHER=$2; shift 2
                case "$LAUNCHER" in mpirun|slurm|bundle) ;; *) die_usage "--launcher: '$LAUNCHER' is not mpirun, slurm or bundle" ;; esac ;;
    --build) [ $# -ge 2 ] || die_usage "--build needs a folder"; BUILD=$2; shift 2 ;;
    --no-build) DO_BUILD=0; shift ;;
    --dry-run) DRY=1; shift ;;
    --rehearse) REHEARSE=1; shift ;;
    --sanitize) SANITIZE=1; shift ;;
    --node) NODE=1; shift ;;
    --only) [ $# -ge 2 ] || die_usage "--only needs step names"; ONLY=$2; shift 2 ;;
    --pack) [ $# -ge 2 ] || die_usage "--pack needs a folder"; PACK=$2; shift 2 ;;
    --max-ranks) { is_uint "${2:-}" && [ "$2" -ge 1 ]; } || die_usage "--max-ranks needs a positive integer"; MAX_RANKS=$2; shift 2 ;;
    --budget) is_uint "${2:-}" || die_usage "--budget needs seconds"; BUDGET=$2; shift 2 ;;
    --step-timeout) { is_uint "${2:-}" && [ "$2" -ge $((WD_S + WD_MARGIN_S)) ]; } || die_usage "--step-timeout needs $((WD_S + WD_MARGIN_S)) seconds or more (the benchmarks' watchdog is $WD_S s)"; STEP_TO=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) die_usage "unknown option '$1'" ;;
  esac
done

[ "$NODE" = 1 ] && [ "$SANITIZE" = 1 ] && die_usage "--node and --sanitize together: the sanitizer phase is a call of its own"

# ---------------------------------------------------------------- which case
[ -z "$BUNDLE" ] && [ -n "${PB_BUNDLE_DIR:-}" ] && BUNDLE=$PB_BUNDLE_DIR
[ -z "$BUNDLE" ] && [ -f "$SELF_DIR/env.sh" ] && BUNDLE=$SELF_DIR   # run from inside a bundle
IN_REPO=0; [ -f "$ROOT/Makefile" ] && [ -d "$ROOT/common" ] && IN_REPO=1
if [ -z "$LAUNCHER" ]; then
  if [ -n "$BUNDLE" ]; then LAUNCHER=bundle
  elif [ -n "${SLURM_JOB_ID:-}" ] && command -v srun >/dev/null 2>&1; then LAUNCHER=slurm
  elif command -v mpirun >/dev/null 2>&1; then LAUNCHER=mpirun
  elif [ -f "$ROOT/.gpu-bundle/env.sh" ]; then LAUNCHER=bundle; BUNDLE=$ROOT/.gpu-bundle
  fi
fi
[ "$LAUNCHER" = bundle ] && [ -z "$BUNDLE" ] && BUNDLE=$ROOT/.gpu-bundle
[ -n "$BUNDLE" ] && BUNDLE=$(cd "$BUNDLE" 2>/dev/null && pwd || echo "$BUNDLE")

HOST=$(hostname 2>/dev/null || echo "${HOSTNAME:-unknown}")
HOST=${HOST%%.*}
STAMP=$(date -u +%Y%m%d-%H%M%S)
if [ -z "$OUTDIR" ]; then
  if [ "$IN_REPO" = 1 ] && [ "$LAUNCHER" != bundle ]; then OUTDIR=$ROOT/results/gpu-check-$STAMP-$HOST
  else OUTDIR=$PWD/gpu-check-$STAMP-$HOST; fi
fi
mkdir -p "$OUTDIR" || { echo "gpu-check.sh: cannot create $OUTDIR" >&2; exit 3; }
OUTDIR=$(cd "$OUTDIR" && pwd)
if [ -n "$PACK" ]; then
  PACK=$(realpath -m "$PACK")
  case "$PACK/" in "$OUTDIR"/*) die_usage "--pack: $PACK lies in the output folder $OUTDIR: give a folder outside it" ;; esac
fi
LOG=$OUTDIR/check.log
SUM=$OUTDIR/summary.txt
: > "$LOG"
: > "$SUM"
START=$SECONDS BUDGET_T0=$SECONDS
NPASS=0 NFAIL=0 NSKIP=0 NFIND=0 NREH=0
NLAUNCH=0 NSINGLE=0 STEPS_S=0   # launches through mpirun/srun, single processes, seconds in steps
KEYFILE=$OUTDIR/.keys
: > "$KEYFILE"
NOMATCH=$OUTDIR/.nomatch   # csvagg's filters that matched no row (a failure under --rehearse)
: > "$NOMATCH"
REH_TOTAL=""; [ "$REHEARSE" = 1 ] && REH_TOTAL=1
key() { printf '%s\n' "$*" >> "$KEYFILE"; }   # headlines run in a subshell: key figures go through a file

log() { printf '%s\n' "$*" >> "$LOG"; }
say() { printf 'gpu-check: %s\n' "$*"; printf '%s\n' "$*" >> "$LOG"; }
sum() { printf '%s\n' "$*" >> "$SUM"; printf '%s\n' "$*"; }
line() { sum "$(printf '%-4s  %-22s %5s %7s  %s' "$1" "$2" "$3" "$4" "$5")"; }

finish() {
  local rc=$1
  {
    echo "#"
    if [ -s "$KEYFILE" ]; then echo "# key figures"; sed 's/^/#   /' "$KEYFILE"; echo "#"; fi
    [ $((NLAUNCH + NSINGLE)) -gt 0 ] && echo "# launches: $NLAUNCH through mpirun/srun, $NSINGLE single processes; $STEPS_S s in steps"
    echo "# total: $NPASS passed, $NFAIL failed, $NSKIP skipped, $NFIND findings${REH_TOTAL:+, $NREH rehearsed} in $((SECONDS - START)) s; exit $rc"
  } >> "$SUM"
  say "done: $NPASS passed, $NFAIL failed, $NSKIP skipped, $NFIND findings${REH_TOTAL:+, $NREH rehearsed} in $((SECONDS - START)) s; exit $rc"
  rm -f "$KEYFILE" "$NOMATCH"
  say "summary: $SUM"
  if command -v python3 >/dev/null 2>&1 && [ -f "$GC_PY" ]; then
    python3 "$GC_PY" summary "$OUTDIR" >/dev/null 2>>"$LOG" && say "one page: $OUTDIR/gpu-check.md"
  else
    say "no python3 (or no $GC_PY): gpu-check.md not written; summary.txt has the same"
  fi
  [ -n "$PACK" ] && { pack "$PACK" || rc=1; }
  exit "$rc"
}
# pack DIR: what comes back from a machine that returns few files: the three
# pages as they are, every other file of the output folder in rest.tar.gz.
pack() {
  local dir=$1 f
  mkdir -p "$dir" || { echo "gpu-check.sh: --pack: cannot create $dir" >&2; return 1; }
  for f in gpu-check.md summary.txt check.log; do [ -f "$OUTDIR/$f" ] && cp "$OUTDIR/$f" "$dir/"; done
  for f in "$OUTDIR"/vs-nccl-tests-*.txt; do [ -f "$f" ] && cp "$f" "$dir/"; done   # --node's table, also in rest.tar.gz
  tar -C "$OUTDIR" -czf "$dir/rest.tar.gz" --exclude=./gpu-check.md --exclude=./summary.txt --exclude=./check.log . \
    || { echo "gpu-check.sh: --pack: tar failed" >&2; return 1; }
  say "packed into $dir: $(find "$dir" -maxdepth 1 -type f | wc -l) files (rest.tar.gz: $(tar -tzf "$dir/rest.tar.gz" | grep -vc '/$') files)"
}

say "output folder: $OUTDIR"
sum "# parabench GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $HOST"
log "repository: $ROOT ($(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo 'not a git checkout'))"
log "os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"), kernel $(uname -r); $(ldd --version 2>/dev/null | head -1)"
log "cpus: $(nproc 2>/dev/null); LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-<unset>}; CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
[ -n "${SLURM_JOB_ID:-}" ] && log "slurm: job $SLURM_JOB_ID, nodes ${SLURM_JOB_NUM_NODES:-?}, tasks ${SLURM_NTASKS:-?}, tasks per node ${SLURM_NTASKS_PER_NODE:-?}, step ${SLURM_STEP_ID:-none}"

# ---------------------------------------------------------------- GPUs
# Counted before anything is built or launched: without a GPU, stop here (77).
NGPU=0 GPU_NAME="" GPU_WHY=""
if [ "$REHEARSE" = 1 ]; then   # the node the check is written for: one H200 (141 GiB)
  NGPU=${PB_REHEARSE_GPUS:-1} GPU_NAME="NVIDIA H200"
  is_uint "$NGPU" && [ "$NGPU" -ge 1 ] || die_usage "PB_REHEARSE_GPUS needs a positive integer"
elif command -v nvidia-smi >/dev/null 2>&1; then
  smi=$(timeout 30 nvidia-smi -L 2>&1); src=$?
  log "nvidia-smi -L (exit $src):"; log "$smi"
  NGPU=$(printf '%s\n' "$smi" | grep -c '^GPU [0-9]')
  GPU_NAME=$(printf '%s\n' "$smi" | sed -n 's/^GPU 0: \(.*\) (UUID.*/\1/p' | head -1)
  [ "$NGPU" = 0 ] && GPU_WHY="nvidia-smi lists no GPU (exit $src: $(printf '%s' "$smi" | head -1 | cut -c1-120))"
else
  NGPU=$(find /dev -maxdepth 1 -name 'nvidia[0-9]*' 2>/dev/null | wc -l)
  [ "$NGPU" = 0 ] && GPU_WHY="no nvidia-smi and no /dev/nvidia<N> device"
fi
if [ "$REHEARSE" = 0 ] && [ "$NGPU" -gt 0 ] && [ "${CUDA_VISIBLE_DEVICES+set}" = set ]; then
  case "$CUDA_VISIBLE_DEVICES" in
    ""|-1|NoDevFiles*) NGPU=0; GPU_WHY="CUDA_VISIBLE_DEVICES='$CUDA_VISIBLE_DEVICES' hides every GPU" ;;
    *) nv=$(printf '%s\n' "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .); [ "$nv" -lt "$NGPU" ] && NGPU=$nv ;;
  esac
fi
NO_GPU=0
if [ "$NGPU" = 0 ]; then
  NO_GPU=1
  line SKIP all - - "no GPU on this node: $GPU_WHY"
fi
# Free memory of GPU 0 in MiB (the >2^31-element step needs room for it).
GPU_FREE_MIB=0
if [ "$REHEARSE" = 1 ]; then GPU_FREE_MIB=140000
elif [ "$NO_GPU" = 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
  GPU_FREE_MIB=$(timeout 30 nvidia-smi --query-gpu=memory.free --format=csv,noheader,nounits -i 0 2>/dev/null | head -1 | tr -dc 0-9)
  [ -n "$GPU_FREE_MIB" ] || GPU_FREE_MIB=0
fi

# Ranks of the multi-rank steps: one per GPU, at most --max-ranks and, under
# Slurm, at most the job's tasks on this node.
NP=$NGPU
[ "$NP" -lt 1 ] && NP=1
[ "$NP" -gt "$MAX_RANKS" ] && NP=$MAX_RANKS
NP_WHY="one per GPU"
if [ -z "$BUDGET" ]; then BUDGET=450; [ "$NGPU" -ge 2 ] && BUDGET=900; fi
if [ "$LAUNCHER" = slurm ]; then
  st=${SLURM_NTASKS_PER_NODE:-${SLURM_NTASKS:-}}; st=${st%%(*}
  if is_uint "$st" && [ "$st" -lt "$NP" ]; then NP=$st; NP_WHY="the job's $st tasks per node"; fi
fi

# ---------------------------------------------------------------- steps
# step NAME RANKS TIMEOUT HEADLINE_FN -- CMD...: runs CMD (in $OUTDIR) under
# timeout; PASS when it exits 0 and HEADLINE_FN (given the output file) does not
# print "FAIL: reason".
step() {
  local name=$1 np=$2 to=$3 hfn=$4; shift 5
  [ -n "$ONLY" ] && case ",$ONLY," in *",$name,"*) ;; *) return ;; esac
  if [ "$DRY" = 1 ]; then line PLAN "$name" "$np" - "$*"; return; fi
  if [ "$NO_GPU" = 1 ]; then skip "$name" "$np" "needs a GPU: none here, nothing run"; return; fi
  local left=$((BUDGET - (SECONDS - BUDGET_T0)))
  [ -n "${NO_BUDGET:-}" ] && left=$to
  if [ "$left" -lt $((WD_S + WD_MARGIN_S)) ]; then   # less would kill a hang before its watchdog reports it
    line FAIL "$name" "$np" - "not run: the time budget of $BUDGET s is spent (--budget)"; NFAIL=$((NFAIL + 1)); return
  fi
  [ "$to" -gt "$left" ] && to=$left
  local out=$OUTDIR/.$name.out t0=$SECONDS rc head verdict
  log ""; log "=== $name, $np rank(s), timeout $to s, at +$((SECONDS - START)) s"; log "\$ $*"
  if [ "$REHEARSE" = 1 ]; then mapfile -t STEP_CMD < <(standin "$@"); log "rehearsed as: \$ ${STEP_CMD[*]}"
  else STEP_CMD=("$@"); fi
  case "${STEP_CMD[0]}" in mpirun|srun) NLAUNCH=$((NLAUNCH + 1)) ;; *) NSINGLE=$((NSINGLE + 1)) ;; esac
  ( cd "$OUTDIR" && timeout -k 10 "$to" "${STEP_CMD[@]}" < /dev/null ) > "$out" 2>&1
  rc=$?
  cat "$out" >> "$LOG"
  STEPS_S=$((STEPS_S + SECONDS - t0))
  log "--- $name: exit $rc ($(meaning $rc)), $((SECONDS - t0)) s"
  if [ "$rc" = 77 ]; then   # the step says it cannot run here (e.g. no PyTorch)
    skip "$name" "$np" "$(h_info "$out")"; rm -f "$out"; return
  fi
  if [ "$rc" = 0 ]; then
    verdict=PASS head=""
    [ "$hfn" != - ] && head=$("$hfn" "$out" "$name" 2>/dev/null)
    case "$head" in FAIL:*) verdict=FAIL head=${head#FAIL: } ;; FINDING:*) verdict=FIND head=${head#FINDING: } ;;
      REHEARSED:*) verdict=REH head="rehearsed, not judged: ${head#REHEARSED: }" ;; esac
  else
    verdict=FAIL head="exit $rc ($(meaning $rc)): $(reason_of "$out")"
    # JUDGE_ALWAYS=1 step ...: the headline reads what a failed step wrote too (run_all's steps)
    [ -n "${JUDGE_ALWAYS:-}" ] && [ "$hfn" != - ] && head="$head; $("$hfn" "$out" "$name" 2>/dev/null | sed 's/^[A-Z]*: //')"
  fi
  if [ -s "$NOMATCH" ]; then   # a figure of the headline read nothing: a wrong column, filter or file name
    log "filters that matched no row: $(tr '\n' ';' < "$NOMATCH")"
    [ "$REHEARSE" = 1 ] && [ "$verdict" != FAIL ] && verdict=FAIL head="a filter matched no row: $(head -1 "$NOMATCH")"
    : > "$NOMATCH"
  fi
  case "$verdict" in PASS) NPASS=$((NPASS + 1)) ;; FIND) NFIND=$((NFIND + 1)) ;; REH) NREH=$((NREH + 1)) ;; *) NFAIL=$((NFAIL + 1)) ;; esac
  line "$verdict" "$name" "$np" "$((SECONDS - t0))s" "$head"
  rm -f "$out"
}
skip() { line SKIP "$1" "$2" - "$3"; log ""; log "=== $1: skipped: $3"; NSKIP=$((NSKIP + 1)); }
# skip_gpu NAME RANKS REASON: a step this node cannot run; under --dry-run or
# without a GPU it is listed like every other step.
skip_gpu() { [ -n "$ONLY" ] && case ",$ONLY," in *",$1,"*) ;; *) return ;; esac; if [ "$DRY" = 1 ]; then line PLAN "$1" "$2" - "not run here: $3"; elif [ "$NO_GPU" = 1 ]; then skip "$1" "$2" "needs a GPU: none here, nothing run"; else skip "$@"; fi; }
fail() { line FAIL "$1" "$2" - "$3"; log ""; log "=== $1: FAILED: $3"; NFAIL=$((NFAIL + 1)); }

meaning() {
  case "$1" in
    0) echo ok ;; 1) echo "wrong data or check failed" ;; 2) echo "usage error" ;;
    3) echo "environment: GPU, library, memory or ranks" ;; 4) echo "benchmark timeout" ;;
    124|137) echo "killed: step timeout" ;; 126|127) echo "cannot execute" ;; *) echo "exit $1" ;;
  esac
}
reason_of() {   # the program's own message, a loader error, or the last line
  local r
  r=$(grep -m1 -E 'error while loading shared libraries|cannot open shared object|version .GLIBC|not found \(required by' "$1")
  [ -n "$r" ] && { echo "library: ${r:0:180}"; return; }
  r=$(grep -m1 -E '^(coll_sweep|p2p_sweep|dp_allreduce|tp_layer|pp_pipeline|hybrid_3d|compute_probe|make|run_all\.sh: failed)[^ ]*: ' "$1" | grep -v ': warning')
  [ -z "$r" ] && r=$(grep -m1 -iE 'error|NCCL WARN' "$1")
  [ -z "$r" ] && r=$(grep -v '^[-[:space:]]*$' "$1" | tail -1)
  echo "${r:0:200}"
}

# csvagg FILE COLUMN max|min|sum|last [COL=VAL ...]: one column of a parabench
# CSV ('#' lines skipped; the first other line is the header). A whole number
# (a size, a count) prints in full, so that it can filter another call; other
# values to 4 significant digits.
csvagg() {
  local r
  r=$(csvopt "$@")
  [ "$r" = n/a ] && echo "csvagg $(basename "$1") $2 $3 ${*:4}" >> "$NOMATCH"
  echo "$r"
}
# csvopt: csvagg for a figure that may be absent (n/a is an answer, not a mistake)
csvopt() {
  local f=$1 col=$2 agg=$3; shift 3
  [ -f "$f" ] || { echo n/a; return; }
  awk -F, -v col="$col" -v agg="$agg" -v filt="$*" '
    /^#/ { next }
    !hdr {   # a column or filter key the header lacks reads n/a, never 0
      for (i = 1; i <= NF; i++) idx[$i] = i
      hdr = 1; nf = split(filt, fl, " "); bad = !(col in idx)
      for (j = 1; j <= nf; j++) { split(fl[j], kv, "="); if (!(kv[1] in idx)) bad = 1 }
      if (bad) exit
      next
    }
    {
      for (j = 1; j <= nf; j++) { split(fl[j], kv, "="); if ($(idx[kv[1]]) != kv[2]) next }
      if ($(idx[col]) == "") next
      v = $(idx[col]) + 0; n++
      if (agg == "sum") r += v
      else if (agg == "last") r = v
      else if (n == 1 || (agg == "max" && v > r) || (agg == "min" && v < r)) r = v
    }
    END { if (!hdr || bad || n == 0) print "n/a"; else if (r == int(r)) printf "%.0f\n", r; else printf "%.4g\n", r }' "$f"
}
wrong_fail() {  # prints "FAIL: ..." when FILE is missing or has a nonzero wrong column
  [ -f "$1" ] || { echo "FAIL: no $(basename "$1") written"; return; }
  local w; w=$(csvagg "$1" wrong sum)
  [ "$w" = 0 ] || echo "FAIL: $w wrong values in $(basename "$1")"
}

# ---------------------------------------------------------------- headlines
# gpu_verdict NOTE HEADLINE: NOTE is a GPU-only check that failed ("" when it
# passed): FAIL on a GPU; under --rehearse the headline, marked REHEARSED.
gpu_verdict() {
  if [ -z "$1" ]; then echo "$2"
  elif [ "$REHEARSE" = 1 ]; then echo "REHEARSED: $1; $2"
  else echo "FAIL: $1"; fi
}
# arg_of OPTION: its value in the step's command line as run (after --rehearse's caps)
arg_of() { local i; for ((i = 0; i + 1 < ${#STEP_CMD[@]}; i++)); do [ "${STEP_CMD[i]}" = "$1" ] && { echo "${STEP_CMD[i + 1]}"; return; }; done; }
bytes_of() {   # 256M -> 268435456 (K, M, G: powers of 1024, as the benchmarks read them)
  case "$1" in *K) echo $((${1%K} << 10)) ;; *M) echo $((${1%M} << 20)) ;; *G) echo $((${1%G} << 30)) ;; *) echo "$1" ;; esac
}
h_info() { grep -v '^[[:space:]]*$' "$1" | tail -1 | cut -c1-150; }
h_build() { echo "make CUDA=1 BUILD=$BUILD: $(find "$BIN" -maxdepth 1 -type f -perm -u+x 2>/dev/null | wc -l) binaries"; }
h_unit() {   # the GPU cases must have run; on a GPU no case skips (the no-GPU cases check the GPU side there)
  local t missing="" found=0 skipped n
  grep -q '^\[  FAILED  \]' "$1" && { echo "FAIL: $(grep -m1 '^\[  FAILED  \]' "$1")"; return; }
  skipped=$(sed -n 's/^\[  SKIPPED \] \([A-Za-z0-9_]*\)$/\1/p' "$1" | sort -u | tr '\n' ' ')
  for t in $UNIT_GPU_CASES; do
    grep -q "^\[ RUN      \] $t\$" "$1" || continue
    found=$((found + 1))
    grep -q "^\[       OK \] $t\$" "$1" || missing="$missing $t"
  done
  [ "$found" = 0 ] && { echo "FAIL: no GPU case in this test binary (a CPU-only build?)"; return; }
  t=$(grep -m1 -E '^SKIP' "$1" | cut -c1-100)
  n="$(grep -c '^\[       OK \]' "$1") cases passed"
  [ -n "$missing" ] && { gpu_verdict "GPU cases did not run (skipped: does the test see the GPU?):$missing${t:+; $t}" "$n"; return; }
  [ -n "$skipped" ] && { gpu_verdict "cases skipped on a GPU node: $skipped${t:+; $t}" "$n"; return; }
  echo "$n, GPU cases included, none skipped"
}
h_probe() {
  local c=$OUTDIR/$2.csv g cp
  [ -f "$c" ] || { echo "FAIL: no $2.csv"; return; }
  g=$(csvagg "$c" rate max test=gemm); cp=$(csvopt "$c" rate max test=copy)
  [ "$g" = n/a ] && { echo "FAIL: no GEMM row"; return; }
  key "$2 ($ENGINE_NAME): GEMM $(awk -v g="$g" 'BEGIN { printf "%.1f", g / 1000 }') TFLOP/s (best of sizes up to $(csvagg "$c" size max test=gemm))"
  echo "GEMM $(awk -v g="$g" 'BEGIN { printf "%.1f", g / 1000 }') TFLOP/s peak$([ "$cp" != n/a ] && echo ", device copy $cp GB/s")"
}
h_coll() {   # allreduce busbw at the largest size; on NCCL the CUDA-event device time must be there
  local c=$OUTDIR/$2.csv f big bw peak dev t n=${2##*-} gpu=""
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  big=$(csvagg "$c" bytes max collective=allreduce)
  [ "$big" = n/a ] && { echo "FAIL: no allreduce row in $2.csv"; return; }
  bw=$(csvagg "$c" busbw_GBps max collective=allreduce bytes="$big")
  peak=$(csvagg "$c" busbw_GBps max)
  case "$2" in *nccl*|devtime*)
    dev=$(csvopt "$c" time_us_device max)
    [ "$dev" = n/a ] && gpu="no CUDA-event device time (time_us_device) on NCCL" ;;
  esac
  if [ "$n" = 1 ]; then
    # One rank crosses no link: allreduce's busbw is 0 by definition, and any
    # other bandwidth would time a local copy, or nothing at all in place (the
    # peak over the collectives was tens of TB/s on one GPU). Only the time is kept.
    t=$(csvagg "$c" time_us max collective=allreduce bytes="$big")
    key "$2: 1 rank, no link crossed: allreduce of $big B in $t us (no bandwidth: nothing moves between GPUs)"
    gpu_verdict "$gpu" "1 rank: allreduce of $big B in $t us, no link crossed; 0 wrong"
    return
  fi
  key "$2: allreduce busbw $bw GB/s at $big B; peak busbw over all collectives $peak GB/s"
  gpu_verdict "$gpu" "allreduce busbw $bw GB/s at $big B, peak busbw $peak GB/s; 0 wrong"
}
h_devtime() {   # h_coll, and the sweep reached its -e: the judge compares the largest size
  local c=$OUTDIR/$2.csv e big
  e=$(bytes_of "$(arg_of -e)")
  big=$(csvagg "$c" bytes max collective=allreduce)
  [ "$big" = "$e" ] || { echo "FAIL: the sweep stopped at $big B, below its -e $e B (-b times a power of -f must reach -e)"; return; }
  h_coll "$@"
}
h_p2p() {
  local c=$OUTDIR/$2.csv f
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  key "$2: bw $(csvagg "$c" bw_GBps max mode=bw) GB/s, latency $(csvagg "$c" time_us min mode=latency) us"
  echo "latency $(csvagg "$c" time_us min mode=latency) us, bw $(csvagg "$c" bw_GBps max mode=bw) GB/s, bibw $(csvagg "$c" bw_GBps max mode=bibw) GB/s; 0 wrong"
}
h_dp() {
  local c=$OUTDIR/$2.csv f
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  local gpu=""
  case "$2" in *nccl*) grep -q '^# ordering stream' "$1" || gpu="NCCL + cuBLAS did not run in stream ordering: $(grep -m1 '^# ordering' "$1" | cut -c1-80)" ;; esac
  gpu_verdict "$gpu" "step $(csvagg "$c" step_us min) us, $(csvagg "$c" gflops max) GFLOP/s, overhead $(csvagg "$c" overhead max); $(grep -m1 -o '^# ordering [a-z]*' "$1" | cut -c3-); 0 wrong"
}
h_tp() {
  local c=$OUTDIR/$2.csv f
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  echo "step $(csvagg "$c" step_us min) us, $(csvagg "$c" gflops max) GFLOP/s, comm fraction $(csvagg "$c" comm_fraction max), max rel err $(csvagg "$c" max_rel_err max); 0 wrong"
}
h_pp() {
  local c=$OUTDIR/$2.csv f
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  echo "step $(csvagg "$c" step_us min) us, 1f1b efficiency $(csvagg "$c" efficiency max schedule=1f1b) (theory $(csvagg "$c" efficiency_theory max schedule=1f1b)); 0 wrong"
}
h_hy() {
  local c=$OUTDIR/$2.csv f
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  echo "step $(csvagg "$c" step_us min) us, tp $(csvagg "$c" tp_comm_us min) us, pp wait $(csvagg "$c" pp_wait_us min) us, dp $(csvagg "$c" dp_comm_us min) us; 0 wrong"
}
h_matrix() {   # every pair measured (or the pairs the matrix sampled, said in its CSV), 0 wrong; a slow pair is a finding
  local c=$OUTDIR/$2.csv p=$OUTDIR/$2-pairs.csv f n=${2##*-} got want slow text mem
  f=$(wrong_fail "$c"); [ -n "$f" ] && { echo "$f"; return; }
  [ -f "$p" ] || { echo "FAIL: no $2-pairs.csv written"; return; }
  got=$(grep -c '^[0-9]' "$p") want=$((n * (n - 1) / 2))
  if grep -q '^# matrix_pairs: sampled' "$c"; then   # above 64 ranks: the pairs it says it measured
    want=$(sed -n 's/^# matrix_pairs_measured: *//p' "$c")
    [ "$got" = "$want" ] || { echo "FAIL: $got pairs in $2-pairs.csv, the sampled matrix says ${want:-none} measured"; return; }
  fi
  [ "$got" -lt "$want" ] && { echo "FAIL: $got of the $want pairs of $n ranks measured"; return; }
  slow=$(csvagg "$p" slow sum)
  mem=$(sed -n 's/^# matrix_nccl_bytes_expected: *//p' "$c")
  text="$got pairs: latency $(csvagg "$p" latency_us min)-$(csvagg "$p" latency_us max) us, bw $(csvagg "$p" bw_GBps min)-$(csvagg "$p" bw_GBps max) GB/s, $slow slow${mem:+, NCCL connections expected $((mem >> 20)) MiB a rank}; 0 wrong"
  key "$2: $text"
  if [ "$slow" != 0 ]; then
    if [ "$REHEARSE" = 1 ]; then echo "REHEARSED: $text"; else echo "FINDING: $text (slow pairs: $(grep -m3 '^# note: SLOW' "$c" | cut -c9- | tr '\n' ';'))"; fi
  else echo "$text"; fi
}
h_runall() {   # run_all's own record: its steps, its headline, the backend and the binding it ran with (gpu-check-judge.py run-all)
  local d=$OUTDIR/$2 h
  [ -n "$PY" ] || { echo "run_all exited 0 (no python3 here to read $2/)"; return; }
  h=$("$PY" "$GC_PY" run-all "$d" nccl 2>&1 | tail -1)
  [ -s "$d/summary.txt" ] && key "$2: $(head -1 "$d/summary.txt")"
  echo "$h"
}
h_nccltests() {   # nccl-tests prints its table on stdout: kept as NAME.txt, read by gpu-check-judge.py
  cp "$1" "$OUTDIR/$2.txt"
  [ -n "$PY" ] || { echo "nccl-tests exited 0 (no python3 here to read $2.txt)"; return; }
  local h; h=$("$PY" "$GC_PY" nccl-tests "$OUTDIR/$2.txt" 2>&1 | tail -1)
  case "$h" in FAIL:*) ;; *) key "$2: $h" ;; esac
  echo "$h"
}
h_san() {   # exit 0 under --error-exitcode 1 means no error; a nonzero count in a summary line is one anyway
  local bad n
  bad=$(grep -m1 -E '(ERROR SUMMARY: [1-9][0-9]* error|SUMMARY: .*\([1-9][0-9]* error)' "$1")
  [ -n "$bad" ] && { echo "FAIL: ${bad#========= }"; return; }
  n=$(grep -c -E 'ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY' "$1")
  gpu_verdict "$([ "$n" = 0 ] && echo "no sanitizer summary in the output")" "0 errors ($n sanitizer summaries)"
}
h_host() { local f; f=$(wrong_fail "$OUTDIR/$2.csv"); [ -n "$f" ] && { echo "$f"; return; }; echo "MPI works: allreduce busbw $(csvagg "$OUTDIR/$2.csv" busbw_GBps max) GB/s (host memory)"; }

# ---------------------------------------------------------------- launchers
[ "$(id -u)" = 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
SRUN_MPI="" SRUN_OVERLAP=""
case "$LAUNCHER" in
  slurm)
    SRUN_MPI=${PB_SRUN_MPI:-${SLURM_MPI_TYPE:-}}
    if [ -z "$SRUN_MPI" ]; then
      if timeout 20 srun --mpi=list 2>&1 | grep -q pmix; then SRUN_MPI=pmix; else SRUN_MPI=pmi2; fi
    fi
    # Started inside a job step (srun ... bash gpu-check.sh): the steps must share its resources.
    if [ -n "${SLURM_STEP_ID:-}" ] && timeout 20 srun --help 2>&1 | grep -q -- '--overlap'; then SRUN_OVERLAP=--overlap; fi ;;
esac
# launch NP CMD...: the command line that starts NP ranks of CMD on this node
launch() {
  local np=$1; shift
  case "$LAUNCHER" in
    slurm)  # shellcheck disable=SC2086
            echo srun -N 1 -n "$np" --ntasks-per-node="$np" --mpi="$SRUN_MPI" $SRUN_OVERLAP ${PB_SRUN_ARGS:-} "$@" ;;
    mpirun) # shellcheck disable=SC2086
            echo mpirun -np "$np" --bind-to none ${PB_MPIRUN_ARGS:-} "$@" ;;
    bundle) # shellcheck disable=SC2086
            echo mpirun -np "$np" ${PB_MPIRUN_ARGS:-} "$@" ;;
  esac
}
# run1 CMD...: one process without MPI (under Slurm, a one-task job step, so it gets the job's GPUs)
run1() { if [ "$LAUNCHER" = slurm ]; then launch 1 "$@"; else echo "$@"; fi; }

# ---------------------------------------------------------------- --rehearse
# standin CMD...: a GPU step's command line with CPU stand-ins (one word a
# line): NCCL -> MPI on host memory, device memory -> host, cuBLAS -> BLAS,
# no CUDA graph, no --in-place, no compute-sanitizer in front; with REH_CAP > 0
# bytes, sizes capped at REH_CAP, GEMM sides at REH_GEMM, iterations (-n, -w)
# at REH_ITERS, the model at tiny.
REH_CAP=$(bytes_of "${PB_REHEARSE_CAP:-1M}") REH_GEMM=256 REH_ITERS=2
is_uint "$REH_CAP" || die_usage "PB_REHEARSE_CAP needs bytes (e.g. 1M, or 0 for the real sizes)"
cap_list() {   # cap_list LIMIT LIST: each size of a comma list at most LIMIT, repeats dropped
  local lim=$1 v out="" IFS=,
  for v in $2; do
    [ "$lim" -gt 0 ] && [ "$(bytes_of "$v")" -gt "$lim" ] && v=$lim
    case ",$out," in *",$v,"*) ;; *) out=${out:+$out,}$v ;; esac
  done
  echo "$out"
}
standin() {
  local a prog=""
  while [ $# -gt 0 ]; do
    a=$1; shift
    case "$a" in
      compute-sanitizer|*/compute-sanitizer) while [ $# -ge 2 ]; do case "$1" in --*) shift 2 ;; *) break ;; esac; done; continue ;;
      --backend) [ "$1" = nccl ] && { if [ "$prog" = run_all ]; then printf '%s\n' --backend mpi; else printf '%s\n' --backend mpi --mem host; fi
                                      shift; continue; } ;;
      --mem) [ "$1" = device ] && { printf '%s\n' --mem host; shift; continue; } ;;
      --engine) [ "$1" = cublas ] && { printf '%s\n' --engine blas; shift; continue; } ;;
      -G|--in-place) continue ;;   # no CUDA graph on MPI; MPI's host buffers cannot alias
      -n|-w) [ -n "$prog" ] && [ "$REH_CAP" -gt 0 ] && { printf '%s\n' "$a" "$(( $1 < REH_ITERS ? $1 : REH_ITERS ))"; shift; continue; } ;;
      -e|--copy-bytes|--grad-bytes) printf '%s\n' "$a" "$(cap_list "$REH_CAP" "$1")"; shift; continue ;;
      --sizes) if [ "$prog" = compute_probe ] && [ "$REH_CAP" -gt 0 ]; then printf '%s\n' "$a" "$(cap_list "$REH_GEMM" "$1")"
               else printf '%s\n' "$a" "$(cap_list "$REH_CAP" "$1")"; fi; shift; continue ;;
      --model) [ "$REH_CAP" -gt 0 ] && { printf '%s\n' --model tiny --seq 32; shift; continue; } ;;
      --seq-list) [ "$REH_CAP" -gt 0 ] && { printf '%s\n' --seq-list 32; shift; continue; } ;;
      torch-ref) [ "$REH_CAP" -gt 0 ] && { printf '%s\n' "$a" "$1" "$(cap_list "$REH_GEMM" "$2")"; shift 2; continue; } ;;
    esac
    case "${a##*/}" in coll_sweep|p2p_sweep|compute_probe|dp_allreduce|tp_layer|pp_pipeline|hybrid_3d) prog=${a##*/} ;;
      run_all.sh|parabench-run-all) prog=run_all ;; esac
    printf '%s\n' "$a"
  done
  # run_all's whole quick profile takes minutes on a loaded CPU: capped, its first sweep and the matrix
  [ "$prog" = run_all ] && [ "$REH_CAP" -gt 0 ] && printf '%s\n' --steps coll_sweep,p2p_matrix
  return 0
}
ENGINE_NAME=cuBLAS
[ "$REHEARSE" = 1 ] && { ENGINE_NAME="BLAS stand-in"; export PB_REHEARSE=1; }

# ---------------------------------------------------------------- the steps
# run_steps: every step, in order. Defined before the environment is set up so
# that --dry-run and a node without a GPU list the same steps (PLAN / SKIP
# lines) without building or running anything.
UNIT_GPU_CASES="test_gpu_gemm test_gpu_gemm_batched test_gpu_elementwise test_gpu_convert_fill device_path_matches_host_path"
TO=$STEP_TO
RUNALL_TO=420   # run_all --quick: about ten steps, each under its own 90 s limit
Q="--timeout $WD_S --max-seconds-per-size 10"   # no operation hangs, no size runs long
M="--model gpt-1.3b"
SM="--model tiny -n 1 -w 0 $Q"                  # one small run under compute-sanitizer
R=$NP; [ "$R" -lt 2 ] && R=2   # MPI on device buffers: several ranks may share one GPU
PY=""; command -v python3 >/dev/null 2>&1 && [ -f "$GC_PY" ] && PY=python3
SAN=$(command -v compute-sanitizer 2>/dev/null || true)
for d in "${CUDA_HOME:-/usr/local/cuda}" /usr/local/cuda; do
  [ -z "$SAN" ] && [ -x "$d/bin/compute-sanitizer" ] && SAN=$d/bin/compute-sanitizer
done
# One operation above 2^31 elements: bf16 allreduce of 2^31 + 2^20 elements
# (4 GiB + 2 MiB), send and receive buffers plus 4 GiB for NCCL and the check.
BIG_COUNT=$(( (1 << 31) + (1 << 20) )); BIG_BYTES=$((BIG_COUNT * 2)); BIG_NEED_MIB=$((2 * BIG_BYTES / 1048576 + 4096))

# py_step NAME RANKS ARGS...: a judgement of earlier steps' files by gpu-check-judge.py
py_step() {
  local name=$1 np=$2; shift 2
  if [ -n "$PY" ]; then step "$name" "$np" "$TO" h_info -- "$PY" "$GC_PY" "$@"
  else skip_gpu "$name" "$np" "no python3: not judged (the CSV files are there)"; fi
}

run_steps() { if [ "$SANITIZE" = 1 ]; then sanitize_steps; else main_steps; [ "$NODE" = 1 ] && node_steps; fi; return 0; }
main_steps() {
# shellcheck disable=SC2046  # launch prints a command line to split
{
step mpi-host "$R" "$TO" h_host -- $(launch "$R" coll_sweep --backend mpi --mem host --sizes 1K,1M -n 5 -w 1 $Q --csv mpi-host.csv)

step unit-gpu 1 "$TO" h_unit -- $(run1 test_gpu_nogpu)
step unit-coll-check 1 "$TO" h_unit -- $(run1 test_coll_check)
step probe-bf16 1 "$TO" h_probe -- $(run1 compute_probe --engine cublas -d bfloat16 --sizes 2048,4096,8192 -n 10 --copy-bytes 1G --warmup-ms 500 --csv probe-bf16.csv)
step probe-fp32 1 "$TO" h_probe -- $(run1 compute_probe --engine cublas -d float --sizes 2048,8192 -n 5 --copy-bytes 0 --warmup-ms 500 --csv probe-fp32.csv)
# Same-machine reference: PyTorch's cuBLAS GEMM rate and copy bandwidth (exit 77: no PyTorch, skipped)
if [ -n "$PY" ]; then
  # without a bundle's LD_LIBRARY_PATH: PyTorch would load the toolkit's cuBLAS there instead of its own
  TORCH_ENV="env -u LD_LIBRARY_PATH"; [ -n "$LD_LIBRARY_PATH_AT_START" ] && TORCH_ENV="env LD_LIBRARY_PATH=$LD_LIBRARY_PATH_AT_START"
  step torch-ref 1 "$TO" h_info -- $(run1 $TORCH_ENV "$PY" "$GC_PY" torch-ref torch-ref.csv 8192)
  { [ -f "$OUTDIR/torch-ref.csv" ] || [ "$DRY" = 1 ]; } && py_step probe-vs-torch 1 vs-torch torch-ref.csv probe-bf16.csv probe-fp32.csv
else
  skip_gpu torch-ref 1 "no python3: no PyTorch reference"
fi

# NCCL: 1 rank, then one rank per GPU
step coll-nccl-1 1 "$TO" h_coll -- $(launch 1 coll_sweep --backend nccl --coll all -b 8 -e 256M -f 4 -n 20 -w 5 $Q --csv coll-nccl-1.csv --json coll-nccl-1.json)
step coll-nccl-graph-1 1 "$TO" h_coll -- $(launch 1 coll_sweep --backend nccl -G --coll allreduce,allgather -b 8 -e 64M -f 8 -n 20 -w 5 $Q --csv coll-nccl-graph-1.csv)
# devtime: the batch (default) against one event pair per operation (the old measure)
# (16 x 16^6 = 256 MiB: the largest size, where both must agree, is 256 MiB itself)
step devtime-pair-1 1 "$TO" h_devtime -- $(launch 1 env PARABENCH_DEVTIME_BATCH=1 coll_sweep --backend nccl --coll allreduce -b 16 -e 256M -f 16 -n 50 -w 5 $Q --csv devtime-pair-1.csv)
step devtime-batch-1 1 "$TO" h_devtime -- $(launch 1 coll_sweep --backend nccl --coll allreduce -b 16 -e 256M -f 16 -n 50 -w 5 $Q --csv devtime-batch-1.csv)
py_step devtime-vs-pair 1 devtime devtime-batch-1.csv devtime-pair-1.csv
# bf16, half and int32 through NCCL, out of place and in place, validated
for d in bfloat16 half int32; do
  for ip in "" --in-place; do
    step "nccl-$d${ip:+-inplace}-$NP" "$NP" "$TO" h_coll -- $(launch "$NP" coll_sweep --backend nccl --coll allreduce,allgather,reducescatter,broadcast,reduce -d "$d" $ip -b 8 -e 16M -f 1024 -n 3 -w 1 -c 1 $Q --csv "nccl-$d${ip:+-inplace}-$NP.csv")
  done
done
if [ "$GPU_FREE_MIB" -ge "$BIG_NEED_MIB" ]; then
  step nccl-2g-elements-1 1 "$TO" h_coll -- $(launch 1 coll_sweep --backend nccl --coll allreduce -d bfloat16 --sizes "$BIG_BYTES" -n 2 -w 1 -c 1 --timeout $WD_S --csv nccl-2g-elements-1.csv)
else
  skip_gpu nccl-2g-elements-1 1 "an allreduce of $BIG_COUNT bf16 elements needs $BIG_NEED_MIB MiB free on GPU 0; it has $GPU_FREE_MIB MiB"
fi
if [ "$NP" -ge 2 ]; then
  step coll-nccl-$NP "$NP" "$TO" h_coll -- $(launch "$NP" coll_sweep --backend nccl --coll all -b 8 -e 512M -f 4 -n 20 -w 5 $Q --csv coll-nccl-$NP.csv --json coll-nccl-$NP.json)
  py_step busbw-vs-expected "$NP" busbw coll-nccl-$NP.csv "${GPU_NAME:-unknown}" "$NP"
  step p2p-nccl-$NP "$NP" "$TO" h_p2p -- $(launch "$NP" p2p_sweep --backend nccl --mode all -b 8 -e 64M -f 4 -n 20 -w 5 --window 16 $Q --csv p2p-nccl-$NP.csv --json p2p-nccl-$NP.json)
else
  skip_gpu coll-nccl-N 1 "one GPU: the 1-rank NCCL steps cover it (NCCL refuses two ranks on one GPU)"
  skip_gpu p2p-nccl 1 "one GPU: p2p_sweep needs two ranks and NCCL refuses two ranks on one GPU (p2p-mpidev covers the path)"
fi

# MPI on device buffers (staged through pinned host memory)
step coll-mpidev-1 1 "$TO" h_coll -- $(launch 1 coll_sweep --backend mpi --mem device --coll all -b 8 -e 64M -f 8 -n 10 -w 2 $Q --csv coll-mpidev-1.csv)
step coll-mpidev-$R "$R" "$TO" h_coll -- $(launch "$R" coll_sweep --backend mpi --mem device --coll all -b 8 -e 64M -f 8 -n 10 -w 2 $Q --csv coll-mpidev-$R.csv --json coll-mpidev-$R.json)
step p2p-mpidev-2 2 "$TO" h_p2p -- $(launch 2 p2p_sweep --backend mpi --mem device --mode all -b 8 -e 16M -f 4 -n 10 -w 2 --window 16 $Q --csv p2p-mpidev-2.csv)

# Workloads with the cuBLAS engine: NCCL (stream ordering) at 1 and NP ranks, MPI device buffers (host ordering)
T=1; for t in 2 4 8; do [ $((NP % t)) = 0 ] && [ "$t" -le "$NP" ] && T=$t; done   # gpt-1.3b: 16 heads
NS=1; [ "$NP" -ge 2 ] && NS="1 $NP"
for n in $NS; do
  tpn=1; [ "$n" = "$NP" ] && tpn=$T
  step dp-nccl-$n "$n" "$TO" h_dp -- $(launch "$n" dp_allreduce --backend nccl --engine cublas $M --layers 2 --grad-bytes 256M --overlap none,bucket -n 5 -w 2 $Q --csv dp-nccl-$n.csv --json dp-nccl-$n.json)
  step tp-nccl-$n "$n" "$TO" h_tp -- $(launch "$n" tp_layer --backend nccl --engine cublas --tp "$tpn" $M -n 5 -w 2 $Q --csv tp-nccl-$n.csv --json tp-nccl-$n.json)
  [ "$n" = 1 ] && py_step tp-vs-gemm-rate 1 tp-vs-gemm tp-nccl-1.csv probe-bf16.csv probe-fp32.csv   # bf16 on cuBLAS by default
  step pp-nccl-$n "$n" "$TO" h_pp -- $(launch "$n" pp_pipeline --backend nccl --engine cublas --stages "$n" --layers $((2 * n)) --micro-batches 4 $M -n 3 -w 1 $Q --csv pp-nccl-$n.csv --json pp-nccl-$n.json)
done
# The model a user trains, at its real size on one GPU: one Llama-3-8B layer (grouped-query
# attention, SwiGLU, bf16) at its 8192 tokens, its compute against the bf16 GEMM rate.
step model-tp-1 1 "$TO" h_tp -- $(launch 1 tp_layer --backend nccl --engine cublas --tp 1 --model llama3-8b --layers 1 --seq-list 8192 -n 5 -w 2 $Q --csv model-tp-1.csv --json model-tp-1.json)
py_step model-tp-vs-gemm-rate 1 tp-vs-gemm model-tp-1.csv probe-bf16.csv probe-fp32.csv
if [ "$NP" -ge 2 ] && [ $((NP % 2)) = 0 ]; then
  step hybrid-nccl-$NP "$NP" "$TO" h_hy -- $(launch "$NP" hybrid_3d --backend nccl --engine cublas --tp 2 --pp $((NP / 2)) $M --layers "$NP" -n 3 -w 1 $Q --csv hybrid-nccl-$NP.csv --json hybrid-nccl-$NP.json)
else
  skip_gpu hybrid-nccl "$NP" "needs an even number of GPUs for a TP x PP grid"
fi
step dp-mpidev-$R "$R" "$TO" h_dp -- $(launch "$R" dp_allreduce --backend mpi --mem device --engine cublas $M --layers 2 --grad-bytes 256M --overlap none,bucket -n 3 -w 1 $Q --csv dp-mpidev-$R.csv)
step tp-mpidev-2 2 "$TO" h_tp -- $(launch 2 tp_layer --backend mpi --mem device --engine cublas --tp 2 $M -n 3 -w 1 $Q --csv tp-mpidev-2.csv)
step pp-mpidev-2 2 "$TO" h_pp -- $(launch 2 pp_pipeline --backend mpi --mem device --engine cublas --stages 2 --layers 4 --micro-batches 4 $M -n 3 -w 1 $Q --csv pp-mpidev-2.csv)

# What users run: the all-pairs matrix on NCCL (a lazy connection to every peer), and run_all itself
if [ "$NP" -ge 2 ]; then
  step p2p-matrix-nccl-$NP "$NP" "$TO" h_matrix -- $(launch "$NP" p2p_sweep --backend nccl --matrix --sizes 8,64M -n 20 -w 5 --window 16 $Q --matrix-csv p2p-matrix-nccl-$NP --csv p2p-matrix-nccl-$NP.csv)
else
  skip_gpu p2p-matrix-nccl 1 "one GPU: the matrix needs two ranks and NCCL refuses two ranks on one GPU"
fi
run_all_step
}
}

# build_in_root: the build folder as run_all.sh takes it (BUILD=, relative to the checkout it works in)
build_in_root() {
  local b; case "$BUILD" in /*) b=$BUILD ;; *) b=$ROOT/$BUILD ;; esac
  b=$(realpath -m "$b"); case "$b" in "$ROOT"/*) echo "${b#"$ROOT"/}" ;; *) echo "$b" ;; esac
}
# run_all.sh --backend nccl --quick as a user runs it: one rank per GPU (its default), each bound
# near its GPU by scripts/bind-near-gpu.sh (its default with GPUs), judged by its own record. From
# a bundle, its installed copy (libexec/parabench: builds and installs nothing, runs the bundle's
# binaries); in a checkout, the checkout's, on the build made above (--no-install).
run_all_step() {
  local cmd
  if [ "$LAUNCHER" = bundle ]; then
    if [ "$DRY" = 0 ] && [ "$NO_GPU" = 0 ] && [ ! -f "$BUNDLE/libexec/parabench/run_all.sh" ]; then
      skip_gpu run-all-nccl-$NP "$NP" "this bundle has no installed parabench (libexec/parabench/run_all.sh): make it again with scripts/gpu-bundle.sh"
      return
    fi
    cmd=("$BUNDLE/libexec/parabench/run_all.sh")
  else
    cmd=(env "BUILD=$(build_in_root)" "$ROOT/run_all.sh" --no-install)
  fi
  JUDGE_ALWAYS=1 step run-all-nccl-$NP "$NP" "$RUNALL_TO" h_runall -- "${cmd[@]}" --backend nccl --quick --np "$NP" --out "$OUTDIR/run-all-nccl-$NP"
}

# --node: nccl-tests' all_reduce_perf and sendrecv_perf beside coll_sweep's allreduce and sendrecv
# (nccl-tests' definitions) at the same sizes, iterations and ranks; the table per size.
NT_ARGS="-b 8 -e 512M -f 4 -n 20 -w 5"
nt_mpi() {   # nt_mpi BINARY: built with MPI=1 (it links libmpi); the bundle's, still packed, is (gpu-bundle.sh)
  if [ -f "$1" ]; then grep -qa 'libmpi\.so' "$1"; else [ -f "$1.xz" ]; fi
}
nt_launch() {   # nt_launch BINARY NP ARGS...: MPI=1, a process per GPU under the launcher; MPI=0, one process drives NP GPUs
  local bin=$1 np=$2; shift 2
  if nt_mpi "$bin"; then launch "$np" "$bin" -g 1 "$@"; else run1 "$bin" -g "$np" "$@"; fi
}
node_steps() {
# shellcheck disable=SC2046  # launch prints a command line to split
{
local nt_dir="" why="" t coll d have=()
if [ -n "${NCCL_TESTS_DIR:-}" ]; then
  for d in "$NCCL_TESTS_DIR/build" "$NCCL_TESTS_DIR"; do [ -e "$d/all_reduce_perf" ] && { nt_dir=$d; break; }; done
  why="NCCL_TESTS_DIR=$NCCL_TESTS_DIR holds no all_reduce_perf (in it or in its build/)"
elif [ -n "$BUNDLE" ] && { [ -e "$BUNDLE/nccl-tests/all_reduce_perf" ] || [ -e "$BUNDLE/nccl-tests/all_reduce_perf.xz" ]; }; then
  nt_dir=$BUNDLE/nccl-tests
else
  why="no nccl-tests: set NCCL_TESTS_DIR to a built nccl-tests tree, or make the bundle with NCCL_TESTS_SRC=nccl-tests.tar.gz scripts/gpu-bundle.sh"
fi
step pb-nccltests-$NP "$NP" "$TO" h_coll -- $(launch "$NP" coll_sweep --backend nccl --coll allreduce,sendrecv $NT_ARGS $Q --csv pb-nccltests-$NP.csv)
for t in all_reduce:allreduce sendrecv:sendrecv; do
  coll=${t#*:}
  if [ "$REHEARSE" = 1 ]; then
    skip_gpu nccltests-$coll-$NP "$NP" "rehearsal: nccl-tests needs a GPU and NCCL, not run here (its output and the table are tested on recorded outputs: test_nccl_tests_table.sh)"
  elif [ -z "$nt_dir" ]; then
    skip_gpu nccltests-$coll-$NP "$NP" "$why"
  else
    step nccltests-$coll-$NP "$NP" "$TO" h_nccltests -- $(nt_launch "$nt_dir/${t%%:*}_perf" "$NP" $NT_ARGS -c 1)
  fi
  [ -f "$OUTDIR/nccltests-$coll-$NP.txt" ] && have+=("$coll=nccltests-$coll-$NP.txt")
done
if [ "$DRY" = 1 ] || [ "$NO_GPU" = 1 ]; then
  py_step vs-nccl-tests-$NP "$NP" vs-nccl-tests pb-nccltests-$NP.csv vs-nccl-tests-$NP.txt allreduce=nccltests-allreduce-$NP.txt sendrecv=nccltests-sendrecv-$NP.txt
elif [ ${#have[@]} = 0 ]; then
  skip_gpu vs-nccl-tests-$NP "$NP" "no nccl-tests output to compare with: its steps did not run (above)"
else
  py_step vs-nccl-tests-$NP "$NP" vs-nccl-tests pb-nccltests-$NP.csv vs-nccl-tests-$NP.txt "${have[@]}"
  [ -f "$OUTDIR/vs-nccl-tests-$NP.txt" ] && cat "$OUTDIR/vs-nccl-tests-$NP.txt"
fi
}
}

# compute-sanitizer: the three tools on the GPU unit tests, memcheck on one small
# run of each program. A phase of its own (--sanitize): every instrumented NCCL
# kernel is slow, and the main steps fill one call's time.
sanitize_steps() {
# shellcheck disable=SC2046  # launch prints a command line to split
{
if [ -n "$SAN" ] || [ "$DRY" = 1 ] || [ "$NO_GPU" = 1 ] || [ "$REHEARSE" = 1 ]; then
  S="${SAN:-compute-sanitizer} --error-exitcode 1 --tool"
  # NCCL probes the CUDA API and handles the errors it gets back; memcheck would count them
  SNCCL="${SAN:-compute-sanitizer} --error-exitcode 1 --report-api-errors no --tool"
  at() { command -v "$1" 2>/dev/null || echo "$1"; }   # the sanitizer gets the program's path, not a PATH lookup
  for tool in memcheck racecheck synccheck; do
    step san-$tool-unit 1 "$TO" h_san -- $(run1 $S $tool "$(at test_gpu_nogpu)")
  done
  step san-memcheck-coll 1 "$TO" h_san -- $(launch 1 $SNCCL memcheck "$(at coll_sweep)" --backend nccl --coll all -b 8 -e 1M -f 32 -n 2 -w 1 $Q)
  step san-memcheck-p2p 2 "$TO" h_san -- $(launch 2 $S memcheck "$(at p2p_sweep)" --backend mpi --mem device --mode all -b 8 -e 64K -f 64 -n 2 -w 1 --window 4 $Q)
  step san-memcheck-probe 1 "$TO" h_san -- $(run1 $S memcheck "$(at compute_probe)" --engine cublas --sizes 256 -n 2 --copy-bytes 1M)
  step san-memcheck-dp 1 "$TO" h_san -- $(launch 1 $SNCCL memcheck "$(at dp_allreduce)" --backend nccl --engine cublas --layers 1 --grad-bytes 1M $SM)
  step san-memcheck-tp 1 "$TO" h_san -- $(launch 1 $SNCCL memcheck "$(at tp_layer)" --backend nccl --engine cublas --tp 1 $SM)
  step san-memcheck-pp 1 "$TO" h_san -- $(launch 1 $SNCCL memcheck "$(at pp_pipeline)" --backend nccl --engine cublas --stages 1 --layers 1 --micro-batches 2 $SM)
  step san-memcheck-hybrid 1 "$TO" h_san -- $(launch 1 $SNCCL memcheck "$(at hybrid_3d)" --backend nccl --engine cublas --tp 1 --pp 1 --layers 1 $SM)
else
  skip_gpu sanitizer 1 "no compute-sanitizer on PATH or in \$CUDA_HOME/bin: memcheck, racecheck and synccheck not run"
fi
}
}

gpu_lines() {
  if [ "$REHEARSE" = 1 ]; then
    sum "# rehearsal: no GPU used; every GPU step ran its own command line with CPU stand-ins (--backend mpi --mem host, --engine blas, no -G, no --in-place, no compute-sanitizer), the same output names and judges"
    if [ "$REH_CAP" -gt 0 ]; then sum "# rehearsal sizes: capped at PB_REHEARSE_CAP=${PB_REHEARSE_CAP:-1M} ($REH_CAP bytes), GEMM sides at $REH_GEMM, -n and -w at $REH_ITERS, --model tiny --seq 32 (PB_REHEARSE_CAP=0: the real sizes)"
    else sum "# rehearsal sizes: the real ones (PB_REHEARSE_CAP=0)"; fi
  fi
  if [ "$SANITIZE" = 1 ]; then sum "# phase: compute-sanitizer (--sanitize)"
  elif [ "$NODE" = 1 ]; then sum "# phase: main steps, then nccl-tests beside parabench per size (--node; compute-sanitizer is a call of its own: --sanitize)"
  else sum "# phase: main steps (compute-sanitizer is a call of its own: --sanitize)"; fi
  sum "# GPUs: $NGPU visible (${GPU_NAME:-name unknown}); multi-rank steps: $NP ranks ($NP_WHY); budget $BUDGET s"
  [ -n "$PY" ] && [ "$NGPU" -gt 0 ] && sum "# expected: $("$PY" "$GC_PY" expected "${GPU_NAME:-unknown}")"
  return 0
}
# Without a GPU, or with --dry-run: list every step, run none.
if [ "$NO_GPU" = 1 ] || [ "$DRY" = 1 ]; then
  [ "$DRY" = 1 ] && sum "# dry run: the steps and their command lines; nothing is built or run"
  gpu_lines
  sum "# verdict step              ranks    time  headline or reason"
  run_steps
  if [ "$NO_GPU" = 1 ]; then
    say "no GPU on $HOST ($GPU_WHY): nothing run; every GPU step needs one; exit 77 (skipped)"
    finish 77
  fi
  finish 0
fi

# ---------------------------------------------------------------- environment, build
case "$LAUNCHER" in
  "")
    line SKIP all - - "no mpirun, no srun under Slurm, and no bundle (--bundle DIR): nothing can launch the ranks"
    say "no MPI launcher and no bundle: install MPI, run under Slurm, or carry a bundle from scripts/gpu-bundle.sh (docs/gpu/README.md)"
    finish 3 ;;
  bundle)
    if [ ! -f "$BUNDLE/env.sh" ]; then
      line SKIP all - - "no bundle at $BUNDLE (no env.sh): make one with scripts/gpu-bundle.sh"
      finish 3
    fi
    chmod -R u+rwX "$BUNDLE" 2>/dev/null
    chmod +x "$BUNDLE"/bin/* "$BUNDLE"/tests/* "$BUNDLE"/ompi/bin/* "$BUNDLE"/nccl-tests/* \
             "$BUNDLE"/libexec/parabench/run_all.sh "$BUNDLE"/libexec/parabench/scripts/*.sh 2>/dev/null
    BIN=$BUNDLE/bin TESTS=$BUNDLE/tests
    log "bundle: $BUNDLE; $(sed -n '2,4p' "$BUNDLE/MANIFEST" 2>/dev/null | tr -s ' \n' ' ')" ;;
  *)
    [ "$IN_REPO" = 1 ] || [ "$DO_BUILD" = 0 ] || { line SKIP all - - "not in a parabench checkout: cannot build (use --bundle)"; finish 3; }
    case "$BUILD" in /*) BUILD_ABS=$BUILD ;; *) BUILD_ABS=$ROOT/$BUILD ;; esac
    BIN=$BUILD_ABS/bin TESTS=$BUILD_ABS/tests ;;
esac
CASE_TEXT=$(case "$LAUNCHER" in
  bundle) echo "(a) CUDA and NCCL, MPI from the bundle $BUNDLE" ;;
  mpirun) echo "(b) MPI, CUDA and NCCL on the node: $(command -v mpirun)" ;;
  slurm)  echo "(c) Slurm job ${SLURM_JOB_ID:-?}: job steps through srun --mpi=$SRUN_MPI${SRUN_OVERLAP:+ $SRUN_OVERLAP}${PB_SRUN_ARGS:+ $PB_SRUN_ARGS}" ;;
esac)
sum "# case $CASE_TEXT"
gpu_lines

if [ "$LAUNCHER" = bundle ]; then
  # CUDA runtime, cuBLAS and NCCL are not in the bundle: find them on this node.
  find_lib() {
    local so=$1 d
    local IFS=:
    for d in ${PB_CUDA_LIB_DIRS:-} ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && [ -e "$d/$so" ] && { echo "$d"; return 0; }; done
    unset IFS
    d=$(/sbin/ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so { print $NF; exit }')
    [ -n "$d" ] && { dirname "$d"; return 0; }
    for d in "${CUDA_HOME:-/usr/local/cuda}"/lib64 /usr/local/cuda/lib64 /usr/local/cuda/targets/*/lib \
             /usr/local/cuda-*/lib64 /usr/lib/x86_64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 \
             "${VIRTUAL_ENV:-/nonexistent}"/lib/python3*/site-packages/nvidia/*/lib \
             /usr/local/lib/python3*/dist-packages/nvidia/*/lib /usr/lib/python3/dist-packages/nvidia/*/lib \
             /opt/*/lib/python3*/site-packages/nvidia/*/lib /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib; do
      [ -e "$d/$so" ] && { echo "$d"; return 0; }
    done
    d=$(timeout 20 find /opt /usr/local /usr/lib -xdev -name "$so" -not -path '*/compat/*' -not -path '*/stubs/*' 2>/dev/null | head -1)
    [ -n "$d" ] && { dirname "$d"; return 0; }
    return 1
  }
  # The sonames the binaries ask for (CUDA 13 for a bundle built with CUDA 13):
  # linked ones from ldd, and cuBLAS (with its cublasLt), which the cublas
  # engine opens when it starts (its name is a string in the binary).
  NEED=$({ ldd "$BIN/coll_sweep" "$BIN/compute_probe" 2>/dev/null | awk '$1 ~ /^lib(cudart|cublas|cublasLt|nccl)\.so/ { print $1 }'
           grep -aom1 'libcublas\.so\.[0-9][0-9]*' "$BIN/compute_probe" 2>/dev/null | sed 'p; s/libcublas/libcublasLt/'; } | sort -u)
  [ -z "$NEED" ] && NEED="libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2"
  CUDA_DIRS="" MISSING=""
  for so in $NEED; do
    if d=$(find_lib "$so"); then
      log "cuda-libs: $so in $d"
      case ":$CUDA_DIRS:" in *":$d:"*) ;; *) CUDA_DIRS=${CUDA_DIRS:+$CUDA_DIRS:}$d ;; esac
    else MISSING="$MISSING $so"; fi
  done
  export PB_EXTRA_LD_LIBRARY_PATH=$CUDA_DIRS
  # shellcheck disable=SC1091
  . "$BUNDLE/env.sh"
  log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  if [ -n "$MISSING" ]; then
    fail cuda-libs - "not found on this node:$MISSING (set PB_CUDA_LIB_DIRS to their folders)"
  else
    line PASS cuda-libs - - "found in ${CUDA_DIRS:-the loader cache}"; NPASS=$((NPASS + 1))
  fi
  # Every symbol the binaries need must be in this node's libraries (ldd -r
  # binds them all now): an older libnccl.so.2 lacking one would otherwise die
  # mid-run with "symbol lookup error". ncclAlltoAll is looked up at run time
  # (dlsym), so NCCL before 2.28.3 passes here and gets the grouped fallback.
  undef=$(for b in "$BIN"/coll_sweep "$BIN"/p2p_sweep "$BIN"/tp_layer "$BIN"/compute_probe; do
            [ -x "$b" ] && ldd -r "$b" 2>&1 | grep -E 'undefined symbol' | sed "s|^|$(basename "$b"): |"; done | head -5)
  log "ldd -r: ${undef:-no undefined symbols}"
  if [ -n "$undef" ]; then fail ldd-r - "undefined symbols against this node's libraries: $(printf '%s' "$undef" | head -1 | cut -c1-150)"
  else line PASS ldd-r - - "no undefined symbols (ldd -r)"; NPASS=$((NPASS + 1)); fi
elif [ "$DO_BUILD" = 1 ]; then
  NVCC=$(command -v nvcc 2>/dev/null || echo "${CUDA_HOME:-/usr/local/cuda}/bin/nvcc")
  LACK=""
  command -v mpicc >/dev/null 2>&1 || LACK="mpicc"
  [ -x "$NVCC" ] || LACK="${LACK:+$LACK, }nvcc (set CUDA_HOME)"
  if [ -n "$LACK" ]; then
    if [ -x "$BIN/coll_sweep" ] && [ -x "$TESTS/test_gpu_nogpu" ]; then
      skip build - "no $LACK here: using the binaries in $BUILD"
    else
      line SKIP all - - "cannot build (no $LACK) and no binaries in $BUILD"
      finish 3
    fi
  else
    JOBS=$(nproc 2>/dev/null || echo 4); [ "$JOBS" -gt 16 ] && JOBS=16
    NO_BUDGET=1 step build - "$BUILD_TO" h_build -- make -C "$ROOT" -j"$JOBS" CUDA=1 BUILD="$BUILD" all \
         "$BUILD/tests/test_gpu_nogpu" "$BUILD/tests/test_coll_check"
    grep -q '^FAIL  build' "$SUM" && { say "the build failed: see $LOG"; finish 1; }
  fi
else
  skip build - "--no-build: using the binaries in $BUILD"
fi
BUDGET_T0=$SECONDS   # the budget counts from here: the build has its own limit
[ -x "$BIN/coll_sweep" ] || { line SKIP all - - "no binaries in $BIN"; finish 3; }
export PATH=$BIN:$TESTS:$PATH

# MPI facts for the summary (parabench stages --mem device through pinned host
# memory, so it works whether the MPI is CUDA-aware or not).
MPI_VER=$(timeout 20 mpirun --version 2>/dev/null | head -1)
CUDA_AWARE=unknown
if command -v ompi_info >/dev/null 2>&1; then
  timeout 30 ompi_info --parsable --all 2>/dev/null | grep -q 'mpi_built_with_cuda_support:value:true' && CUDA_AWARE=yes || CUDA_AWARE=no
fi
sum "# MPI: ${MPI_VER:-unknown}; CUDA-aware: $CUDA_AWARE (not needed: --mem device stages through pinned host memory)"
sum "# verdict step              ranks    time  headline or reason"

run_steps

if command -v nvidia-smi >/dev/null 2>&1; then
  log ""; log "=== nvidia-smi after the steps"
  timeout 30 nvidia-smi --query-gpu=index,name,temperature.gpu,clocks.sm,memory.used,memory.total --format=csv >> "$LOG" 2>&1
fi
[ "$NFAIL" = 0 ] && finish 0
finish 1
