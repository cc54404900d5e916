#!/usr/bin/env bash
# The GPU check: every GPU code path of parabench on one GPU, in one short run.
# Runs on any GPU node, also one without Open MPI or a network, from the bundle
# that scripts/gpu-bundle.sh makes on a build machine (.gpu-bundle/, copied
# along with the checkout):
#
#   bash scripts/gpu-check.sh
#
# Writes to $OUT when set (a folder of your choice), else to docs/gpu/:
#   gpu-check.log                 every step: command, output, exit code, duration
#   gpu-check-summary.txt         one line per step: PASS/FAIL/SKIP and its headline number
#   gpu-check-results.tar.gz      the CSV and JSON files of every benchmark step
# Every step runs under `timeout`, failures do not stop the rest, and the whole
# run keeps to GPU_CHECK_BUDGET seconds (default 300): steps that would start
# later are skipped. Exit status: 0 when every step passed and nothing skipped
# but the steps this machine kind cannot run (EXPECTED_SKIPS below: a GPU test
# skipped on a GPU machine is a failure), 1 otherwise.
# Details and status: docs/gpu/README.md.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=${PB_BUNDLE_DIR:-$ROOT/.gpu-bundle}
DEST=${OUT:-$ROOT/docs/gpu}
BUDGET=${GPU_CHECK_BUDGET:-300}
mkdir -p "$DEST"
LOG=$DEST/gpu-check.log
SUM=$DEST/gpu-check-summary.txt
TARBALL=$DEST/gpu-check-results.tar.gz
WORK=$(mktemp -d /tmp/gpu-check.XXXXXX)
RES=$WORK/results
mkdir -p "$RES"
: > "$LOG"
: > "$SUM"
START=$SECONDS
NPASS=0 NFAIL=0 NSKIP=0 NBADSKIP=0
# Skips that are not failures: nvcc is not needed (the binaries come built), and
# NCCL refuses two ranks on one GPU. Any other skip fails the check.
EXPECTED_SKIPS="nvcc p2p-nccl"

log() { printf '%s\n' "$*" >> "$LOG"; }
say() { printf '%s\n' "$*" | tee -a "$LOG"; }
sum() { printf '%s\n' "$*" >> "$SUM"; printf '%s\n' "$*"; }

finish() {
  ( cd "$WORK" && tar -czf "$TARBALL" results ) 2>/dev/null
  {
    echo "#"
    echo "# total: $NPASS passed, $NFAIL failed, $NSKIP skipped ($NBADSKIP not expected) in $((SECONDS - START)) s"
  } >> "$SUM"
  say "== done: $NPASS passed, $NFAIL failed, $NSKIP skipped ($NBADSKIP not expected) in $((SECONDS - START)) s; files in $DEST"
  rm -rf "$WORK"
}
trap finish EXIT

# ---------------------------------------------------------------- helpers
# csvagg FILE COLUMN max|min|sum|first [COL=VAL ...]: aggregate one column of a
# parabench CSV ('#' lines skipped, the first other line is the header).
csvagg() {
  local f=$1 col=$2 agg=$3; shift 3
  [ -f "$f" ] || { echo "n/a"; return; }
  awk -F, -v col="$col" -v agg="$agg" -v filt="$*" '
    /^#/ { next }
    !hdr { for (i = 1; i <= NF; i++) idx[$i] = i; hdr = 1; nf = split(filt, fl, " "); next }
    {
      for (j = 1; j <= nf; j++) { split(fl[j], kv, "="); if ($(idx[kv[1]]) != kv[2]) next }
      v = $(idx[col]) + 0; n++
      if (agg == "sum") r += v
      else if (agg == "first") { if (n == 1) r = v }
      else if (n == 1 || (agg == "max" && v > r) || (agg == "min" && v < r)) r = v
    }
    END { if (!hdr || !(col in idx) || n == 0) print "n/a"; else printf "%.6g\n", r }' "$f"
}

# The reason of a failure: the program's own message ("prog: ..."), a loader
# error, or the last line.
reason_of() {
  local f=$1
  local r
  r=$(grep -m1 -E 'error while loading shared libraries|version .GLIBC|cannot open shared object|not found \(required by' "$f")
  [ -n "$r" ] && { echo "binary failed to start (library mismatch): $r"; return; }
  r=$(grep -m1 -E '^[a-z_0-9]+: ' "$f" | grep -vE '^(mpirun|orterun|orted|coll_sweep: warning|[a-z_0-9]+: warning):' )
  [ -z "$r" ] && r=$(grep -v '^[-[:space:]]*$' "$f" | tail -1)
  echo "${r:0:200}"
}

