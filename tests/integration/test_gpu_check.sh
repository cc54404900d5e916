#!/usr/bin/env bash
# scripts/gpu-check.sh where it must not run anything: with every GPU hidden
# (CUDA_VISIBLE_DEVICES empty, or no GPU at all) it exits 77 at once, lists
# every GPU step as needing a GPU in its summary and its one-page
# gpu-check.md, and builds nothing; its usage errors exit 2. With a fake
# nvidia-smi on PATH, --dry-run shows the steps it would run (argument
# building, GPU counting, the expected busbw of the model); the judging and
# summary helpers (scripts/gpu-check-judge.py) run on fabricated step results. On a
# fake node (nvidia-smi, mpirun and the sweeps faked) the key figures it writes
# match what the test recomputes from the sweeps' CSVs. --rehearse runs every
# step here with CPU stand-ins, --node and run_all.sh --backend nccl --quick
# included (from the checkout, and from a bundle's installed parabench with no
# gnuplot on PATH); the judge of run_all's folder fails what it should. The
# GPU path itself needs a GPU node (docs/gpu/README.md).
source "$(dirname "$0")/lib.sh"
CHECK=$TESTS_DIR/../../scripts/gpu-check.sh
start=$SECONDS
expect_rc 77 "no GPU visible: skipped" -- env CUDA_VISIBLE_DEVICES= timeout 60 bash "$CHECK" --out "$TMP/out77"
[ $((SECONDS - start)) -lt 30 ] && pass "stops at once without a GPU" || fail "took $((SECONDS - start)) s without a GPU"
expect_in "$TMP/out77/summary.txt" "no GPU" "the summary says why"
expect_in "$TMP/out" "exit 77" "the output says the exit code"
[ ! -e "$TMP/out77/.keys" ] && pass "no leftovers" || fail "leftover .keys in the output folder"
expect_rc 2 "unknown option" -- bash "$CHECK" --no-such-option
expect_rc 2 "--max-ranks needs a number" -- bash "$CHECK" --max-ranks x
expect_rc 2 "--step-timeout below the watchdog's 60 s + 30 s" -- bash "$CHECK" --step-timeout 60
expect_rc 0 "--help" -- bash "$CHECK" --help
expect_in "$TMP/out" "77  skipped: no GPU" "--help documents exit 77"

# ---- without a GPU every GPU step is listed as needing one; one page written
n=$(grep -c '^SKIP .*needs a GPU' "$TMP/out77/summary.txt")
[ "$n" -ge 25 ] && pass "$n steps listed as needing a GPU" || fail "only $n steps say they need a GPU"
for s in unit-gpu devtime-batch-1 nccl-bfloat16-inplace-1 nccl-2g-elements-1 tp-vs-gemm-rate p2p-matrix-nccl run-all-nccl-1; do
  grep -q "^SKIP  $s .*needs a GPU" "$TMP/out77/summary.txt" && pass "no GPU: $s listed" || fail "no GPU: $s not listed"
done
expect_in "$TMP/out77/gpu-check.md" "SKIPPED (no GPU)" "gpu-check.md: verdict without a GPU"

# ---- --dry-run with a fake nvidia-smi: GPU counting and argument building
FAKE=$TMP/fake-bin
mkdir -p "$FAKE"
cat > "$FAKE/nvidia-smi" <<'SMI'
#!/bin/sh
n=${FAKE_GPUS:-8}
case "$*" in
  -L) i=0; while [ $i -lt "$n" ]; do echo "GPU $i: $FAKE_GPU_NAME (UUID: GPU-fake-$i)"; i=$((i + 1)); done ;;
  *memory.free*) echo "${FAKE_FREE_MIB:-81000}" ;;
  *) echo "fake nvidia-smi" ;;
esac
SMI
chmod +x "$FAKE/nvidia-smi"
dry() {   # dry OUT GPUS NAME FREE_MIB [options]: a dry run against the fake
  local out=$1 n=$2 name=$3 free=$4; shift 4
  env -u CUDA_VISIBLE_DEVICES PATH="$FAKE:$PATH" FAKE_GPUS="$n" FAKE_GPU_NAME="$name" FAKE_FREE_MIB="$free" \
      timeout 60 bash "$CHECK" --dry-run --out "$out" "$@"
}
plan() { grep "^PLAN  $2 " "$1/summary.txt"; }
expect_rc 0 "dry run, 8 fake H100" -- dry "$TMP/d8" 8 "NVIDIA H100 80GB HBM3" 81000
S8=$TMP/d8/summary.txt
expect_in "$S8" "GPUs: 8 visible (NVIDIA H100 80GB HBM3); multi-rank steps: 8 ranks" "counts 8 GPUs"
expect_in "$S8" "expected busbw ceiling 450 GB/s per direction (expectation, NVIDIA H100 datasheet" "H100: expected figure with its source"
plan "$TMP/d8" coll-nccl-8 | grep -q -- "-np 8 .*coll_sweep --backend nccl --coll all" && pass "coll-nccl-8: 8 ranks" || fail "coll-nccl-8 command: $(plan "$TMP/d8" coll-nccl-8)"
plan "$TMP/d8" tp-nccl-8 | grep -q -- "-np 8 .*tp_layer .*--tp 8 " && pass "tp-nccl-8: --tp 8" || fail "tp-nccl-8 command"
plan "$TMP/d8" hybrid-nccl-8 | grep -q -- "--tp 2 --pp 4 " && pass "hybrid: 2 x 4" || fail "hybrid command: $(plan "$TMP/d8" hybrid-nccl-8)"
plan "$TMP/d8" p2p-nccl-8 | grep -q -- "-np 8 .*p2p_sweep --backend nccl" && pass "p2p-nccl-8" || fail "p2p-nccl-8 command"
plan "$TMP/d8" busbw-vs-expected | grep -q "busbw coll-nccl-8.csv NVIDIA H100 80GB HBM3 8" && pass "busbw judged against the model" || fail "busbw-vs-expected command"
plan "$TMP/d8" nccl-half-inplace-8 | grep -q -- "-d half --in-place " && pass "half, in place" || fail "half in place command"
plan "$TMP/d8" nccl-int32-8 | grep -q -- "-d int32 -b" && pass "int32, out of place" || fail "int32 command"
plan "$TMP/d8" nccl-2g-elements-1 | grep -q -- "--sizes 4297064448 " && pass "2^31 + 2^20 bf16 elements" || fail "no >2^31-element step"
plan "$TMP/d8" devtime-pair-1 | grep -q "PARABENCH_DEVTIME_BATCH=1 coll_sweep" && pass "devtime: one pair per operation" || fail "devtime-pair command"
! plan "$TMP/d8" san-memcheck-coll >/dev/null && pass "compute-sanitizer is not in the main call" || fail "sanitizer steps in the main call"
expect_rc 0 "dry run of the sanitizer phase" -- dry "$TMP/d8s" 8 "NVIDIA H100 80GB HBM3" 81000 --sanitize
for t in memcheck racecheck synccheck; do
  plan "$TMP/d8s" san-$t-unit | grep -q -- "--tool $t test_gpu_nogpu" && pass "sanitizer $t on the unit tests" || fail "no san-$t-unit"
