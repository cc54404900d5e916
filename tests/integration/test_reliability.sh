#!/usr/bin/env bash
# test-runner: waits (for the hangs and timeouts it provokes: a few s of CPU in 40 s)
# The promises of docs/reliability.md: a hang ends in exit 4 with a message
# naming what is stuck; a rank that dies ends the job and leaves the rows
# already measured on disk, well formed; Ctrl-C leaves no stray processes.
source "$(dirname "$0")/lib.sh"
# The hangs' ranks, left waiting on a peer that skipped (on purpose), yield their processor
# to the other tests instead of spinning on it until the watchdog fires. Only theirs: the
# runs after them measure, and yielding under load makes a loop's rate (and so the count
# a capped size chooses) erratic.
export OMPI_MCA_mpi_yield_when_idle=1

# ---- hang: rank 1 skips its collectives, the watchdog fires ----
t0=$(date +%s.%N)
expect_rc 4 "coll_sweep hang ends with exit 4" -- \
    mpi 3 -x PARABENCH_TEST_SKIP=1 "$BIN/coll_sweep" --sizes 1K -n 50 -w 1 --timeout 2
t1=$(date +%s.%N)
expect_in "$TMP/err" "TIMEOUT: rank 0" "rank 0 reports where it is stuck"
# On time: each stuck rank waited at least --timeout 2 and well under 3x that
# (the watchdog looks every 50 ms); the whole job, launch and the 2 s it gives
# the other ranks to report included, ended after 2 s and within 3x + 12 s.
python3 - "$TMP/err" "$t0" "$t1" <<'PY' && pass "the watchdog fired on time" || fail "the watchdog fired early or late"
import re, sys
waited = [float(w) for w in re.findall(r"stuck for ([0-9.]+) s \(--timeout 2\)", open(sys.argv[1]).read())]
elapsed = float(sys.argv[3]) - float(sys.argv[2])
print(f"waited {waited} s, job {elapsed:.1f} s")
assert waited and all(2 <= w < 3 * 2 for w in waited), waited
assert 2 <= elapsed < 3 * 2 + 12, elapsed
PY
expect_in "$TMP/err" "allreduce of 1024 bytes" "the message names the operation and size"
# In the timed loop (tp_layer's), the rank that skipped its operations waits in
# the next alignment and the rank it left behind in the operation: their lines differ.
expect_rc 4 "tp_layer hang ends with exit 4" -- \
    mpi 2 -x PARABENCH_TEST_SKIP=1 "$BIN/tp_layer" --tp 2 -n 3 -w 1 --hidden 64 --heads 4 --seq 32 -c 0 \
    --unsharded 0 --timeout 2
grep -qE "TIMEOUT: rank 1 .*, timed iteration 0, phase align\." "$TMP/err" &&
    grep -qE "TIMEOUT: rank 0 .*, warm-up iteration 1, phase operation\." "$TMP/err" &&
    pass "the skipping rank says align (the next iteration), the rank waiting for it operation" ||
    { fail "the phases do not single out the skipping rank:"; grep TIMEOUT "$TMP/err" | sed 's/^/  | /' >&2; }

expect_rc 4 "p2p_sweep hang ends with exit 4" -- \
    mpi 2 -x PARABENCH_TEST_SKIP=1 "$BIN/p2p_sweep" --sizes 64 -n 50 -w 1 --timeout 2
expect_in "$TMP/err" "TIMEOUT: rank" "p2p_sweep reports the stuck rank"
# A hang after the measured loop, in the validation exchange: the watchdog is armed there too.
expect_rc 4 "p2p_sweep hang in validation ends with exit 4" -- \
    mpi 2 -x PARABENCH_TEST_SKIP_VALIDATE=1 "$BIN/p2p_sweep" --sizes 64 -n 5 -w 1 --timeout 2
expect_in "$TMP/err" "stuck for" "the validation hang is reported"
expect_in "$TMP/err" "phase validate" "the report names the validation phase"
# The same in a collective's validation: the ranks left waiting name it (iteration 0, the
# one validated), and the rank that skipped, past it and not in a watched operation, prints nothing.
expect_rc 4 "coll_sweep hang in validation ends with exit 4" -- \
    mpi 3 -x PARABENCH_TEST_SKIP_VALIDATE=1 "$BIN/coll_sweep" --sizes 1K -n 5 -w 1 --timeout 2
grep -qE "TIMEOUT: rank 0 .*, timed iteration 0, phase validate\." "$TMP/err" &&
    grep -qE "TIMEOUT: rank 2 .*, timed iteration 0, phase validate\." "$TMP/err" &&
    ! grep -q "TIMEOUT: rank 1 " "$TMP/err" &&
    pass "ranks 0 and 2 stuck in validate at iteration 0, rank 1 silent" ||
    { fail "the collective's validation hang:"; grep TIMEOUT "$TMP/err" | sed 's/^/  | /' >&2; }
