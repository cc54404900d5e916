#!/usr/bin/env bash
# A full disk: every writer, on a 64 KiB tmpfs left with a few pages free, stops with exit 3
# on every rank within the time limit (no rank measuring on, no hang), and leaves no temporary,
# no empty or half-written result file (the previous file stays until a new one is whole), and
# a meta.json either absent or complete. Needs root to mount the tmpfs; skipped (77) otherwise.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
[ -x "$BIN/coll_sweep" ] || skip_test "$BIN is not built (make first)"
[ "$(id -u)" -eq 0 ] || skip_test "mounting a tmpfs needs root"
DISK=$TMP/disk
mkdir "$DISK"
mount -t tmpfs -o size=64k tmpfs "$DISK" 2>"$TMP/mount.err" || skip_test "mount -t tmpfs refused: $(head -n 1 "$TMP/mount.err")"
trap 'umount "$DISK" 2>/dev/null; rm -rf "$TMP"' EXIT
LIMIT=60 # seconds: a writer that has not stopped by then hangs

# fill PAGES: an empty disk with PAGES pages of 4 KiB left free, and an old result file of each
# name the writers use, to show it is kept when the new one cannot be written whole.
fill() {
    find "$DISK" -mindepth 1 -delete
    for f in c.csv c.json p.csv p.json w.csv w.json f.csv j.json; do echo "old $f" >"$DISK/$f"; done
    dd if=/dev/zero of="$DISK/fill" bs=4k status=none 2>/dev/null # until the disk is full
    truncate -s "-$(($1 * 4))K" "$DISK/fill"
}

# on_disk NAME: what a writer left on the disk is whole.
on_disk() {
    local tag=$1
    python3 - "$DISK" <<'PY' >"$TMP/disk.check" 2>&1 && pass "$tag: no temporary, no empty or torn file" \
        || { fail "$tag: files left on the full disk"; sed 's/^/  | /' "$TMP/disk.check" >&2; }
import csv, json, os, sys
disk, bad = sys.argv[1], []
for d, _, files in os.walk(disk):
    for name in files:
        p = os.path.join(d, name)
        rel = os.path.relpath(p, disk)
        if name == "fill" or rel.startswith("res/logs/") or name.endswith(".txt") and name != "cluster.txt" \
                or name == "steps.tsv":
            continue  # the filler, and the logs of a run (its steps' output as far as it could be written)
        text = open(p, "rb").read()
        if name.startswith(".") or name.endswith((".tmp", ".part")) or ".tmp." in name:
            bad.append(f"{rel}: a temporary left behind")
        elif not text:
            bad.append(f"{rel}: empty")
        elif text.startswith(b"old "):
            continue  # the previous file, kept
        elif not text.endswith(b"\n"):
            bad.append(f"{rel}: cut mid-line")
        elif name.endswith(".json"):
            try:
                doc = json.loads(text)
            except ValueError as e:
                bad.append(f"{rel}: not JSON: {e}")
                continue
            if name == "meta.json" and "steps" not in doc:
                bad.append(f"{rel}: meta.json without its steps")
        elif name.endswith(".csv"):
            rows = [r for r in csv.reader(l for l in text.decode().splitlines() if l and not l.startswith("#"))]
            if rows and any(len(r) != len(rows[0]) for r in rows):
                bad.append(f"{rel}: a row of another width than the header")
print("\n".join(bad) or "ok")
sys.exit(1 if bad else 0)
PY
}

# ranks TAG NP COMMAND...: under mpirun, which leaves each rank to end on its own (it does not
# abort the job when one rank exits), every rank exits 3 within LIMIT.
ranks() {
    local tag=$1 np=$2; shift 2
    rm -f "$TMP/ranks"
    timeout -k 5 "$LIMIT" mpirun -np "$np" --oversubscribe --bind-to none --mca btl self,vader,tcp \
        --mca orte_abort_on_non_zero_status 0 \
        sh -c '"$@"; rc=$?; echo "rank $OMPI_COMM_WORLD_RANK exit $rc" >>"$RANKS"; exit $rc' sh "$@" \
        </dev/null >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        fail "$tag: still running after $LIMIT s (a rank went on, or hung)"; sed 's/^/  | /' "$TMP/err" | tail -5 >&2
    elif [ "$(grep -c ' exit 3$' "$TMP/ranks" 2>/dev/null)" = "$np" ]; then
        pass "$tag: exit 3 on each of the $np ranks"
    else fail "$tag: ranks: $(tr '\n' ' ' <"$TMP/ranks" 2>/dev/null)"; sed 's/^/  | /' "$TMP/err" | tail -5 >&2; fi
    grep -q "No space left on device" "$TMP/err" && pass "$tag: the message names the full disk" \
        || { fail "$tag: no message naming the full disk"; sed 's/^/  | /' "$TMP/err" | tail -5 >&2; }
}
export RANKS=$TMP/ranks