done
for b in coll p2p probe dp tp pp hybrid; do
  plan "$TMP/d8s" san-memcheck-$b >/dev/null && pass "memcheck: $b" || fail "no san-memcheck-$b"
done
# NCCL handles the CUDA API errors of its own probing: memcheck must not count them
for b in coll dp tp pp hybrid; do
  plan "$TMP/d8s" san-memcheck-$b | grep -q -- "--report-api-errors no --tool memcheck" && pass "memcheck on NCCL ($b): API errors not reported" || fail "san-memcheck-$b reports NCCL's API errors: $(plan "$TMP/d8s" san-memcheck-$b)"
done
! plan "$TMP/d8s" unit-gpu >/dev/null && pass "the sanitizer phase runs only the sanitizer" || fail "main steps in the sanitizer phase"
[ ! -e "$TMP/d8/check.log" ] || ! grep -q '^=== ' "$TMP/d8/check.log" && pass "dry run ran nothing" || fail "dry run ran steps"
# what users run: the all-pairs matrix on NCCL, and run_all itself, one rank per GPU
plan "$TMP/d8" p2p-matrix-nccl-8 | grep -q -- "-np 8 .*p2p_sweep --backend nccl --matrix --sizes 8,64M .*--matrix-csv p2p-matrix-nccl-8 " \
    && pass "p2p-matrix-nccl-8: the matrix on NCCL" || fail "p2p-matrix-nccl-8: $(plan "$TMP/d8" p2p-matrix-nccl-8)"
plan "$TMP/d8" run-all-nccl-8 | grep -q -- "run_all.sh --no-install --backend nccl --quick --np 8 --out $TMP/d8/run-all-nccl-8$" \
    && pass "run-all-nccl-8: run_all --backend nccl --quick, 8 ranks" || fail "run-all-nccl-8: $(plan "$TMP/d8" run-all-nccl-8)"