code_meaning() {
  case "$1" in
    0) echo "ok" ;; 1) echo "check failed" ;; 2) echo "usage error" ;;
    3) echo "environment: no GPU / library / ranks" ;; 4) echo "benchmark timeout" ;;
    124|137) echo "killed by timeout" ;; 126|127) echo "cannot execute" ;;
    *) echo "exit $1" ;;
  esac
}

# step NAME TIMEOUT HEADLINE_FN -- CMD...
#   Runs CMD (in $RES) under timeout, logs it, and writes one summary line.
#   HEADLINE_FN (or '-') is called with the output file after a success and
#   prints the headline; it may print "FAIL: reason" to fail the step anyway.
#   EXPECT_RC (environment) names the exit code that means success (default 0).
step() {
  local name=$1 to=$2 hfn=$3; shift 4
  local left=$((BUDGET - (SECONDS - START)))
  if [ "$left" -lt 15 ]; then
    skip "$name" "time budget of $BUDGET s spent"; return 0
  fi
  [ "$to" -gt "$left" ] && to=$left
  local out=$WORK/$name.out
  log ""
  log "=== $name  [timeout ${to} s, at +$((SECONDS - START)) s]"
  log "\$ $*"
  local t0; t0=$(date +%s.%N)
  ( cd "$RES" && timeout -k 10 "$to" "$@" ) > "$out" 2>&1
  local rc=$?
  local dt; dt=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  cat "$out" >> "$LOG"
  log "--- $name: exit $rc ($(code_meaning $rc)), ${dt} s"
  local want=${EXPECT_RC:-0} head="" verdict
  if [ "$rc" = "$want" ]; then
    verdict=PASS
    if [ "$hfn" != "-" ]; then
      head=$("$hfn" "$out" 2>/dev/null)
      case "$head" in FAIL:*) verdict=FAIL; head=${head#FAIL: } ;; esac
    fi
    [ "$want" != 0 ] && [ "$verdict" = PASS ] && head="exit $rc as expected${head:+; $head}"
  else
    verdict=FAIL
    head="exit $rc ($(code_meaning $rc)): $(reason_of "$out")"
  fi
  if [ "$verdict" = PASS ]; then NPASS=$((NPASS + 1)); else NFAIL=$((NFAIL + 1)); fi
  sum "$(printf '%-5s %-26s %6ss  %s' "$verdict" "$name" "$dt" "$head")"
}

skip() {  # skip NAME REASON: counted; fails the check unless NAME is in EXPECTED_SKIPS
  local tag=SKIP
  case " $EXPECTED_SKIPS " in *" $1 "*) ;; *) tag=SKIP! NBADSKIP=$((NBADSKIP + 1)) ;; esac
  log ""
  log "=== $1: SKIPPED: $2"
  sum "$(printf '%-5s %-26s %6s  %s' "$tag" "$1" "-" "$2")"
  NSKIP=$((NSKIP + 1))
}

