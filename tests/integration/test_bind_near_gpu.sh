#!/usr/bin/env bash
# scripts/bind-near-gpu.sh against a stand-in nvidia-smi: when hwloc cannot place the
# rank's GPU the command still runs (its exit status and output pass through), unbound,
# with one line on stderr and in PARABENCH_BIND_NOTE; the rank's GPU is its local rank's
# entry of CUDA_VISIBLE_DEVICES (an index or a UUID) when that is set. No GPU, no MPI.
. "$(dirname "$0")/lib.sh"
BIND=$TESTS_DIR/../../scripts/bind-near-gpu.sh
command -v hwloc-bind >/dev/null || skip_test "hwloc-bind not found (the fallback needs the real one to refuse a bus)"

# nvidia-smi listing 4 GPUs on buses no machine has (domain ff), as nvidia-smi prints them.
SMI=$TMP/smi
mkdir -p "$SMI"
cat >"$SMI/nvidia-smi" <<'EOF'
#!/bin/sh
case "$*" in
    *--query-gpu=index,uuid,pci.bus_id*)
        for i in 0 1 2 3; do echo "$i, GPU-aaaa000$i-1111-2222-3333-44445555666$i, 00000000:FF:1$i.7"; done ;;
    *--query-gpu=pci.bus_id*) for i in 0 1 2 3; do echo "00000000:FF:1$i.7"; done ;;
esac
EOF
chmod +x "$SMI/nvidia-smi"
# A stand-in hwloc-bind that knows every bus, says which one it was asked for, and runs the command.
FAKE=$TMP/fakehwloc
mkdir -p "$FAKE"
cat >"$FAKE/hwloc-bind" <<'EOF'
#!/bin/sh
echo "bound near $1" >&2
shift 2
exec "$@"
EOF
chmod +x "$FAKE/hwloc-bind"
# What the test's own environment may hold must not choose the GPU.
unset CUDA_VISIBLE_DEVICES PARABENCH_GPU_OFFSET OMPI_COMM_WORLD_LOCAL_RANK SLURM_LOCALID MPI_LOCALRANKID

# ---- the real hwloc-bind cannot know bus ff:1x.7: the command runs anyway ----
NOTE=$TMP/bind-note.txt
env PATH="$SMI:$PATH" OMPI_COMM_WORLD_LOCAL_RANK=2 PARABENCH_BIND_NOTE="$NOTE" \
    "$BIND" sh -c 'echo "the command ran"; exit 7' >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 7 ]; then pass "an unplaceable GPU: the command still runs, its exit status passes through (7)"
else fail "an unplaceable GPU: exit $rc, expected the command's 7"; sed 's/^/  | /' "$TMP/err" >&2; fi
expect_in "$TMP/out" "the command ran" "the command's output passes through"
expect_in "$TMP/err" "bind-near-gpu.sh: unbound: $(hostname) local rank 2: hwloc cannot place GPU 2 (PCI ff:12.7)" \
    "one line on stderr says the rank runs unbound, and why"
if [ "$(grep -c . "$TMP/err")" -eq 1 ]; then pass "one line on stderr, no more"
else fail "stderr has $(grep -c . "$TMP/err") lines, expected 1"; sed 's/^/  | /' "$TMP/err" >&2; fi
if [ -f "$NOTE" ] && diff -q "$NOTE" "$TMP/err" >/dev/null; then pass "the same line is appended to PARABENCH_BIND_NOTE"
else fail "PARABENCH_BIND_NOTE does not hold the stderr line"; fi
env PATH="$SMI:$PATH" SLURM_LOCALID=1 PARABENCH_BIND_NOTE="$NOTE" "$BIND" true 2>/dev/null
if [ "$(grep -c 'local rank 1: hwloc cannot place GPU 1 ' "$NOTE")" -eq 1 ] && [ "$(wc -l <"$NOTE")" -eq 2 ]; then
    pass "SLURM_LOCALID picks the GPU; a second rank appends its own line"
else fail "the note after a second rank:"; sed 's/^/  | /' "$NOTE" >&2; fi
expect_rc 0 "without PARABENCH_BIND_NOTE the fallback still runs the command" -- \
    env -u PARABENCH_BIND_NOTE PATH="$SMI:$PATH" "$BIND" true