! plan "$TMP/d8" nccltests-allreduce-8 >/dev/null && pass "nccl-tests only with --node" || fail "nccl-tests steps without --node"
# --node: nccl-tests beside parabench at the same sizes; an MPI=1 build (it links libmpi) runs a
# process per GPU, an MPI=0 build one process driving every GPU
NT=$TMP/nccl-tests/build
mkdir -p "$NT"
printf '#!/bin/sh
# a stand-in linked with libmpi.so.40
' > "$NT/all_reduce_perf"
printf '#!/bin/sh
# a stand-in built with MPI=0
' > "$NT/sendrecv_perf"
chmod +x "$NT"/*
export NCCL_TESTS_DIR=$TMP/nccl-tests
expect_rc 0 "dry run --node, 8 fake H100" -- dry "$TMP/dn" 8 "NVIDIA H100 80GB HBM3" 81000 --node
unset NCCL_TESTS_DIR
plan "$TMP/dn" nccltests-allreduce-8 | grep -q -- "-np 8 .*$NT/all_reduce_perf -g 1 -b 8 -e 512M -f 4 -n 20 -w 5 -c 1$" \
    && pass "--node: all_reduce_perf (MPI=1), a process per GPU" || fail "--node: $(plan "$TMP/dn" nccltests-allreduce-8)"
plan "$TMP/dn" nccltests-sendrecv-8 | grep -q -- " $NT/sendrecv_perf -g 8 -b 8 -e 512M -f 4 -n 20 -w 5 -c 1$" \
    && ! plan "$TMP/dn" nccltests-sendrecv-8 | grep -q -- "-np " && pass "--node: sendrecv_perf (MPI=0), one process, -g 8" || fail "--node: $(plan "$TMP/dn" nccltests-sendrecv-8)"
plan "$TMP/dn" pb-nccltests-8 | grep -q -- "-np 8 .*coll_sweep --backend nccl --coll allreduce,sendrecv -b 8 -e 512M -f 4 -n 20 -w 5 " \
    && pass "--node: parabench at nccl-tests' sizes and iterations" || fail "--node: $(plan "$TMP/dn" pb-nccltests-8)"
plan "$TMP/dn" vs-nccl-tests-8 | grep -q "vs-nccl-tests pb-nccltests-8.csv vs-nccl-tests-8.txt allreduce=nccltests-allreduce-8.txt sendrecv=nccltests-sendrecv-8.txt" \
    && pass "--node: the table per size" || fail "--node: $(plan "$TMP/dn" vs-nccl-tests-8)"
expect_in "$TMP/dn/summary.txt" "# phase: main steps, then nccl-tests beside parabench" "--node: the summary names the phase"
expect_rc 0 "dry run --node without nccl-tests" -- dry "$TMP/dn0" 2 "NVIDIA H100 80GB HBM3" 81000 --node
grep -q "^PLAN  nccltests-allreduce-2 .*not run here: no nccl-tests: set NCCL_TESTS_DIR" "$TMP/dn0/summary.txt" \
    && pass "--node without nccl-tests: skipped, with what to do" || fail "--node without nccl-tests: $(grep nccltests-allreduce "$TMP/dn0/summary.txt")"
expect_rc 2 "--node and --sanitize together" -- bash "$CHECK" --node --sanitize --dry-run

expect_rc 0 "dry run, 8 fake GPUs, 2 visible, little memory" -- env CUDA_VISIBLE_DEVICES=0,1 PATH="$FAKE:$PATH" FAKE_GPUS=8 \
    FAKE_GPU_NAME="NVIDIA A100-SXM4-80GB" FAKE_FREE_MIB=4000 timeout 60 bash "$CHECK" --dry-run --out "$TMP/d2"
S2=$TMP/d2/summary.txt
expect_in "$S2" "GPUs: 2 visible" "CUDA_VISIBLE_DEVICES limits the count"
expect_in "$S2" "NVLink 3: expected busbw ceiling 300 GB/s" "A100 SXM: NVLink 3"
plan "$TMP/d2" hybrid-nccl-2 | grep -q -- "--tp 2 --pp 1 " && pass "hybrid: 2 x 1 on 2 GPUs" || fail "hybrid on 2 GPUs"
grep -q "^PLAN  nccl-2g-elements-1 .*not run here: .*needs 12292 MiB free on GPU 0; it has 4000 MiB" "$S2" \
    && pass ">2^31 step skipped for lack of memory" || fail ">2^31 step with 4000 MiB: $(grep nccl-2g "$S2")"
expect_rc 0 "dry run, 1 fake L40S" -- dry "$TMP/d1" 1 "NVIDIA L40S" 40000
grep -q "^PLAN  coll-nccl-N .*not run here: one GPU" "$TMP/d1/summary.txt" && pass "one GPU: no multi-rank NCCL" || fail "one GPU plan"
grep -q "^PLAN  p2p-matrix-nccl .*not run here: one GPU" "$TMP/d1/summary.txt" && pass "one GPU: no NCCL matrix" || fail "one GPU: $(grep p2p-matrix "$TMP/d1/summary.txt")"
grep -q "^PLAN  run-all-nccl-1 .* --np 1 " "$TMP/d1/summary.txt" && pass "one GPU: run_all on its one rank" || fail "one GPU: $(grep run-all "$TMP/d1/summary.txt")"
[ "$(grep -c '^PLAN  tp-nccl-1 ' "$TMP/d1/summary.txt")" = 1 ] && pass "one GPU: each 1-rank workload once" || fail "1-rank workloads listed twice"
expect_in "$TMP/d1/summary.txt" "PCIe 4: expected busbw ceiling 32 GB/s" "L40S: PCIe 4"
expect_rc 0 "dry run, unknown GPU" -- dry "$TMP/dx" 2 "Fancy GPU 9000" 40000
expect_in "$TMP/dx/summary.txt" "no expectation for 'Fancy GPU 9000'" "unknown model: says there is no expectation"
expect_rc 2 "--max-ranks 0" -- bash "$CHECK" --max-ranks 0 --dry-run

# ---- gpu-check-judge.py on fabricated step results
PYC=$TESTS_DIR/../../scripts/gpu-check-judge.py
command -v python3 >/dev/null || skip_test "python3 missing (install-deps.sh installs it)"
F=$TMP/fab
mkdir -p "$F"
judge() { python3 "$PYC" "$@" 2>&1; }
expect_judge() {   # expect_judge PREFIX DESC -- ARGS: the headline starts with PREFIX ("ok" = neither FAIL nor FINDING)
  local want=$1 desc=$2 got; shift 3
  got=$(judge "$@")
  case "$want:$got" in
    ok:FAIL*|ok:FINDING*) fail "$desc: $got" ;;
    ok:*) pass "$desc" ;;
    *) case "$got" in "$want"*) pass "$desc" ;; *) fail "$desc: got '$got'" ;; esac ;;
  esac
}
for m in "NVIDIA H100 PCIe:PCIe 5: expected busbw ceiling 64" "NVIDIA H200:NVLink 4: expected busbw ceiling 450" \
         "NVIDIA H100 NVL:NVLink 4 bridge: expected busbw ceiling 300" "NVIDIA B200:NVLink 5: expected busbw ceiling 900" \
         "Tesla V100-SXM2-32GB:NVLink 2: expected busbw ceiling 150" "NVIDIA A100-PCIE-40GB:PCIe 4: expected busbw ceiling 32" \
         "NVIDIA GH200 480GB:NVLink 4: expected busbw ceiling 450"; do
  judge expected "${m%%:*}" | grep -qF "${m#*:}" && pass "expected: ${m%%:*}" || fail "expected: ${m%%:*}: $(judge expected "${m%%:*}")"
done
printf '# x\ncollective,bytes,time_us,time_us_device,algbw_GBps,busbw_GBps,wrong\nallreduce,1024,20,10,0.057,0.1,0\nallreduce,536870912,1500,1480,217.4,380.5,0\n' > "$F/c8.csv"   # 8 ranks: busbw = 1.75 algbw
expect_judge ok "busbw 380 of 450 on H100" -- busbw "$F/c8.csv" "NVIDIA H100 80GB HBM3" 8
judge busbw "$F/c8.csv" "NVIDIA H100 80GB HBM3" 8 | grep -q "= 0.85 of the expected 450 GB/s" && pass "busbw ratio reported" || fail "busbw ratio: $(judge busbw "$F/c8.csv" "NVIDIA H100 80GB HBM3" 8)"
expect_judge FINDING "busbw 380 of 900 on B200 is a finding" -- busbw "$F/c8.csv" "NVIDIA B200" 8
expect_judge FAIL "no allreduce row" -- busbw "$TMP/d8/summary.txt" "NVIDIA H100" 8
# devtime: batch per op vs one event pair per op
printf 'collective,bytes,time_us,time_us_device\nallreduce,8,12.0,6.0\nallreduce,268435456,900,880\n' > "$F/pair.csv"
printf 'collective,bytes,time_us,time_us_device\nallreduce,8,12.0,3.0\nallreduce,268435456,905,870\n' > "$F/batch.csv"
printf 'collective,bytes,time_us,time_us_device\nallreduce,8,12.0,7.0\nallreduce,268435456,905,870\n' > "$F/batch_small_high.csv"
printf 'collective,bytes,time_us,time_us_device\nallreduce,8,12.0,3.0\nallreduce,268435456,905,600\n' > "$F/batch_big_off.csv"
printf 'collective,bytes,time_us,time_us_device\nallreduce,8,2.0,3.0\nallreduce,268435456,905,870\n' > "$F/batch_over_host.csv"
expect_judge ok "devtime: batch below the pair at 8 B, equal at 256 MiB" -- devtime "$F/batch.csv" "$F/pair.csv"
expect_judge FAIL "devtime: batch above the pair at the smallest size" -- devtime "$F/batch_small_high.csv" "$F/pair.csv"
expect_judge FAIL "devtime: batch and pair disagree at the largest size" -- devtime "$F/batch_big_off.csv" "$F/pair.csv"
expect_judge FAIL "devtime above the host time" -- devtime "$F/batch_over_host.csv" "$F/pair.csv"
# tp_layer compute vs GEMM FLOPs / rate: 2 GFLOP per layer (gflops * step_us * 1e3)
printf 'test,engine,dtype,size,rate,unit\ngemm,cublas,bfloat16,2048,500000,GFLOP/s\ngemm,cublas,bfloat16,8192,700000,GFLOP/s\ncopy,cublas,bytes,1073741824,3000,GB/s\n' > "$F/probe.csv"
printf 'tp,hidden,dtype,compute_us,step_us,gflops\n1,2048,bfloat16,6.0,10.0,200000\n' > "$F/tp_ok.csv"     # ideal 2e9/5e14 = 4 us
printf 'tp,hidden,dtype,compute_us,step_us,gflops\n1,2048,bfloat16,9.0,10.0,200000\n' > "$F/tp_slow.csv"
expect_judge ok "tp compute 1.5x the GEMM time" -- tp-vs-gemm "$F/tp_ok.csv" "$F/probe.csv"
judge tp-vs-gemm "$F/tp_ok.csv" "$F/probe.csv" | grep -q "= 1.50x the GEMM FLOPs / 500.0 TFLOP/s (bfloat16 2048^3 probe) = 4 us" && pass "tp ratio against the 2048 probe" || fail "tp ratio: $(judge tp-vs-gemm "$F/tp_ok.csv" "$F/probe.csv")"
expect_judge FAIL "tp compute 2.25x the GEMM time" -- tp-vs-gemm "$F/tp_slow.csv" "$F/probe.csv"
# compute_probe vs PyTorch: 5 %
printf 'test,dtype,size,rate,unit\ngemm,bfloat16,8192,710000,GFLOP/s\ncopy,uint8,1073741824,3050,GB/s\n' > "$F/torch.csv"
printf 'test,dtype,size,rate,unit\ngemm,bfloat16,8192,800000,GFLOP/s\ncopy,uint8,1073741824,3050,GB/s\n' > "$F/torch_fast.csv"
expect_judge ok "probe within 5 % of PyTorch" -- vs-torch "$F/torch.csv" "$F/probe.csv"
expect_judge FINDING "probe 12 % below PyTorch's GEMM is a finding" -- vs-torch "$F/torch_fast.csv" "$F/probe.csv"
# the one-page summary from a fabricated summary.txt
mkdir -p "$F/run"
cat > "$F/run/summary.txt" <<'SUM'
# parabench GPU check, 2030-01-01T00:00:00Z, host gpu7
# case (b) MPI, CUDA and NCCL on the node: /usr/bin/mpirun
# GPUs: 8 visible (NVIDIA H100 80GB HBM3); multi-rank steps: 8 ranks (one per GPU)
# verdict step              ranks    time  headline or reason
PASS  unit-gpu                   1      9s  31 cases passed, GPU cases included, none skipped
FAIL  nccl-half-inplace-8        8     12s  7 wrong values in nccl-half-inplace-8.csv
FIND  probe-vs-torch             1      1s  compute_probe vs PyTorch: bfloat16 GEMM 8192 0.880 of PyTorch
SKIP  torch-ref                  1       -  no PyTorch: No module named 'torch'
#
# key figures
#   coll-nccl-8: allreduce busbw 380.5 GB/s at 536870912 B
#
# total: 1 passed, 1 failed, 1 skipped, 1 findings in 33 s; exit 1
SUM
expect_rc 0 "summary writer" -- python3 "$PYC" summary "$F/run"
MD=$F/run/gpu-check.md
expect_in "$MD" "# parabench GPU check: FAIL" "one page: verdict"
expect_in "$MD" "- **nccl-half-inplace-8** (8 ranks): 7 wrong values" "one page: the failure first"
expect_in "$MD" "- **probe-vs-torch**: compute_probe vs PyTorch: bfloat16 GEMM 8192 0.880" "one page: the finding"
expect_in "$MD" "| SKIP | torch-ref | 1 | - | no PyTorch" "one page: every step"
expect_in "$MD" "- coll-nccl-8: allreduce busbw 380.5 GB/s" "one page: key figures"
expect_in "$MD" "- GPUs: 8 visible (NVIDIA H100 80GB HBM3)" "one page: the node"
[ "$(wc -l < "$MD")" -le 60 ] && pass "one page ($(wc -l < "$MD") lines)" || fail "gpu-check.md has $(wc -l < "$MD") lines"
sed -i '$d' "$F/run/summary.txt"
python3 "$PYC" summary "$F/run" >/dev/null
expect_in "$MD" "# parabench GPU check: INCOMPLETE" "one page: a check that did not finish says so"
expect_rc 2 "gpu-check-judge.py: unknown command" -- python3 "$PYC" frobnicate
expect_rc 3 "gpu-check-judge.py: missing file" -- python3 "$PYC" devtime "$F/nope.csv" "$F/pair.csv"

# the judge of run_all's folder on what a GPU run may leave
RJ=$TMP/ra-judge
mkdir -p "$RJ"
printf 'coll_sweep\tok\t0\t3\t\np2p_sweep\tfailed\t3\t2\tsee logs/p2p_sweep.err\nreport\tok\t0\t1\t\n' > "$RJ/steps.tsv"
echo 'allreduce busbw, intra-node: 301.7 GB/s peak at 128 MiB (4 ranks); 20.5 us at 8 B' > "$RJ/summary.txt"
echo '{"backend": "nccl", "nranks": 4, "devices": "4 GPUs", "nccl_nvls_enable": "0", "binding": {"applied": "gpu", "fallback": ["bind-near-gpu.sh: unbound: n1 local rank 2: hwloc cannot place GPU 2"]}}' > "$RJ/meta.json"
expect_judge FAIL "run-all: a failed step fails" -- run-all "$RJ" nccl
judge run-all "$RJ" nccl | grep -q "failed: p2p_sweep (failed, exit 3: see logs/p2p_sweep.err)" && pass "run-all: the failed step named" || fail "run-all: $(judge run-all "$RJ" nccl)"
sed -i '2d' "$RJ/steps.tsv"
expect_judge ok "run-all: every step ok" -- run-all "$RJ" nccl
judge run-all "$RJ" nccl | grep -q "bound: gpu (1 ranks unbound: bind-near-gpu.sh: unbound: n1 local rank 2: hwloc cannot place GPU 2)" \
    && pass "run-all: a rank hwloc could not place is said" || fail "run-all binding: $(judge run-all "$RJ" nccl)"
judge run-all "$RJ" nccl | grep -q ", NCCL_NVLS_ENABLE 0; " && pass "run-all: NCCL_NVLS_ENABLE as run_all recorded it" || fail "run-all NVLS: $(judge run-all "$RJ" nccl)"
expect_judge FAIL "run-all: the wrong backend" -- run-all "$RJ" mpi
PB_REHEARSE=1 expect_judge REHEARSED "run-all: the wrong backend, rehearsed" -- run-all "$RJ" mpi
sed -i 's/"gpu"/"core"/' "$RJ/meta.json"
expect_judge FAIL "run-all: ranks not bound near their GPU" -- run-all "$RJ" nccl
rm "$RJ/summary.txt"
expect_judge FAIL "run-all: no summary.txt" -- run-all "$RJ" nccl
rm "$RJ/steps.tsv"
expect_judge FAIL "run-all: no steps.tsv" -- run-all "$RJ" nccl

# ---- a fake node (nvidia-smi, mpirun, ompi_info and the sweeps faked; the sweeps copy fabricated
# CSVs): the key figures gpu-check.sh extracts into summary.txt and gpu-check.md, against what this
# test recomputes from those CSVs. 4 ranks, so algbw != busbw; the largest size (128 MiB) must reach
# the filter exactly, not rounded to 4 digits.
NODE=$TMP/node
mkdir -p "$NODE/bin" "$NODE/data"
cat > "$FAKE/mpirun" <<'RUN'
#!/bin/sh
[ "$1" = --version ] && { echo "mpirun (fake)"; exit 0; }
while [ $# -gt 0 ]; do case $1 in -np|--bind-to) shift 2 ;; -*) shift ;; *) break ;; esac; done
exec "$@"
RUN
printf '#!/bin/sh\necho mpi_built_with_cuda_support:value:false\n' > "$FAKE/ompi_info"
cat > "$NODE/bin/coll_sweep" <<'BENCH'
#!/bin/sh
# a benchmark's stand-in: writes data/<name>.csv where --csv says
while [ $# -gt 0 ]; do [ "$1" = --csv ] && cp "$(dirname "$0")/../data/$(basename "$0").csv" "$2"; shift; done
BENCH
cp "$NODE/bin/coll_sweep" "$NODE/bin/p2p_sweep"
chmod +x "$FAKE/mpirun" "$FAKE/ompi_info" "$NODE/bin/coll_sweep" "$NODE/bin/p2p_sweep"
cat > "$NODE/data/coll_sweep.csv" <<'CSV'
# command: fabricated, 4 ranks
collective,bytes,nranks,time_us,time_us_device,algbw_GBps,busbw_GBps,wrong
allreduce,8,4,20.5,18.2,0.0004,0.0006,0
allreduce,33554432,4,162.3,160.1,206.7,310.1,0
allreduce,134217728,4,667.2,665.0,201.2,301.7,0
reducescatter,134217728,4,330.1,328.0,406.6,304.9,0
allgather,134217728,4,300.2,298.7,447.1,335.3,0
CSV
cat > "$NODE/data/p2p_sweep.csv" <<'CSV'
mode,bytes,time_us,bw_GBps,wrong
latency,8,3.2,0.0025,0
latency,1024,3.9,0.2626,0
bw,67108864,371.8,180.5,0
bibw,67108864,383.2,350.2,0
CSV
env -u CUDA_VISIBLE_DEVICES PATH="$FAKE:$PATH" FAKE_GPUS=4 FAKE_GPU_NAME="NVIDIA H100 80GB HBM3" FAKE_FREE_MIB=81000 \
    timeout 120 bash "$CHECK" --launcher mpirun --no-build --build "$NODE" --out "$TMP/fake" \
    --only coll-nccl-4,busbw-vs-expected,p2p-nccl-4 >"$TMP/fake.out" 2>&1
if python3 - "$NODE/data" "$TMP/fake" >"$TMP/keys" 2>&1 <<'PY'
import csv, os, re, sys
data, out = sys.argv[1:]
def rows(name):
    with open(os.path.join(data, name)) as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))
def near(text, want):  # a figure printed to 4 significant digits
    return abs(float(text) - want) <= 5e-4 * abs(want)
coll = rows("coll_sweep.csv")
ar = [r for r in coll if r["collective"] == "allreduce"]
big = max(int(r["bytes"]) for r in ar)
bw = [float(r["busbw_GBps"]) for r in ar if int(r["bytes"]) == big][0]
peak = max(float(r["busbw_GBps"]) for r in coll)
p2p = rows("p2p_sweep.csv")
uni = max(float(r["bw_GBps"]) for r in p2p if r["mode"] == "bw")
lat = min(float(r["time_us"]) for r in p2p if r["mode"] == "latency")
summary = open(os.path.join(out, "summary.txt")).read()
page = open(os.path.join(out, "gpu-check.md")).read()
m = re.search(r"^#   coll-nccl-4: allreduce busbw (\S+) GB/s at (\S+) B; peak busbw over all collectives (\S+) GB/s$",
              summary, re.M)
assert m, "no key figure for coll-nccl-4 in summary.txt:\n" + summary[-1500:]
assert m.group(2) == str(big), f"largest allreduce size {m.group(2)}, expected {big}"
assert near(m.group(1), bw), f"allreduce busbw at {big} B: {m.group(1)}, expected {bw} (busbw, not algbw)"
assert near(m.group(3), peak), f"peak busbw {m.group(3)}, expected {peak}"
assert "- " + m.group(0)[4:] in page, "gpu-check.md lacks the key figure " + m.group(0)[4:]
m = re.search(r"^#   p2p-nccl-4: bw (\S+) GB/s, latency (\S+) us$", summary, re.M)
assert m and near(m.group(1), uni) and near(m.group(2), lat), f"p2p key figure {m and m.group(0)}: expected bw {uni}, latency {lat}"
m = re.search(r"^\S+ +busbw-vs-expected +4 .* allreduce busbw (\S+) GB/s at (\d+) B over 4 GPUs = (\S+) of the expected 450 GB/s",
              summary, re.M)
assert m and near(m.group(1), bw) and m.group(2) == str(big) and m.group(3) == f"{bw / 450:.2f}", \
    f"busbw-vs-expected: {m and m.group(0)}: expected {bw} GB/s at {big} B = {bw / 450:.2f}"
print(f"key figures: allreduce busbw {bw} GB/s at {big} B, peak {peak}, p2p bw {uni}, latency {lat}")
PY
then pass "fake node: $(cat "$TMP/keys")"
else fail "fake node: key figures"; sed 's/^/  | /' "$TMP/keys" >&2; tail -5 "$TMP/fake.out" | sed 's/^/  | /' >&2; fi

# ---- without a GPU, a CUDA build says what cudaGetDeviceCount answered (here: no driver), not only "no GPU"
if ldd "$BIN/coll_sweep" 2>/dev/null | grep -q libcudart && ! command -v nvidia-smi >/dev/null; then
  for be in "--backend mpi --mem device" "--backend nccl"; do
    # shellcheck disable=SC2086
    expect_rc 3 "no GPU: $be" -- "$BIN/coll_sweep" $be -b 8 -e 8 -n 1 -w 0
    expect_in "$TMP/err" ": cudaGetDeviceCount: " "no GPU ($be): the CUDA error text"
  done
fi

# ---- NCCL from a Python wheel's layout (nvidia/nccl/lib/libnccl.so.2 only, the header in another
# wheel's include/): the Makefile links it by soname with an rpath. A tree of symlinks to the toolkit here.
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
if [ -e "$CUDA_LIB/libnccl.so.2" ] && [ -f "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" ] && command -v cc >/dev/null; then
  WH=$TMP/site-packages/nvidia
  mkdir -p "$WH/nccl/lib" "$WH/cu13/include"
  ln -s "$CUDA_LIB/libnccl.so.2" "$WH/nccl/lib/"
  ln -s "${CUDA_HOME:-/usr/local/cuda}/include/nccl.h" "$WH/cu13/include/"
  make -s -C "$TESTS_DIR/../.." -n CUDA=1 NCCL_HOME="$WH/nccl" NCCL_INC="$WH/cu13/include" BUILD="$TMP/wb" "$TMP/wb/bin/coll_sweep" \
      > "$TMP/wheel.make" 2>&1
  link=$(grep -- "-o $TMP/wb/bin/coll_sweep" "$TMP/wheel.make")
  case "$link" in *"-L$WH/nccl/lib -Wl,-rpath,$WH/nccl/lib -L"*"-l:libnccl.so.2 "*) pass "wheel NCCL: -L, rpath and soname" ;;
    *) fail "wheel NCCL link line: ${link:-none}" ;; esac
  grep -q -- "-I$WH/cu13/include" "$TMP/wheel.make" && pass "wheel NCCL: NCCL_INC for the header" || fail "no -I$WH/cu13/include"
  # the same flags link and load a program calling NCCL, from the wheel's folder
  flags=${link#*libparabench.a}; flags=${flags%% -o *}
  printf '#include <nccl.h>\n#include <stdio.h>\nint main(void) { int v = 0; ncclGetVersion(&v); printf("%%d\\n", v); return v <= 0; }\n' > "$TMP/v.c"
  # shellcheck disable=SC2086
  if cc "$TMP/v.c" -I"$WH/cu13/include" -I"${CUDA_HOME:-/usr/local/cuda}/include" $flags -o "$TMP/v" 2> "$TMP/v.err"; then
    ldd "$TMP/v" | grep -q "libnccl.so.2 => $WH/nccl/lib/libnccl.so.2" && "$TMP/v" >/dev/null && pass "wheel NCCL: linked, loaded from the wheel's lib/" || fail "wheel NCCL: $(ldd "$TMP/v" | grep nccl)"
  else fail "wheel NCCL: cannot link: $(head -3 "$TMP/v.err")"; fi
fi

# ---- --rehearse: every step's own command line on CPU stand-ins, every judge on their files, the
# summary, gpu-check.md and --pack. 2 GPUs played, so that the multi-rank steps run too.
# The rehearsal plays the CUDA build's steps, its GPU unit cases included: a CPU-only build
# (CUDA=0, as `make sanitize` and tests/mutate.py make) has none to play. Everything above has
# run and must hold.
if ! grep -q -- '-DPB_HAVE_CUDA=1' "$BIN/../.flags" 2>/dev/null; then
  [ "$FAILS" -eq 0 ] || finish
  skip_test "$BIN is a CPU-only build (CUDA=0): the rehearsal needs the CUDA build's binaries (make CUDA=1)"
fi
[ -x "$BIN/coll_sweep" ] && [ -x "$BIN/../tests/test_gpu_nogpu" ] || { fail "no $BIN/coll_sweep or test_gpu_nogpu: build first"; finish; }
rehearse() {   # rehearse OUT [options]
  local out=$1; shift
  PB_REHEARSE_GPUS=2 PB_MPIRUN_ARGS=--oversubscribe timeout 600 bash "$CHECK" --rehearse --launcher mpirun --no-build \
      --build "$BIN/.." --out "$out" "$@" > "$out.stdout" 2>&1
}
LD_LIBRARY_PATH=/before/the/bundle rehearse "$TMP/reh" --node --pack "$TMP/pack"; rc=$?
R=$TMP/reh/summary.txt
[ "$rc" = 0 ] && pass "rehearsal: exit 0" || { fail "rehearsal: exit $rc"; grep '^FAIL' "$R" | sed 's/^/  | /' >&2; }
! grep -q '^FAIL' "$R" && pass "rehearsal: no step failed" || fail "rehearsal: $(grep -c '^FAIL' "$R") steps failed"
for s in mpi-host probe-bf16 probe-fp32 torch-ref probe-vs-torch coll-nccl-1 coll-nccl-graph-1 devtime-pair-1 devtime-batch-1 \
         devtime-vs-pair nccl-bfloat16-inplace-2 nccl-2g-elements-1 coll-nccl-2 busbw-vs-expected p2p-nccl-2 coll-mpidev-2 \
         p2p-mpidev-2 dp-nccl-1 tp-nccl-1 tp-vs-gemm-rate pp-nccl-2 hybrid-nccl-2 dp-mpidev-2 tp-mpidev-2 pp-mpidev-2 \
         p2p-matrix-nccl-2 run-all-nccl-2 pb-nccltests-2; do
  grep -qE "^(PASS|REH) +$s " "$R" && pass "rehearsed: $s" || fail "rehearsal: $s: $(grep -E "^[A-Z]+ +$s " "$R" || echo 'not run')"
done
grep -q '^REH   busbw-vs-expected .*rehearsed, not judged: .* of the expected 450 GB/s' "$R" && pass "rehearsal: busbw against the H200 not judged" || fail "busbw-vs-expected: $(grep busbw-vs-expected "$R")"
grep -q '^REH   devtime-vs-pair .*rehearsed, not judged' "$R" || grep -q '^PASS  devtime-vs-pair ' "$R" && pass "rehearsal: devtime judged on the stand-in's host times" || fail "devtime-vs-pair"
grep -q '^REH   unit-gpu .*GPU cases did not run' "$R" && pass "rehearsal: the GPU unit cases not judged" || fail "unit-gpu: $(grep unit-gpu "$R")"
expect_in "$R" "# rehearsal sizes: capped at PB_REHEARSE_CAP=1M" "rehearsal: the summary names the size cap"
# run_all as users run it, rehearsed on MPI (capped to two of its steps), judged from its own record
RA=$TMP/reh/run-all-nccl-2
grep -q "^rehearsed as: \$ env BUILD=[^ ]* [^ ]*/run_all.sh --no-install --backend mpi --quick --np 2 --out $RA --steps coll_sweep,p2p_matrix$" "$TMP/reh/check.log" \
    && pass "run-all: the checkout's run_all, --backend mpi for nccl" || fail "run-all command: $(grep -m1 'run_all.sh' "$TMP/reh/check.log")"