# ---------------------------------------------------------------- headlines
h_unit() {
  local p s f
  p=$(grep -oE '\[  PASSED  \] [0-9]+' "$1" | grep -oE '[0-9]+$' | tail -1)
  s=$(grep -oE '\[  SKIPPED \] [0-9]+ test' "$1" | grep -oE '[0-9]+' | tail -1)
  f=$(grep -oE '\[  FAILED  \] [0-9]+ test' "$1" | grep -oE '[0-9]+' | tail -1)
  if [ "${s:-0}" != 0 ] || [ "${f:-0}" != 0 ]; then
    echo "FAIL: ${p:-0} passed, ${s:-0} SKIPPED (GPU tests need a visible GPU), ${f:-0} failed"
  else
    echo "${p:-0} tests passed (GEMM fp32/bf16, relu/softmax/convert, fill bit-identical), 0 skipped"
  fi
}
h_probe_bf16() {
  local c=$RES/compute_bf16.csv g4 g8 cp
  g4=$(csvagg "$c" rate first test=gemm size=4096)
  g8=$(csvagg "$c" rate first test=gemm size=8192)
  cp=$(csvagg "$c" rate first test=copy)
  awk -v g4="$g4" -v g8="$g8" -v cp="$cp" 'BEGIN {
    printf "bf16 GEMM 4096: %.1f TFLOP/s, 8192: %.1f TFLOP/s (H200 ref ~790); ", g4 / 1000, g8 / 1000
    printf "D2D copy %.0f GB/s counted once = %.2f TB/s read+write (ref ~4.3)", cp, cp * 2 / 1000 }'
}
h_probe_fp32() {
  local g; g=$(csvagg "$RES/compute_fp32.csv" rate first test=gemm size=8192)
  awk -v g="$g" 'BEGIN { printf "fp32 GEMM 8192 (no TF32): %.1f TFLOP/s (H200 fp32 peak ~67)", g / 1000 }'
}
wrong_of() { csvagg "$1" wrong sum; }
h_coll() {   # $RES/$2.csv
  local c=$RES/$2.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "allreduce peak algbw $(csvagg "$c" algbw_GBps max collective=allreduce) GB/s, busbw $(csvagg "$c" busbw_GBps max collective=allreduce) GB/s; peak busbw any coll $(csvagg "$c" busbw_GBps max) GB/s; 0 wrong"
}
h_coll_nccl() {   # also: device time from CUDA events is there, and not above the host time
  local c=$RES/coll_nccl.csv head dev host
  head=$(h_coll "$1" coll_nccl)
  case "$head" in FAIL:*) echo "$head"; return ;; esac
  dev=$(csvagg "$c" time_us_device max collective=allreduce bytes=134217728)
  host=$(csvagg "$c" time_us max collective=allreduce bytes=134217728)
  awk -v d="$dev" -v h="$host" -v head="$head" 'BEGIN {
    if (d == "n/a" || d + 0 <= 0) { print "FAIL: no device time (time_us_device) at 128 MiB: " d; exit }
    printf "%s; 128M allreduce host %.1f us, events %.1f us (host/device %.3f)\n", head, h, d, h / d }'
}
h_coll_graph() {   # -G: same answers, and the host time per launch against the plain run at 8 B
  local c=$RES/coll_graph.csv p=$RES/coll_nccl.csv w g n
  w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  g=$(csvagg "$c" time_us first collective=allreduce bytes=8)
  n=$(csvagg "$p" time_us first collective=allreduce bytes=8)
  echo "CUDA graph replay: allreduce 8 B $g us (plain issue $n us), devtime $(csvagg "$c" time_us_device first collective=allreduce bytes=8) us; 0 wrong"
}
h_coll_check() {
  if grep -qE '\[       OK \] device_path_matches_host_path' "$1" && ! grep -q '\[  FAILED  \]' "$1"; then
    echo "device fill and count equal the host's for every collective x type (3 simulated ranks)"
  else
    echo "FAIL: $(grep -m1 -E 'FAILED|SKIPPED|Error' "$1" | cut -c1-150)"
  fi
}
h_coll_mpidev() { h_coll "$1" coll_mpidev; }
h_p2p_mpidev() {
  local c=$RES/p2p_mpidev.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "latency min $(csvagg "$c" time_us min mode=latency) us, bw peak $(csvagg "$c" bw_GBps max mode=bw) GB/s, bibw peak $(csvagg "$c" bw_GBps max mode=bibw) GB/s; 0 wrong"
}
h_dp() {
  local c=$RES/$2.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "step $(csvagg "$c" step_us min) us min, compute $(csvagg "$c" gflops max) GFLOP/s, busbw $(csvagg "$c" busbw_GBps max) GB/s, max overhead $(csvagg "$c" overhead max); 0 wrong"
}
h_dp_nccl() {   # NCCL with cuBLAS must run in stream ordering (CUDA events, no comm thread)
  local head; head=$(h_dp "$1" dp_nccl)
  case "$head" in FAIL:*) echo "$head"; return ;; esac
  grep -q '^# ordering stream' "$1" || { echo "FAIL: not in stream ordering: $(grep -m1 '^# ordering' "$1")"; return; }
  echo "$head; ordering stream"
}
h_dp_mpidev() { h_dp "$1" dp_mpidev; }
h_tp() {
  local c=$RES/$2.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "step $(csvagg "$c" step_us min) us, $(csvagg "$c" gflops max) GFLOP/s, comm fraction $(csvagg "$c" comm_fraction max), max rel err $(csvagg "$c" max_rel_err max); 0 wrong"
}
h_tp_nccl() { h_tp "$1" tp_nccl; }
h_tp_mpidev() { h_tp "$1" tp_mpidev; }
h_pp() {
  local c=$RES/$2.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "step $(csvagg "$c" step_us min) us min, efficiency 1f1b $(csvagg "$c" efficiency max schedule=1f1b) (theory $(csvagg "$c" efficiency_theory max schedule=1f1b)); 0 wrong"
}
h_pp_nccl() { h_pp "$1" pp_nccl; }
h_pp_mpidev() { h_pp "$1" pp_mpidev; }
h_hy() {
  local c=$RES/$2.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "step $(csvagg "$c" step_us min) us, compute $(csvagg "$c" compute_us min) us, tp $(csvagg "$c" tp_comm_us min) us, pp wait $(csvagg "$c" pp_wait_us min) us, dp $(csvagg "$c" dp_comm_us min) us; 0 wrong"
}
h_hy_nccl() { h_hy "$1" hybrid_nccl; }
h_hy_mpidev() { h_hy "$1" hybrid_mpidev; }
h_smoke() {
  local c=$RES/coll_cpu.csv w; w=$(wrong_of "$c")
  [ "$w" != 0 ] && { echo "FAIL: $w wrong values"; return; }
  echo "bundle's Open MPI works: allreduce busbw $(csvagg "$c" busbw_GBps max) GB/s (host memory); 0 wrong"
}
h_gpu() { grep -m1 -E '^GPU 0' "$1" | cut -c1-120; }
h_last() { grep -v '^[[:space:]]*$' "$1" | tail -1 | cut -c1-150; }
h_dup() {   # the refusal must be NCCL's, not an earlier one (no GPU at all, say)
  if grep -qiE 'duplicate gpu|ncclCommInitRank' "$1"; then
    echo "NCCL refused: $(grep -m1 -iE 'duplicate gpu|ncclCommInitRank' "$1" | cut -c1-150)"
  else
    echo "FAIL: exit 3, but not NCCL's refusal: $(reason_of "$1")"
  fi
}

