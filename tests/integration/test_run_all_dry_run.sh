#!/usr/bin/env bash
# run_all.sh --dry-run: prints every step with its launch line and an upper bound
# on its duration, exits 0, and installs, builds and runs nothing (no results
# folder, no build folder). The estimate's arithmetic is tested by
# test_suite_estimate.py; here, that run_all.sh gives it the world and the
# profile: 1024 ranks, 8 per node, the sampled matrix's 141 rounds.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
RA=$ROOT/run_all.sh
[ -x "$BIN/coll_sweep" ] || fail "$BIN/coll_sweep is missing (it lists the collectives); build it first (make)"
NCOLLS=$("$BIN/coll_sweep" --list collectives | wc -l)
# steps_as_planned: the dry run lists, numbered 1..N, the steps suite/manifest.py plans for a run
# without --reproduce or --acceptance, in its order.
steps_as_planned() {
    python3 - "$TMP/out" "$ROOT" <<'PY'
import re, sys
sys.path.insert(0, sys.argv[2])
from suite import manifest
got = re.findall(r"^\[(\d+)/(\d+)\] (\S+): ", open(sys.argv[1]).read(), re.M)
want = [s.name for s in manifest.plan(manifest.Run("default", 2, dry_run=True))]
assert [name for _, _, name in got] == want, (got, want)
assert [(int(k), int(n)) for k, n, _ in got] == [(i + 1, len(want)) for i in range(len(want))], got
PY
}

expect_rc 0 "--dry-run --np 1024 --ranks-per-node 8" -- \
    env BUILD="$BUILD" "$RA" --dry-run --np 1024 --ranks-per-node 8 --out "$TMP/never"
[ -e "$TMP/never" ] && fail "--dry-run made the results folder"
expect_in "$TMP/out" "nothing is installed, built or run" "says it runs nothing"
steps_as_planned && pass "the manifest's steps, numbered in order" || fail "the steps listed are not the manifest's"
launched() { grep "^\[[0-9]*/[0-9]*\] $1: " "$TMP/out"; }
launched p2p_matrix | grep -qF "p2p_matrix: timeout -k 10 900 mpirun -np 1024" && pass "the matrix step's launch line" ||
    fail "the matrix step's launch line: $(launched p2p_matrix)"
expect_in "$TMP/out" "--npernode 8" "the launch line places 8 ranks per node"
expect_in "$TMP/out" "    p2p pair: ranks 0 and 8 (rail 0, nodes 0 and 1)" "the p2p step's pair: one rail, two nodes"
expect_in "$TMP/out" "1024 ranks on 128 node(s) of 8" "the estimate's world"
expect_in "$TMP/out" "141 rounds x 2 sizes x 1 s cap" "the matrix's rounds, from the sampled schedule"
expect_in "$TMP/out" "$NCOLLS collectives x 12 sizes x 3 s cap" "the default profile's sweep caps, every listed collective"
expect_in "$TMP/out" "upper bound" "says it is an upper bound"
grep -q '^total .* at most' "$TMP/out" && pass "a total" || fail "no total line"

# The matrix at 1,024 GPUs (docs/placement.md, "The matrix at scale"): sampled pairs, said with
# the rounds and the NCCL connection memory a rank is expected to hold.
expect_rc 0 "--dry-run --np 1024 --ranks-per-node 8 --gpus-per-node 8 --gpu h100 --backend nccl" -- \
    env BUILD="$BUILD" "$RA" --dry-run --np 1024 --ranks-per-node 8 --gpus-per-node 8 --gpu h100 --backend nccl
expect_in "$TMP/out" "    p2p matrix: sampled pairs above 64 ranks (--matrix-pairs all for every pair): 141 rounds instead of 1023: every node pair's rails, a cross-rail shift in each of the first 7 node rounds, every pair inside a node; up to 141 peers a rank: NCCL connection buffers expected 2.20 GiB a rank (16 MiB a peer; an expectation, not measured)" \
    "the matrix's line: sampled, its rounds and the NCCL memory a rank"