[ "$(cut -f1,2 "$RA/steps.tsv" | tr '\t\n' ': ')" = "coll_sweep:ok p2p_matrix:ok report:ok " ] \
    && pass "run-all: its steps ran" || fail "run-all steps: $(cat "$RA/steps.tsv" 2>/dev/null)"
grep -q "^REH   run-all-nccl-2 .*rehearsed, not judged: ran on backend mpi, not nccl; ranks bound 'core', not near their GPU .*; 3 steps ok, 0 failed, 0 skipped; backend mpi, 2 ranks " "$R" \
    && pass "run-all: judged, the GPU figures rehearsed" || fail "run-all verdict: $(grep run-all-nccl-2 "$R")"
grep -qF "#   run-all-nccl-2: $(head -1 "$RA/summary.txt")" "$R" && grep -qF "headline: $(head -1 "$RA/summary.txt")" "$R" \
    && pass "run-all: its summary.txt headline in the key figures" || fail "run-all key figure: $(grep 'run-all-nccl-2:' "$R")"
grep -q "^PASS  p2p-matrix-nccl-2 .*1 pairs: latency .*; 0 wrong" "$R" && grep -q "^#   p2p-matrix-nccl-2: 1 pairs" "$R" \
    && pass "p2p-matrix: every pair of 2 ranks" || fail "p2p-matrix: $(grep p2p-matrix-nccl-2 "$R")"