unset OMPI_MCA_mpi_yield_when_idle

# The other side: a run longer than --timeout whose operations all complete is not a hang.
# A size of ten million 8-byte all-reduces capped at CAP s progresses for up to CAP s under
# --timeout 1. The cap is a ceiling, not a target: a warm-up slower than the loop gives a
# smaller count, and the loop may end after under a third of the cap. A run that ended before twice
# --timeout tested nothing, so it runs again with twice the cap.
lasted=""
for cap in 3 6 12; do
    t0=$(date +%s.%N)
    expect_rc 0 "a run capped at $cap s under --timeout 1 that keeps completing operations is not stopped" -- \
        mpi 2 "$BIN/coll_sweep" --sizes 8 -n 10000000 -w 1 --max-seconds-per-size "$cap" --timeout 1
    t1=$(date +%s.%N)
    python3 -c 'import sys; sys.exit(not float(sys.argv[2]) - float(sys.argv[1]) >= 2)' "$t0" "$t1" &&
        { lasted=$cap; break; }
    echo "  the run capped at $cap s ended within 2 s: again with twice the cap"
done
[ -n "$lasted" ] \
    && pass "the progressing run ran 2 s or more, twice --timeout (it tested the watchdog's patience)" \
    || fail "the progressing runs all ended within 2 s, too short to test the watchdog"
expect_rc 0 "--timeout 0 disables the watchdog" -- mpi 2 "$BIN/coll_sweep" --sizes 1K -n 3 -w 0 --timeout 0
expect_rc 2 "--timeout -1 is a usage error" -- mpi 2 "$BIN/coll_sweep" --timeout -1
expect_in "$TMP/err" "--timeout" "the message names --timeout"

# ---- a rank killed mid-run: finished rows are on disk, files well formed ----
csv=$TMP/killed.csv json=$TMP/killed.json
mpi 2 "$BIN/coll_sweep" --sizes 1K,2K,4K,8K,16K,32K,64K,128K,256K,512K,1M,2M,4M,8M,16M -n 200 -w 1 \
    --max-seconds-per-size 1 --csv "$csv" --json "$json" >"$TMP/out" 2>"$TMP/err" &
job=$!
# wait for a few rows, then kill rank 1: found among the processes this job
# started, by its MPI rank
for _ in $(seq 100); do
    [ -f "$csv" ] && [ "$(grep -vc '^#' "$csv")" -ge 4 ] && break
    sleep 0.2
done
victim=$(rank_pid "$job" 1)
ranks=$(rank_pid "$job" 0)" $victim"
if [ -n "$victim" ]; then pass "rank 1 is a process of this job (pid $victim)"; kill -9 "$victim"
else fail "rank 1 not found among the job's processes"; fi
wait $job
rc=$?
[ "$rc" -ne 0 ] && pass "the job failed after a rank died (exit $rc)" || fail "the job exited 0 after a rank died"
python3 - "$csv" "$json" <<'PY' && pass "rows measured before the kill are intact" || fail "files after the kill"
import csv, json, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
assert len(rows) >= 3, rows
assert all(r["wrong"] == "0" for r in rows), rows
sizes = [int(r["bytes"]) for r in rows]        # the first sizes, in order, none lost
assert sizes == [1024 << k for k in range(len(sizes))], sizes
assert "# complete" not in open(sys.argv[1]).read(), "an interrupted CSV must not be marked complete"
doc = json.load(open(sys.argv[2]))            # well formed
assert doc["complete"] is False, doc["complete"]
# The JSON is rewritten when its changes double or a second passes, so it may
# lag the CSV (flushed per row) but holds the first of its rows, none lost.
jsizes = [r["bytes"] for r in doc["rows"]]
assert 1 <= len(jsizes) <= len(sizes) and jsizes == sizes[:len(jsizes)], (jsizes, sizes)
PY
# shellcheck disable=SC2086
all_gone $ranks && pass "no rank of the job left" || fail "stray rank processes"

# ---- Ctrl-C: SIGINT to mpirun ----
mpi 2 "$BIN/coll_sweep" --sizes 1K,1M,4M,8M,16M -n 500 -w 1 --max-seconds-per-size 3 --csv "$TMP/int.csv" \
    --json "$TMP/int.json" >/dev/null 2>&1 &