# single TAG COMMAND...: a writer without MPI exits 3 within LIMIT.
single() {
    local tag=$1; shift
    timeout -k 5 "$LIMIT" "$@" </dev/null >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    [ "$rc" -eq 3 ] && pass "$tag: exit 3" || { fail "$tag: exit $rc, expected 3"; sed 's/^/  | /' "$TMP/err" | tail -5 >&2; }
    grep -q "No space left on device" "$TMP/err" && pass "$tag: the message names the full disk" \
        || { fail "$tag: no message naming the full disk"; sed 's/^/  | /' "$TMP/err" | tail -5 >&2; }
}

# Pages left free: none (the first write fails), and a few (rows are written first, then a write fails).
for free in 0 2; do
    fill $free
    ranks "coll_sweep, $free pages free" 3 "$BIN/coll_sweep" --coll all -b 8 -e 1M -f 8 -n 3 -w 1 \
        --csv "$DISK/c.csv" --json "$DISK/c.json"
    on_disk "coll_sweep, $free pages free"
    fill $free # the CSV alone: its rows fill the disk, and the row written in part is cut back
    ranks "coll_sweep --csv only, $free pages free" 2 "$BIN/coll_sweep" --coll all -b 8 -e 1M -f 2 -n 2 -w 0 \
        --csv "$DISK/c.csv"
    on_disk "coll_sweep --csv only, $free pages free"
    fill $free
    ranks "p2p_sweep, $free pages free" 3 "$BIN/p2p_sweep" --mode all -b 1 -e 1M -f 16 -n 5 -w 1 \
        --csv "$DISK/p.csv" --json "$DISK/p.json"
    on_disk "p2p_sweep, $free pages free"
    fill $free
    ranks "tp_layer, $free pages free" 2 "$BIN/tp_layer" --tp-comm allreduce,sp --model tiny --hidden-list 64,128,256 \
        --seq 64 --layers 1 -n 2 -w 1 --tp 2 --csv "$DISK/w.csv" --json "$DISK/w.json"
    on_disk "tp_layer, $free pages free"
done
# The workloads, with a few pages free: a row rank 0 cannot write stops every rank.
fill 2
ranks "dp_allreduce" 2 "$BIN/dp_allreduce" --overlap none,bucket --model tiny --layers 2 --hidden 128 --seq 64 \
    --grad-bytes 256K,1M,4M -n 2 -w 1 --csv "$DISK/c.csv" --json "$DISK/c.json"
on_disk "dp_allreduce"
fill 2
ranks "pp_pipeline" 2 "$BIN/pp_pipeline" --schedule gpipe,1f1b --model tiny --hidden 128 --seq 64 \
    --micro-batches 1,2,4,8 -n 2 -w 1 --stages 2 --layers 2 --csv "$DISK/p.csv" --json "$DISK/p.json"
on_disk "pp_pipeline"
fill 2
ranks "hybrid_3d" 2 "$BIN/hybrid_3d" --model tiny --layers 2 --hidden 128 --seq 64 --tp 2 --pp 1 --dp 1 \
    --compare-placements -n 2 -w 1 --csv "$DISK/w.csv" --json "$DISK/w.json"
on_disk "hybrid_3d"

# plan: its sweeps read from elsewhere, its outputs written to the full disk.
# sizes to 1 MiB: under load, 8 B to 64 KiB once gave a slope the fit refused (no data, not the disk)
mkdir -p "$TMP/sweeps"
mpi 2 "$BIN/coll_sweep" --coll allreduce -b 8 -e 1M -n 10 -w 1 --csv "$TMP/sweeps/coll_sweep.csv" >/dev/null 2>&1 \
    || fail "coll_sweep for plan --fit's input"
mark_run "$TMP/sweeps"  # a run's folder once its sweep is written: what plan --fit reads
fill 0
single "plan --fit" "$BIN/plan" --fit "$TMP/sweeps" --csv "$DISK/f.csv"
on_disk "plan --fit"
fill 0
single "plan --json" "$BIN/plan" --model llama-7b --cluster a100 --gpus 8 --json "$DISK/j.json"
on_disk "plan --json"

# run_all --quick on the full disk: it stops at the first write its results directory refuses
# (every later step would fail the same way), exit 3, meta.json absent or whole.
for free in 0 4; do
    fill $free
    BUILD=$BUILD timeout -k 5 "$LIMIT" "$ROOT/run_all.sh" --quick --quiet --no-install --out "$DISK/res" \
        >"$TMP/out" 2>"$TMP/err"
    rc=$?
    [ "$rc" -eq 3 ] && pass "run_all, $free pages free: exit 3" \
        || { fail "run_all, $free pages free: exit $rc, expected 3"; sed 's/^/  | /' "$TMP/err" | tail -8 >&2; }
    expect_in "$TMP/err" "No space left on device" "run_all, $free pages free: the message names the full disk"
    grep -q Traceback "$TMP/err" && fail "run_all, $free pages free: a Python traceback" \
        || pass "run_all, $free pages free: a message, not a traceback"
    on_disk "run_all, $free pages free"
done
finish