for s in nccltests-allreduce-2 nccltests-sendrecv-2; do
  grep -q "^SKIP  $s .*rehearsal: nccl-tests needs a GPU and NCCL, not run here" "$R" && pass "--node: $s not run, said why" || fail "--node: $(grep "$s" "$R")"
done
grep -q "^SKIP  vs-nccl-tests-2 .*no nccl-tests output" "$R" && pass "--node: no table without nccl-tests" || fail "vs-nccl-tests-2: $(grep vs-nccl "$R")"
grep -qE '^# launches: [0-9]+ through mpirun/srun, [0-9]+ single processes; [0-9]+ s in steps' "$R" && pass "rehearsal: $(grep '^# launches' "$R" | cut -c3-)" || fail "rehearsal: no launch count"
grep -qE '^# total: .* [0-9]+ rehearsed in ' "$R" && pass "rehearsal: rehearsed steps counted" || fail "no rehearsed count"
expect_in "$TMP/reh/gpu-check.md" "# parabench GPU check: REHEARSAL PASS" "rehearsal: one page says rehearsal"
# the devtime sweeps end at their -e: 16 x 16^k reaches 256 MiB (and the 1 MiB cap), 8 x 16^k stops at 128 MiB
grep -q '^devtime-pair-1: 1 rank, no link crossed: allreduce of 1048576 B in ' <(sed -n 's/^#   //p' "$R") && pass "devtime sweep reaches its -e" || fail "devtime sweep end: $(grep 'devtime-pair-1:' "$R")"
# one rank crosses no link: its key figure is the largest allreduce's time, read back from the CSV, and no bandwidth
python3 - "$R" "$TMP/reh/coll-nccl-1.csv" <<'PY' && pass "1 rank: the allreduce's time, no bandwidth" || fail "1-rank key figure: $(grep 'coll-nccl-1:' "$R")"
import csv, re, sys
line = [l for l in open(sys.argv[1]) if l.startswith("#   coll-nccl-1:")][0]
m = re.search(r"1 rank, no link crossed: allreduce of (\d+) B in (\S+) us", line)
assert m and "GB/s" not in line, line
rows = [r for r in csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith("#")) if r["collective"] == "allreduce"]
big = max(int(r["bytes"]) for r in rows)
t = max(float(r["time_us"]) for r in rows if int(r["bytes"]) == big)
assert int(m.group(1)) == big and abs(float(m.group(2)) - t) <= 1e-3 * t + 1e-6, (m.groups(), big, t)
PY
# tp_layer computes in bf16 on cuBLAS (fp32 on the BLAS stand-in): judged against the probe of its type
grep -q '^rehearsed as: .*gpu-check-judge.py tp-vs-gemm tp-nccl-1.csv probe-bf16.csv probe-fp32.csv$' "$TMP/reh/check.log" && pass "tp-vs-gemm: tp_layer against the probes of both types" || fail "tp-vs-gemm arguments: $(grep 'tp-vs-gemm tp-nccl' "$TMP/reh/check.log" | head -1)"
# the model a user trains at its real size: one Llama-3-8B layer at 8192 tokens (rehearsed at 32)
grep -q '^rehearsed as: .* tp_layer --backend mpi --mem host --engine blas --tp 1 --model tiny --seq 32 --layers 1 --seq-list 32 ' "$TMP/reh/check.log" \
    && pass "model-tp-1: the 8B layer's step, rehearsed small" || fail "model-tp-1: $(grep 'model-tp-1' "$TMP/reh/check.log" | head -2)"