# cp_attention's -c 1 at llama3-70b over 65536 tokens: checking every row would take hours on the
# host, so its shape says that a bounded sample of rows is checked (pb_cp_check_rows; test_cp pins 16).
expect_in "$TMP/out" "; -c 1 checks O and dQ of 16 of each block's 8192 rows a head, not dK and dV" \
    "cp_attention at GPU size: its check is a bounded sample of rows, said in its shape"
# tp_layer's and pp_pipeline's references (the unsharded layers, each stage's chunk run again) at
# llama3-70b: where they are expected not to fit as configured, the shape says how -c 1 checks.
# Beside the sharded layers (27.70 GiB at s 16384), the unsharded ones do not fit even recomputing.
expect_in "$TMP/out" "; -c 1 expected to check s 16384 NOT validated (the unsharded layers need" \
    "tp_layer at GPU size: its longest point not validated, said in its shape"
# Beside a stage of 2 layers and its 32 micro-batches' buffers (48.12 GiB), the 2 layers run again fit recomputing.
expect_in "$TMP/out" "; -c 1 expected to check each stage's 2 layers again recomputing (kept they need" \
    "pp_pipeline at GPU size: checked by a recomputing reference, said in its shape"
grep -qE "expected to check (s 4096|s 8192)|, s 8192 " "$TMP/out" &&
    fail "tp_layer at GPU size: a point whose reference fits as configured is said to be checked otherwise" ||
    pass "tp_layer at GPU size: s 4096 and 8192, whose references fit as configured, are not named"
# At llama3-405b two layers run again beside a stage that recomputes everything do not fit 80 GiB.
expect_rc 0 "--dry-run --np 1024 ... --model llama3-405b" -- env BUILD="$BUILD" "$RA" --dry-run --np 1024 \
    --ranks-per-node 8 --gpus-per-node 8 --gpu h100 --backend nccl --model llama3-405b
expect_in "$TMP/out" "; -c 1 expected NOT to validate: each stage's 2 layers run again need" \
    "pp_pipeline at llama3-405b: not validated, said in its shape"
expect_rc 0 "--dry-run --np 64 --ranks-per-node 8" -- env BUILD="$BUILD" "$RA" --dry-run --quick --np 64 --ranks-per-node 8
expect_in "$TMP/out" "    p2p matrix: every pair, 63 rounds; up to 63 peers a rank" "64 ranks: every pair"

# At cluster scale (docs/run_all.md, "Shapes at scale"): TP inside a node, one stage per node,
# and a bound the default profile keeps within 30 min, --quick within 5 (a new step's bound must fit:
# docs/ARCHITECTURE.md, "A step of run_all.sh").
launched tp_layer | grep -q -- " --tp 8 " && pass "1024 ranks: tp_layer runs --tp 8" || fail "1024 ranks: tp_layer: $(launched tp_layer)"
launched pp_pipeline | grep -q -- " --pp-stride 8 " && pass "1024 ranks: pp_pipeline runs --pp-stride 8" \
    || fail "1024 ranks: pp_pipeline: $(launched pp_pipeline)"
expect_in "$TMP/out" "    shape: TP 8 inside each node" "the dry run prints each shape"
# at_most SECONDS TAG: the printed total is at most SECONDS
at_most() {
    local total; total=$(awk '$1 == "total" {print $2}' "$TMP/out")
    if [ -n "$total" ] && [ "$total" -le "$1" ]; then pass "$2: total $total s <= $1 s"; else fail "$2: total '$total' s > $1 s"; fi
}
at_most 1800 "1024 ranks, default profile"