job=$!
for _ in $(seq 100); do [ -f "$TMP/int.csv" ] && [ "$(grep -vc '^#' "$TMP/int.csv")" -ge 2 ] && break; sleep 0.2; done
runner=$(named_pid "$job" mpirun)
ranks="$(rank_pid "$job" 0) $(rank_pid "$job" 1)"
if [ -n "$runner" ] && [ "$(echo $ranks | wc -w)" -eq 2 ]; then pass "this job's mpirun and 2 ranks found"
else fail "this job's mpirun ('$runner') or ranks ('$ranks') not found"; fi
[ -n "$runner" ] && kill -INT "$runner"
wait $job
rc=$?
[ "$rc" -ne 0 ] && pass "the interrupted job exits non-zero ($rc)" || fail "the interrupted job exited 0"
# shellcheck disable=SC2086
all_gone $runner $ranks && pass "no process of the job left after SIGINT" || fail "stray processes after SIGINT"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['rows'])>=1" "$TMP/int.json" \
    && pass "JSON well formed after SIGINT" || fail "JSON after SIGINT"
# ---- temporaries: a user's file is never an atomic writer's temporary ----
# The writers used a fixed PATH.tmp; each of these outputs was then renamed away.
collides() { # NAME FILE -- COMMAND...: the command exits 0 and FILE is still there, ending in # complete
    local name=$1 file=$2; shift 3
    if "$@" >/dev/null 2>"$TMP/collide.err" && [ -f "$file" ] && [ "$(tail -1 "$file")" = "# complete" ]; then
        pass "$name: $(basename "$file") kept"
    else fail "$name: $(basename "$file") lost"; sed 's/^/  | /' "$TMP/collide.err" | head -3 >&2; fi
}
collides "coll_sweep --csv X.json.tmp --json X.json" "$TMP/X.json.tmp" -- \
    mpi 1 "$BIN/coll_sweep" -b 8 -e 64 -n 2 -w 1 --csv "$TMP/X.json.tmp" --json "$TMP/X.json"
collides "pp_pipeline --trace T.csv --csv T.csv.tmp" "$TMP/T.csv.tmp" -- \
    mpi 2 "$BIN/pp_pipeline" --hidden 64 --heads 4 --seq 16 -n 1 -w 1 --layers 2 --trace "$TMP/T.csv" --csv "$TMP/T.csv.tmp"
collides "p2p_sweep --matrix-csv M --csv M-bw.csv.tmp" "$TMP/M-bw.csv.tmp" -- \
    mpi 2 "$BIN/p2p_sweep" --matrix --sizes 8 -n 2 -w 1 --matrix-csv "$TMP/M" --csv "$TMP/M-bw.csv.tmp"
[ -z "$(find "$TMP" -name '.*.??????' | head -1)" ] && pass "no temporary left behind" || fail "temporaries left: $(find "$TMP" -name '.*.??????')"
# ---- a refused run leaves the files of the previous run as they were ----
# The CSV used to be truncated to its header, and the JSON rewritten, before
# the memory check or the buffers' allocation refused the run.
printf 'old csv\n' >"$TMP/old.csv"; printf '{"old": 1}\n' >"$TMP/old.json"
cp "$TMP/old.csv" "$TMP/ref.csv"; cp "$TMP/old.json" "$TMP/ref.json"
untouched() { # NAME CODE -- COMMAND...: exits CODE and old.csv, old.json are byte-identical
    local name=$1 code=$2; shift 3
    "$@" >/dev/null 2>&1
    local rc=$?
    if [ "$rc" -eq "$code" ] && cmp -s "$TMP/old.csv" "$TMP/ref.csv" && cmp -s "$TMP/old.json" "$TMP/ref.json"; then
        pass "$name: exit $code, the old files intact"
    else fail "$name: exit $rc (expected $code) or the old files changed"; fi
}
untouched "coll_sweep -e 64G (memory)" 3 -- "$BIN/coll_sweep" -e 64G --csv "$TMP/old.csv" --json "$TMP/old.json"
untouched "coll_sweep, buffers fail" 3 -- env PARABENCH_TEST_FAIL=buffers:0 \
    "$BIN/coll_sweep" -b 8 -e 64 --csv "$TMP/old.csv" --json "$TMP/old.json"
untouched "dp_allreduce --model gpt-175b (memory)" 3 -- "$BIN/dp_allreduce" --model gpt-175b --csv "$TMP/old.csv" --json "$TMP/old.json"
untouched "plan --calibrate without compute_probe.csv" 3 -- "$BIN/plan" --calibrate "$TESTS_DIR/../acceptance_cases/good" \
    -o "$TMP/old.csv"
[ -z "$(find "$TMP" -name '.old.*' | head -1)" ] && pass "a refused run leaves no temporary" || fail "temporaries left by a refused run"
finish