grep -q -- '--model llama3-8b --layers 1 --seq-list 8192' "$TMP/plan" 2>/dev/null || grep -rq -- '--model llama3-8b --layers 1 --seq-list 8192' "$TMP/reh/" \
    && pass "model-tp-1: planned at the 8B shape" || fail "model-tp-1: the GPU command does not run llama3-8b at 8192"
# PyTorch runs with the LD_LIBRARY_PATH the check started with, not a bundle's
grep -q '^rehearsed as: \$ env LD_LIBRARY_PATH=/before/the/bundle python3 .*torch-ref torch-ref.csv 256$' "$TMP/reh/check.log" && pass "torch-ref: the LD_LIBRARY_PATH from before the bundle" || fail "torch-ref command: $(grep 'torch-ref torch-ref' "$TMP/reh/check.log" | head -1)"
# compute_probe warms the GPU up (clocks ramp from idle) before it times
[ "$(grep -c '^# warm-up [0-9]* GEMMs of 256 in [0-9]* ms (at least 500 ms)' "$TMP/reh/check.log")" = 2 ] && pass "probes: half a second of GEMMs before timing" || fail "probes: no warm-up line"
# the same in a bundle (case a), whose env.sh puts the bundle's libraries first: PyTorch still gets
# the LD_LIBRARY_PATH from before it (a fake bundle: the build's binaries and such an env.sh)
# (a fake bundle: parabench installed into it as scripts/gpu-bundle.sh does, its tests, such an env.sh).
# Its run_all is the installed one, which builds nothing: run here with no gnuplot on PATH, as on a
# GPU node, it still finishes and says the figures were not drawn.
FB=$TMP/fake-bundle
mkdir -p "$FB/lib"
"$TESTS_DIR/../../scripts/install.sh" install "$BIN/.." "$FB" > "$TMP/fb-install.out" 2>&1 || fail "install into the fake bundle: $(tail -2 "$TMP/fb-install.out")"
ln -s "$BIN/../tests" "$FB/tests"
printf '# a bundle env.sh in brief\nexport LD_LIBRARY_PATH=%s/lib${PB_EXTRA_LD_LIBRARY_PATH:+:$PB_EXTRA_LD_LIBRARY_PATH}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n' "$FB" > "$FB/env.sh"
NOGNU=$TMP/no-gnuplot; mkdir -p "$NOGNU"   # every command of PATH but gnuplot
IFS=: read -r -a dirs <<< "$PATH"
for d in "${dirs[@]}"; do for f in "$d"/*; do n=${f##*/}; [ "$n" = gnuplot ] || [ -e "$NOGNU/$n" ] || ln -s "$f" "$NOGNU/$n" 2>/dev/null; done; done
PATH=$NOGNU LD_LIBRARY_PATH=/before/the/bundle PB_REHEARSE_GPUS=2 timeout 300 bash "$CHECK" --rehearse --bundle "$FB" --out "$TMP/rehb" \
    --only probe-bf16,probe-fp32,torch-ref,probe-vs-torch,run-all-nccl-2 > "$TMP/rehb.stdout" 2>&1