# A million ranks (within the 2^20 maximum): the estimate takes no time per rank, so the dry
# run takes about as long as at 8 ranks, measured just before on the same machine (the bound is
# a ratio, not seconds: a loaded or sanitized run is slower at both). Above the maximum: exit 2.
dry_us() { # RANKS RPN: microseconds of one dry run (its checks recorded)
    local t0=${EPOCHREALTIME/./}
    expect_rc 0 "--dry-run --np $1 --ranks-per-node $2" -- \
        env BUILD="$BUILD" "$RA" --dry-run --np "$1" --ranks-per-node "$2" --out "$TMP/never"
    US=$((${EPOCHREALTIME/./} - t0))
}
secs() { printf '%d.%02d' $(($1 / 1000000)) $(($1 % 1000000 / 10000)); }
# Each try times the 8 ranks just before the million, so that both see the same load: the
# machine is shared with the other tests, and a load spike during one try is not the suite's
# cost (a cost growing with the ranks fails every try). Up to 5 tries, the first that holds.
for rpn in 8 1000000; do
    for _ in 1 2 3 4 5; do
        dry_us 8 8
        ref=$US
        dry_us 1000000 "$rpn"
        [ "$US" -lt $((3 * ref + 500000)) ] && break
    done
    [ "$US" -lt $((3 * ref + 500000)) ] &&
        pass "--dry-run at 10^6 ranks of $rpn per node: $(secs "$US") s, at 8 ranks $(secs "$ref") s" ||
        fail "--dry-run at 10^6 ranks of $rpn per node took $(secs "$US") s, more than 3x the 8 ranks' $(secs "$ref") s + 0.5 s"
done
expect_in "$TMP/out" "p2p_matrix: timeout" "10^6 ranks: the matrix step is launched"
expect_rc 0 "--dry-run --np 1048576 (the maximum)" -- env BUILD="$BUILD" "$RA" --dry-run --np 1048576 --ranks-per-node 8
expect_in "$TMP/out" "131085 rounds" "2^20 ranks: the sampled matrix's rounds, (nodes - 1) + 7 + 7"
for bad in 0 -1 2000000 99999999999999999999; do
    expect_rc 2 "--dry-run --np $bad" -- env BUILD="$BUILD" "$RA" --dry-run --np "$bad"
    expect_in "$TMP/err" "option --np: '$bad' is not accepted; expected an integer from 1 to 1048576" "--dry-run --np $bad: names --np and the range"
done
expect_rc 0 "--dry-run --quick --np 1024 --ranks-per-node 8" -- \
    env BUILD="$BUILD" "$RA" --dry-run --quick --np 1024 --ranks-per-node 8
at_most 300 "1024 ranks, --quick"

# --reproduce: its steps listed with their real commands (no arguments file read), and estimated.
expect_rc 0 "--dry-run --reproduce" -- "$RA" --dry-run --quick --np 2 --reproduce
expect_in "$TMP/out" "repro_setup: python3 $ROOT/scripts/reproduce.py setup" "repro_setup's command (the script by its full path)"
expect_in "$TMP/out" "# + the arguments repro_setup chooses" "repro_dp's arguments come from repro_setup"
grep -q '^repro_busbw .*1 collective x 7 sizes x 0.5 s cap' "$TMP/out" && pass "repro_busbw estimated" || fail "repro_busbw not estimated"
[ -s "$TMP/err" ] && fail "--dry-run --reproduce wrote to stderr: $(head -2 "$TMP/err")" || pass "nothing on stderr"

# A build folder that does not exist is not made: no build, no estimate, still exit 0.
expect_rc 0 "--dry-run without a build" -- env BUILD=no-such-build "$RA" --dry-run --quick --np 4
[ -e "$ROOT/no-such-build" ] && { fail "--dry-run built into no-such-build"; rm -rf "$ROOT/no-such-build"; }
expect_in "$TMP/out" "no estimate: " "says why there is no estimate"
steps_as_planned && pass "still lists the steps" || fail "without a build, the steps listed are not the manifest's"
# A hostfile's nodes are its host lines: comments, blank lines and comment-only lines are not hosts.
printf '# the racks\nn1 slots=4 # first\n\n  # spare\nn2 slots=4\n' >"$TMP/two-nodes.hosts"
expect_rc 0 "--dry-run --hostfile (2 hosts of 4 slots, comments) --np 8" -- \
    env BUILD="$BUILD" "$RA" --dry-run --quick --no-install --hostfile "$TMP/two-nodes.hosts" --np 8