# ---- CUDA_VISIBLE_DEVICES: the local rank's entry of it, by index or UUID ----
bound_bus() { # bound_bus VAR=VALUE...: the bus the stand-in hwloc-bind was given
    env PATH="$FAKE:$SMI:$PATH" "$@" "$BIND" true 2>&1 | sed -n 's/^bound near pci=//p'
}
got=$(bound_bus CUDA_VISIBLE_DEVICES=3,1 OMPI_COMM_WORLD_LOCAL_RANK=0)
if [ "$got" = "ff:13.7" ]; then pass "CUDA_VISIBLE_DEVICES=3,1: local rank 0 binds near GPU 3 (ff:13.7)"
else fail "CUDA_VISIBLE_DEVICES=3,1, local rank 0: bound near '$got', expected GPU 3's ff:13.7"; fi
got=$(bound_bus CUDA_VISIBLE_DEVICES=3,1 OMPI_COMM_WORLD_LOCAL_RANK=1)
if [ "$got" = "ff:11.7" ]; then pass "CUDA_VISIBLE_DEVICES=3,1: local rank 1 binds near GPU 1"
else fail "CUDA_VISIBLE_DEVICES=3,1, local rank 1: bound near '$got', expected ff:11.7"; fi
got=$(bound_bus CUDA_VISIBLE_DEVICES=GPU-aaaa0002 SLURM_LOCALID=0)
if [ "$got" = "ff:12.7" ]; then pass "a UUID (prefix) in CUDA_VISIBLE_DEVICES names its GPU"
else fail "CUDA_VISIBLE_DEVICES=GPU-aaaa0002: bound near '$got', expected ff:12.7"; fi
got=$(bound_bus OMPI_COMM_WORLD_LOCAL_RANK=1 PARABENCH_GPU_OFFSET=2)
if [ "$got" = "ff:13.7" ]; then pass "without CUDA_VISIBLE_DEVICES: physical GPU local rank + offset"
else fail "local rank 1, offset 2: bound near '$got', expected ff:13.7"; fi
env PATH="$FAKE:$SMI:$PATH" CUDA_VISIBLE_DEVICES=7 "$BIND" sh -c 'exit 5' 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 5 ] && grep -q "unbound: .*GPU '7' (CUDA_VISIBLE_DEVICES=7) is not among nvidia-smi's GPUs" "$TMP/err"; then
    pass "a CUDA_VISIBLE_DEVICES entry nvidia-smi does not list: unbound, with the reason"
else fail "CUDA_VISIBLE_DEVICES=7: exit $rc"; sed 's/^/  | /' "$TMP/err" >&2; fi

# ---- a bus hwloc knows: bound as before, with the real hwloc-bind ----
host=$(ls /sys/bus/pci/devices 2>/dev/null | head -n 1)
if [ -n "$host" ] && hwloc-bind "pci=$host" -- true 2>/dev/null; then
    cat >"$TMP/smi1" <<EOF
#!/bin/sh
case "\$*" in *index,uuid,*) echo "0, GPU-bbbb, 0000$host" ;; *) echo "0000$host" ;; esac
EOF
    mkdir -p "$TMP/smi1d" && mv "$TMP/smi1" "$TMP/smi1d/nvidia-smi" && chmod +x "$TMP/smi1d/nvidia-smi"
    env PATH="$TMP/smi1d:$PATH" "$BIND" sh -c 'echo ran; exit 3' >"$TMP/out" 2>"$TMP/err"
    rc=$?
    if [ "$rc" -eq 3 ] && grep -qx ran "$TMP/out" && [ ! -s "$TMP/err" ]; then
        pass "a device hwloc sees ($host): bound, quietly, exit status passes through"
    else fail "a device hwloc sees ($host): exit $rc"; sed 's/^/  | /' "$TMP/err" >&2; fi
fi
# ---- run_all records it: the note file run_all names, read into meta.json's binding.fallback ----
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
mkdir -p "$TMP/run/logs"
cp "$NOTE" "$TMP/run/logs/bind-fallback.txt"
cat "$NOTE" >>"$TMP/run/logs/bind-fallback.txt" # a second step's ranks say the same again
got=$(cd "$ROOT" && python3 -c 'import sys; from suite import meta; print(meta.bind_fallback(sys.argv[1]), meta.bind_fallback(sys.argv[2]))' "$TMP/run" "$TMP")
want=$(cd "$ROOT" && python3 -c 'import sys; print([l.rstrip() for l in open(sys.argv[1])], None)' "$NOTE")
if [ "$got" = "$want" ]; then pass "meta.json's binding.fallback: each rank's line once; null without the file"
else fail "meta.bind_fallback: '$got', expected '$want'"; fi
printf 'n1 slots=2\nn2 slots=2\n' >"$TMP/hosts"
expect_rc 0 "run_all.sh --dry-run on two hosts of GPUs" -- \
    env BUILD="$BUILD" "$ROOT/run_all.sh" --dry-run --hostfile "$TMP/hosts" --gpus-per-node 2 --out "$TMP/never"
expect_in "$TMP/out" "-x PARABENCH_BIND_NOTE $ROOT/scripts/bind-near-gpu.sh" \
    "mpirun passes PARABENCH_BIND_NOTE to the ranks on other hosts"
finish