grep -q "^rehearsed as: \$ env LD_LIBRARY_PATH=/before/the/bundle python3 .*torch-ref torch-ref.csv 256$" "$TMP/rehb/check.log" \
    && grep -q "^LD_LIBRARY_PATH=$FB/lib" "$TMP/rehb/check.log" && grep -q '^PASS  probe-vs-torch ' "$TMP/rehb/summary.txt" \
    && pass "bundle: torch-ref without the bundle's LD_LIBRARY_PATH" || fail "bundle: torch-ref: $(grep -m1 'torch-ref torch-ref' "$TMP/rehb/check.log"; grep -m1 '^LD_LIBRARY_PATH' "$TMP/rehb/check.log")"
grep -q "^rehearsed as: \$ $FB/libexec/parabench/run_all.sh --backend mpi --quick --np 2 --out $TMP/rehb/run-all-nccl-2 " "$TMP/rehb/check.log" \
    && pass "bundle: the installed run_all" || fail "bundle: run_all command: $(grep -m1 'run_all.sh' "$TMP/rehb/check.log")"
grep -q "^REH   run-all-nccl-2 .* 3 steps ok, 0 failed, 0 skipped; backend mpi, 2 ranks .*; 0 figures drawn, [0-9]* not (gnuplot is not installed (not on PATH)); headline: allreduce busbw" "$TMP/rehb/summary.txt" \
    && pass "bundle: run_all without gnuplot finishes, its figures said not drawn" || fail "bundle: run-all: $(grep run-all "$TMP/rehb/summary.txt")"