expect_in "$TMP/out" "8 ranks on 2 node(s) of 4" "a hostfile's comment lines are not nodes"
# Binding is decided from the ranks each node gets, whatever gave the count: 4 slots of one
# host on a machine of 2 cores (a fake nproc) run unbound, as --np 4 does; mpirun would refuse
# --bind-to core, and srun --cpu-bind=cores, for every step.
mkdir -p "$TMP/nproc2"; printf '#!/bin/sh\necho 2\n' >"$TMP/nproc2/nproc"; chmod +x "$TMP/nproc2/nproc"
printf 'localhost slots=4\n' >"$TMP/four.hosts"
mkdir -p "$TMP/slurmbin"; printf '#!/bin/sh\necho "MPI plugin types are..."; echo "        pmix"\n' >"$TMP/slurmbin/srun"; chmod +x "$TMP/slurmbin/srun"
for how in "--hostfile $TMP/four.hosts" "--np 4" "SLURM_NTASKS=4"; do
    case $how in SLURM*) args=(); envs=(SLURM_JOB_ID=1 "$how") ;; *) read -r -a args <<<"$how"; envs=() ;; esac
    expect_rc 0 "--dry-run, 4 ranks on 2 cores from $how" -- \
        env "${envs[@]}" PATH="$TMP/nproc2:$TMP/slurmbin:$PATH" BUILD="$BUILD" "$RA" --dry-run --quick --no-install "${args[@]}"
    expect_in "$TMP/out" "4 ranks (2 cores)" "4 ranks from $how"
    expect_in "$TMP/out" "bound to: none" "4 ranks on 2 cores from $how: unbound"
    grep -q -- "--bind-to core\|--cpu-bind=cores" "$TMP/out" && fail "4 ranks on 2 cores from $how: a step binds to cores"
done

# GPUs (a CUDA build and nvidia-smi listing devices): a rank per GPU by default, bound near it,
# whatever the cores. On PATH, a fake nvidia-smi lists 1, then 3 GPUs, and a fake ldd says the
# binaries link NCCL (as a CUDA build's do), so this runs on any build; without them (this
# machine) a rank per core.
mkdir -p "$TMP/smi"
printf '#!/bin/sh\necho "\tlibnccl.so.2 => /usr/lib/libnccl.so.2 (0x0)"\n' >"$TMP/smi/ldd"
chmod +x "$TMP/smi/ldd"
for n in 1 3; do
    fake_gpus "$TMP/smi" $n
    expect_rc 0 "--dry-run with $n GPU(s) listed" -- env PATH="$TMP/smi:$PATH" BUILD="$BUILD" "$RA" --dry-run --quick
    expect_in "$TMP/out" "$n ranks ($n GPUs), mpirun, bound to: gpu" "$n GPU(s): $n rank(s), bound near their GPU"
done
# The cores come from nproc; when it cannot say (fails, or prints no number), one core is
# assumed, and the default is then 2 ranks. A fake nproc on PATH for each case.
mkdir -p "$TMP/nproc"
for fake in 'echo 4; exit 1' 'echo unknown'; do
    printf '#!/bin/sh
%s
' "$fake" >"$TMP/nproc/nproc"
    chmod +x "$TMP/nproc/nproc"
    expect_rc 0 "--dry-run, nproc: $fake" -- env PATH="$TMP/nproc:$PATH" BUILD="$BUILD" "$RA" --dry-run --quick
    expect_in "$TMP/out" "2 ranks (1 cores)" "nproc: $fake: 1 core assumed"
done
# One rank per core fills the machine without oversubscribing it; one more rank does (4 cores, a fake nproc).
printf '#!/bin/sh\necho 4\n' >"$TMP/nproc/nproc"
for np in 4 5; do
    expect_rc 0 "--dry-run --np $np on 4 cores" -- env PATH="$TMP/nproc:$PATH" BUILD="$BUILD" "$RA" --dry-run --quick --np $np
    launch=$(grep -m1 '\[1/' "$TMP/out")
    case "$np:$launch" in
        4:*--oversubscribe*) fail "--np 4 on 4 cores launched with --oversubscribe: $launch" ;;
        5:*--oversubscribe*) pass "--np 5 on 4 cores: --oversubscribe" ;;
        4:*"mpirun -np 4 --map-by core --bind-to core "*) pass "--np 4 on 4 cores: a rank per core, bound, not oversubscribed" ;;
        *) fail "--np $np on 4 cores launched as: $launch" ;;
    esac
done
finish