# ---------------------------------------------------------------- environment
HOST=$(hostname 2>/dev/null || echo "${HOSTNAME:-unknown}")
say "== parabench GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ) on $HOST, kernel $(uname -r), budget $BUDGET s"
log "repo: $ROOT ($(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo 'no git'))"
log "os: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-unknown}"); glibc: $(ldd --version 2>/dev/null | head -1)"
log "initial LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-<unset>}"
log "network interfaces (mpirun needs lo up): $(tail -n +3 /proc/net/dev 2>/dev/null | cut -d: -f1 | tr -s ' \n' ' ')"
log "cpus: $(nproc 2>/dev/null), memory: $(awk '/MemTotal/ {print $2 " kB"}' /proc/meminfo 2>/dev/null)"
sum "# parabench GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $HOST, kernel $(uname -r)"
sum "# verdict step                       time  headline"

if [ ! -f "$BUNDLE/env.sh" ]; then
  say "no bundle at $BUNDLE: run scripts/gpu-bundle.sh on the build machine and carry .gpu-bundle"
  sum "FAIL  bundle                          -   no $BUNDLE/env.sh: run scripts/gpu-bundle.sh and carry .gpu-bundle"
  NFAIL=$((NFAIL + 1))
  exit 1
fi
# the run tool may not keep the execute bits of carried files
chmod -R u+rwX,go+rX "$BUNDLE" 2>/dev/null
chmod +x "$BUNDLE"/bin/* "$BUNDLE"/tests/* "$BUNDLE"/ompi/bin/* 2>/dev/null
log "bundle: $(sed -n '1,4p' "$BUNDLE/MANIFEST" 2>/dev/null | tr '\n' ';')"

step gpu-visible 30 h_gpu -- nvidia-smi -L
step nvidia-smi 30 h_last -- nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem,power.limit --format=csv
if command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ]; then
  step nvcc 30 h_last -- bash -c 'PATH=$PATH:/usr/local/cuda/bin; nvcc --version | tail -2'
else
  skip nvcc "no nvcc on PATH or in /usr/local/cuda/bin (not needed: the binaries come built)"
fi

# CUDA libraries: the toolkit's first, then the pip wheels (nvidia-* in the torch venv).
find_lib() {   # find_lib SONAME -> directory
  local so=$1 d
  if [ "$so" = libcuda.so.1 ]; then   # the driver's: where the image put it
    d=$(/sbin/ldconfig -p 2>/dev/null | awk -v so="$so" '$1 == so && /x86-64/ {print $NF; exit}')
    [ -n "$d" ] && { dirname "$d"; return 0; }
    local IFS=:
    for d in ${LD_LIBRARY_PATH:-}; do [ -n "$d" ] && [ -e "$d/$so" ] && { echo "$d"; return 0; }; done
    unset IFS
  fi
  for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-*/lib64 \
           /usr/local/cuda-*/targets/x86_64-linux/lib /usr/lib/x86_64-linux-gnu /usr/local/nvidia/lib64 \
           /opt/torch/.venv/lib/python3.*/site-packages/nvidia/*/lib \
           /opt/torch/.venv/lib/python3.*/site-packages/nvidia/*/lib64 \
           /usr/local/lib/python3*/dist-packages/nvidia/*/lib /usr/lib/python3/dist-packages/nvidia/*/lib; do
    [ -e "$d/$so" ] && { echo "$d"; return 0; }
  done
  # last resort; never a compat/ libcuda (it must match the driver) nor a stub
  d=$(timeout 20 find /opt /usr/local /usr/lib -xdev -name "$so" -not -path '*/compat/*' -not -path '*/stubs/*' 2>/dev/null | head -1)
  [ -n "$d" ] && { dirname "$d"; return 0; }
  return 1
}
CUDA_DIRS=""
MISSING=""
FOUND=""
{
  log ""
  log "=== cuda-libs: search for the CUDA libraries the binaries need"
  for so in libcudart.so.13 libcublas.so.13 libcublasLt.so.13 libnccl.so.2 libcuda.so.1; do
    if d=$(find_lib "$so"); then
      log "  $so: $d/$so -> $(readlink -f "$d/$so")"
      FOUND="$FOUND $so=$d"
      if [ "$so" = libcuda.so.1 ] && /sbin/ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
        continue   # the driver library: already in the loader's cache
      fi
      case ":$CUDA_DIRS:" in *":$d:"*) ;; *) CUDA_DIRS=${CUDA_DIRS:+$CUDA_DIRS:}$d ;; esac
    else
      log "  $so: NOT FOUND"
      MISSING="$MISSING $so"
    fi
  done
}
if [ -z "$MISSING" ]; then
  sum "$(printf 'PASS  %-26s %6s  %s' cuda-libs - "${FOUND# }")"; NPASS=$((NPASS + 1))
else
  sum "$(printf 'FAIL  %-26s %6s  %s' cuda-libs - "not found:$MISSING (searched the toolkit, /usr/lib, the torch venv's nvidia wheels)")"; NFAIL=$((NFAIL + 1))
fi

export PB_EXTRA_LD_LIBRARY_PATH=$CUDA_DIRS
# shellcheck disable=SC1091
. "$BUNDLE/env.sh"
export NCCL_DEBUG=${NCCL_DEBUG:-WARN}
log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
log "$(env | grep -E '^(OPAL|PMIX|OMPI_MCA)_' | sort)"

# Every carried binary and library resolves here (a library mismatch shows here first).
bundle_ldd() {
  local f bad=0
  for f in "$BUNDLE"/bin/* "$BUNDLE"/tests/* "$BUNDLE"/ompi/bin/*; do
    if ! ldd "$f" > "$WORK/ldd.txt" 2>&1 || grep -qE 'not found|version .* not found' "$WORK/ldd.txt"; then
      echo "$(basename "$f"):"; grep -E 'not found' "$WORK/ldd.txt"; bad=$((bad + 1))
    fi
  done
  echo "== libraries of $(basename "$BUNDLE")/bin/coll_sweep:"; ldd "$BUNDLE/bin/coll_sweep"
  echo "binaries with unresolved libraries: $bad"
  [ "$bad" = 0 ]
}
h_ldd() { echo "every binary resolves; nccl: $(grep -m1 libnccl "$1" | awk '{print $3}'), cublas: $(ldd "$BUNDLE/bin/compute_probe" | grep -m1 'libcublas\.' | awk '{print $3}')"; }
step bundle-ldd 60 h_ldd -- bash -c "$(declare -f bundle_ldd); BUNDLE='$BUNDLE' WORK='$WORK' bundle_ldd"
step mpi-cpu-smoke 60 h_smoke -- mpirun -np 2 coll_sweep --backend mpi --mem host --sizes 1K,1M -n 5 --csv coll_cpu.csv

# ---------------------------------------------------------------- GPU unit tests, compute
step test_gpu_nogpu 120 h_unit -- test_gpu_nogpu
step test_coll_check 60 h_coll_check -- test_coll_check
step probe-bf16 90 h_probe_bf16 -- compute_probe --engine cublas -d bfloat16 --sizes 4096,8192 -n 10 --copy-bytes 1G --csv compute_bf16.csv
step probe-fp32 90 h_probe_fp32 -- compute_probe --engine cublas -d float --sizes 8192 -n 5 --copy-bytes 0 --csv compute_fp32.csv

# ---------------------------------------------------------------- NCCL, one rank
M="--model gpt-1.3b"
step coll-nccl-1rank 90 h_coll_nccl -- mpirun -np 1 coll_sweep --backend nccl --coll all -b 8 -e 256M -f 4 \
     --csv coll_nccl.csv --json coll_nccl.json
step coll-nccl-graph 90 h_coll_graph -- mpirun -np 1 coll_sweep --backend nccl -G --coll allreduce,allgather,sendrecv \
     -b 8 -e 64M -f 8 --csv coll_graph.csv --json coll_graph.json
skip p2p-nccl "p2p_sweep needs two ranks and NCCL refuses two ranks on one GPU (Duplicate GPU); see p2p-mpidev-2rank"
step dp-nccl-1rank 90 h_dp_nccl -- mpirun -np 1 dp_allreduce --backend nccl $M --layers 2 --grad-bytes 256M,1G \
     --overlap none,bucket -n 5 -w 2 --csv dp_nccl.csv --json dp_nccl.json
step tp-nccl-1rank 90 h_tp_nccl -- mpirun -np 1 tp_layer --backend nccl --tp 1 $M -n 5 -w 2 --csv tp_nccl.csv --json tp_nccl.json
step pp-nccl-1rank 90 h_pp_nccl -- mpirun -np 1 pp_pipeline --backend nccl --stages 1 --micro-batches 1,4 $M --layers 4 \
     -n 3 -w 1 --csv pp_nccl.csv --json pp_nccl.json
step hybrid-nccl-1rank 90 h_hy_nccl -- mpirun -np 1 hybrid_3d --backend nccl $M --layers 2 -n 3 -w 1 \
     --csv hybrid_nccl.csv --json hybrid_nccl.json

# ---------------------------------------------------------------- MPI on device buffers, 2-4 ranks on the one GPU
D="--backend mpi --mem device --engine cublas"
step coll-mpidev-4rank 90 h_coll_mpidev -- mpirun -np 4 coll_sweep --backend mpi --mem device --coll all -b 8 -e 64M -f 4 \
     -n 5 -w 2 --csv coll_mpidev.csv --json coll_mpidev.json
step p2p-mpidev-2rank 90 h_p2p_mpidev -- mpirun -np 2 p2p_sweep --backend mpi --mem device --mode all -b 8 -e 16M -f 4 \
     --window 16 -n 10 -w 2 --csv p2p_mpidev.csv --json p2p_mpidev.json
step dp-mpidev-4rank 90 h_dp_mpidev -- mpirun -np 4 dp_allreduce $D $M --layers 2 --grad-bytes 256M --overlap none,bucket \
     -n 3 -w 1 --csv dp_mpidev.csv --json dp_mpidev.json
step tp-mpidev-2rank 90 h_tp_mpidev -- mpirun -np 2 tp_layer $D --tp 2 $M -n 3 -w 1 --csv tp_mpidev.csv --json tp_mpidev.json
step pp-mpidev-4rank 90 h_pp_mpidev -- mpirun -np 4 pp_pipeline $D --stages 4 $M --layers 4 --micro-batches 4 \
     -n 3 -w 1 --csv pp_mpidev.csv --json pp_mpidev.json
step hybrid-mpidev-4rank 90 h_hy_mpidev -- mpirun -np 4 hybrid_3d $D --tp 2 --pp 2 $M --layers 4 -n 3 -w 1 \
     --csv hybrid_mpidev.csv --json hybrid_mpidev.json

# ---------------------------------------------------------------- the documented refusal
EXPECT_RC=3 step nccl-2rank-refused 60 h_dup -- mpirun -np 2 coll_sweep --backend nccl --sizes 1K -n 1

step nvidia-smi-after 30 h_last -- nvidia-smi --query-gpu=temperature.gpu,clocks.sm,memory.used --format=csv
[ "$NFAIL" = 0 ] && [ "$NBADSKIP" = 0 ]