expect_in "$TMP/rehb/check.log" "figures: not drawn: gnuplot is not installed (not on PATH); report.md has the tables" "bundle: run_all's own summary says the figures were not drawn"
grep -q '"bin": "../../bin"' "$FB/libexec/parabench/install.json" && [ ! -e "$TMP/rehb/run-all-nccl-2/logs/build.log" ] \
    && pass "bundle: run_all ran the bundle's binaries and built nothing" || fail "bundle: run_all built or looked elsewhere"

# --pack: at most 8 files, the three pages and a tarball of every other file
P=$TMP/pack
np=$(find "$P" -type f | wc -l)
[ "$np" -le 8 ] && pass "pack: $np files" || fail "pack: $np files (at most 8 come back)"
for f in gpu-check.md summary.txt check.log rest.tar.gz; do [ -s "$P/$f" ] && pass "pack: $f" || fail "pack: no $f"; done
(cd "$TMP/reh" && find . -type f ! -path ./gpu-check.md ! -path ./summary.txt ! -path ./check.log | sed 's|^\./||' | sort) > "$TMP/want"
tar -tzf "$P/rest.tar.gz" | sed 's|^\./||' | grep -v -e '/$' -e '^$' | sort > "$TMP/got"
[ "$(wc -l < "$TMP/want")" -ge 30 ] && cmp -s "$TMP/want" "$TMP/got" && pass "pack: rest.tar.gz holds the other $(wc -l < "$TMP/got") files" || fail "pack: rest.tar.gz: $(diff "$TMP/want" "$TMP/got" | head -5 | tr '\n' ' ')"
cmp -s "$P/summary.txt" "$R" && pass "pack: summary.txt as written" || fail "pack: summary.txt differs"
expect_rc 2 "--pack inside the output folder" -- bash "$CHECK" --rehearse --out "$TMP/reh2" --pack "$TMP/reh2/p"
# --node's table comes back as a file of its own and on gpu-check.md's page (a table left in the folder)
mkdir -p "$TMP/pk"; printf '## allreduce: fabricated\n    8M  86.40  90.00  169.91  163.11  0.960\n' > "$TMP/pk/vs-nccl-tests-2.txt"
PB_REHEARSE_GPUS=2 timeout 120 bash "$CHECK" --rehearse --launcher mpirun --no-build --build "$BIN/.." --only mpi-host \
    --out "$TMP/pk" --pack "$TMP/pk-pack" > /dev/null 2>&1
cmp -s "$TMP/pk/vs-nccl-tests-2.txt" "$TMP/pk-pack/vs-nccl-tests-2.txt" && pass "pack: the nccl-tests table as a file" || fail "pack: no vs-nccl-tests-2.txt: $(ls "$TMP/pk-pack")"
grep -q '^## parabench against nccl-tests (vs-nccl-tests-2.txt)' "$TMP/pk/gpu-check.md" && grep -qF '    8M  86.40  90.00  169.91  163.11  0.960' "$TMP/pk/gpu-check.md" \
    && pass "gpu-check.md: the nccl-tests table" || fail "gpu-check.md lacks the table"

# the sanitizer phase rehearsed: every program's command line without the sanitizer in front
rehearse "$TMP/rehs" --sanitize; rc=$?
[ "$rc" = 0 ] && pass "rehearsal of --sanitize: exit 0" || { fail "rehearsal of --sanitize: exit $rc"; grep '^FAIL' "$TMP/rehs/summary.txt" | sed 's/^/  | /' >&2; }
[ "$(grep -cE '^REH +san-' "$TMP/rehs/summary.txt")" = 10 ] && pass "rehearsal: 10 sanitizer steps" || fail "sanitizer steps: $(grep -c 'san-' "$TMP/rehs/summary.txt")"

# what the rehearsal is for: a judge called wrongly, a filter matching nothing, a missing file fail
mkdir -p "$TMP/bad"
cp "$CHECK" "$TESTS_DIR/../../scripts/gpu-check-judge.py" "$TESTS_DIR/../../scripts/nccl_tests_table.py" "$TMP/bad/"
bad() {   # bad NAME STEPS FIND REPLACE: the rehearsal of STEPS fails once FIND becomes REPLACE
  local name=$1 steps=$2
  python3 - "$CHECK" "$TMP/bad/gpu-check.sh" "$3" "$4" <<'PY'
import sys
src, dst, find, repl = sys.argv[1:]
s = open(src).read()
assert s.count(find) == 1, find
open(dst, "w").write(s.replace(find, repl))
PY
  PB_REHEARSE_GPUS=2 timeout 300 bash "$TMP/bad/gpu-check.sh" --rehearse --launcher mpirun --no-build --build "$BIN/.." \
      --out "$TMP/bad-$name" --only "$steps" > /dev/null 2>&1
  [ $? = 1 ] && grep -q '^FAIL' "$TMP/bad-$name/summary.txt" && pass "rehearsal fails: $name ($(grep -m1 '^FAIL' "$TMP/bad-$name/summary.txt" | cut -c41-120))" \
      || fail "rehearsal did not fail: $name"
}
bad judge-arguments probe-fp32,probe-bf16,tp-nccl-1,tp-vs-gemm-rate "tp-vs-gemm tp-nccl-1.csv probe-bf16.csv probe-fp32.csv" "tp-vs-gemm tp-nccl-1.csv"
bad filter-never-matches coll-nccl-1 'peak=$(csvagg "$c" busbw_GBps max)' 'peak=$(csvagg "$c" busbw_GBs max)'
bad missing-file devtime-pair-1,devtime-batch-1,devtime-vs-pair "devtime devtime-batch-1.csv devtime-pair-1.csv" "devtime devtime-batch-1.csv devtime-pair.csv"
bad sweep-short-of-e devtime-pair-1 "-b 16 -e 256M -f 16 -n 50 -w 5 \$Q --csv devtime-pair-1.csv" "-b 8 -e 256M -f 16 -n 50 -w 5 \$Q --csv devtime-pair-1.csv"
finish
