#!/usr/bin/env bash
# pp_pipeline under mpirun with 2-4 ranks: validated results for every
# schedule, sane efficiencies, 1F1B's measured activation peak below GPipe's
# when m > p, a well-formed trace, replicas, the communicators each design
# holds, and exit codes for bad inputs.
source "$(dirname "$0")/lib.sh"
COLS=stages,micro_batches,schedule,link_class,act_bytes,t_fwd_us,t_bwd_us,step_us,efficiency,efficiency_theory
COLS=$COLS,layers,hidden,seq,micro_batch,bubble_fraction,p2p_wait_us,peak_act_bytes,stage_peak_act_bytes
COLS=$COLS,oversubscribed,wrong
SMALL="--hidden 64 --heads 4 --seq 16 -n 2 -w 1"

for np in 2 3 4; do
    # One timed step (-n 1): the trace (the last step) is the step the row reports.
    expect_rc 0 "gpipe + 1f1b, $np stages, m = 1,$((np + 2))" -- \
        mpi $np "$BIN/pp_pipeline" --hidden 64 --heads 4 --seq 16 -w 1 -n 1 --layers $((np * 2)) --micro-batches 1,$((np + 2)) \
        --schedule gpipe,1f1b --csv "$TMP/p$np.csv" --json "$TMP/p$np.json" --trace "$TMP/t$np.csv"
    python3 "$TESTS_DIR/results.py" "$TMP/p$np.csv" "$TMP/p$np.json" --columns $COLS --rows 4 --zero-wrong \
        --complete --expect stages=$np --expect link_class=intra --positive step_us --positive peak_act_bytes \
        && pass "CSV/JSON of $np stages" || fail "CSV/JSON of $np stages"
    expect_in "$TMP/out" "# wrong values: 0 OK" "validation passes ($np stages)"
    python3 - "$TMP/p$np.csv" "$TMP/t$np.csv" $np <<'PY' && pass "efficiency, memory and trace ($np stages)" || fail "efficiency, memory and trace ($np stages)"
import csv, sys
from collections import defaultdict
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
p = int(sys.argv[3])
peak = {}
for r in rows:
    m = int(r["micro_batches"])
    e, th = float(r["efficiency"]), float(r["efficiency_theory"])
    assert abs(th - m / (m + p - 1)) < 1e-6, r
    assert abs(float(r["bubble_fraction"]) - (1 - e)) < 1e-3, r
    stages = r["stage_peak_act_bytes"].split(";")
    assert len(stages) == p and max(int(s) for s in stages) == int(r["peak_act_bytes"]), r
    peak[(r["schedule"], m)] = int(r["peak_act_bytes"])
big = p + 2
assert peak[("1f1b", big)] < peak[("gpipe", big)], peak          # measured: 1F1B holds p, GPipe m
assert peak[("gpipe", big)] == big * peak[("gpipe", 1)], peak
assert peak[("1f1b", big)] == p * peak[("1f1b", 1)], peak
# Trace: header, known events, end >= start, every (rank, mb) has fwd and bwd.
lines = open(sys.argv[2]).read().splitlines()
assert lines[0] == "schedule,stages,virtual_stages,micro_batches,replica,rank,stage,chunk,mb,event,start_us,end_us"
ev = list(csv.DictReader(lines))
seen = defaultdict(set)
kinds = {"fwd", "bwd", "recv_act", "recv_grad", "send_act", "send_grad", "send_wait"}
for e in ev:
    assert e["event"] in kinds, e
    assert float(e["end_us"]) >= float(e["start_us"]) >= 0, e
    seen[(e["schedule"], e["micro_batches"], e["rank"])].add((e["event"], e["mb"]))
for (s, m, rank), got in seen.items():
    for k in range(int(m)):
        assert ("fwd", str(k)) in got and ("bwd", str(k)) in got, (s, m, rank, k)
assert len(seen) == 4 * p, len(seen)
# Activations flow down the pipeline, gradients back up: the first stage receives no activation,
# the last no gradient, and every other stage receives one of each per micro-batch.
for e in ev:
    assert not (e["event"] == "recv_act" and e["stage"] == "0"), e
    assert not (e["event"] == "recv_grad" and e["stage"] == str(p - 1)), e
for (s, m, rank), got in seen.items():
    if rank not in ("0", str(p - 1)):
        assert all(("recv_act", str(k)) in got and ("recv_grad", str(k)) in got for k in range(int(m))), (s, m, rank)
# The measured efficiency, derived independently from the trace: the slowest
# stage's busy time (its fwd and bwd events) over the step time.
# Each stage's waits likewise: its receives, and the sends completed at the step's end.
busy, wait = defaultdict(float), defaultdict(float)
into = {"fwd": busy, "bwd": busy, "recv_act": wait, "recv_grad": wait, "send_wait": wait}
for e in ev:
    if e["event"] in into:
        into[e["event"]][(e["schedule"], e["micro_batches"], e["rank"])] += float(e["end_us"]) - float(e["start_us"])
for r in rows:
    ideal = max(v for k, v in busy.items() if k[:2] == (r["schedule"], r["micro_batches"]))
    want = ideal / float(r["step_us"])
    assert abs(float(r["ideal_us"]) - ideal) <= 1e-4 * ideal + 0.01, (r["ideal_us"], ideal)
    assert abs(float(r["efficiency"]) - want) <= 1e-4 * want + 1e-6, (r["efficiency"], want)
    # Each stage's busy time and wait as the row gathers them, against its rank's trace (one pipeline: rank = stage).
    for column, per_stage in (("stage_busy_us", busy), ("stage_wait_us", wait)):
        got = [float(x) for x in r[column].split(";")]
        trace = [per_stage[(r["schedule"], r["micro_batches"], str(s))] for s in range(p)]
        assert all(abs(g - t) <= 1e-4 * t + 0.1 for g, t in zip(got, trace)), (column, got, trace)
PY
done

expect_rc 0 "interleaved, 2 stages x 2 chunks, m = 1,2,4 (m = 1 skipped)" -- \
    mpi 2 "$BIN/pp_pipeline" $SMALL --layers 8 --micro-batches 1,2,4 --schedule interleaved --csv "$TMP/i.csv" \
    --json "$TMP/i.json"
python3 "$TESTS_DIR/results.py" "$TMP/i.csv" "$TMP/i.json" --columns $COLS --rows 2 --zero-wrong --complete \
    --expect schedule=interleaved && pass "interleaved rows" || fail "interleaved rows"
expect_in "$TMP/out" "interleaved skipped for m=1" "interleaved notes the skipped m"

expect_rc 0 "4 ranks as 2 replicas of a 2-stage pipeline" -- \
    mpi 4 "$BIN/pp_pipeline" $SMALL --layers 4 --stages 2 --micro-batches 4 --csv "$TMP/r.csv" --json "$TMP/r.json"
python3 "$TESTS_DIR/results.py" "$TMP/r.csv" "$TMP/r.json" --columns $COLS --rows 2 --zero-wrong --complete \
    --expect replicas=2 --expect stages=2 && pass "replica rows" || fail "replica rows"

expect_rc 0 "oversubscribed run is recorded" -- \
    mpi 4 "$BIN/pp_pipeline" $SMALL --layers 4 --micro-batches 2 --schedule 1f1b --json "$TMP/o.json"
# Against the node's cores as hwloc counts them (nproc counts hardware threads).
python3 - "$TMP/o.json" <<'PY' && pass "oversubscription in metadata and rows" || fail "oversubscription in metadata and rows"
import json, sys
d = json.load(open(sys.argv[1]))
want = 4 > d["meta"]["topology"]["cores"]
assert bool(d["meta"]["oversubscribed"]) == want, d["meta"]["oversubscribed"]
assert all(bool(r["oversubscribed"]) == want for r in d["rows"])
PY
# The other side: exactly one rank per core is not oversubscribed. The metadata is every benchmark's; coll_sweep is the cheapest.
cores=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["meta"]["topology"]["cores"])' "$TMP/o.json")
expect_rc 0 "one rank per core ($cores)" -- \
    mpi "$cores" "$BIN/coll_sweep" --coll allreduce -b 8 -e 8 -n 1 -w 0 --json "$TMP/cores.json"
python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["meta"]["oversubscribed"] is not False)' \
    "$TMP/cores.json" && pass "$cores ranks on $cores cores: not oversubscribed" \
    || fail "$cores ranks on $cores cores recorded as oversubscribed"

# The default iteration counts (docs/pp_pipeline.md: 5 timed steps, 1 warm-up, 30 s cap) are the metadata's.
expect_rc 0 "default iterations" -- \
    mpi 2 "$BIN/pp_pipeline" --hidden 64 --heads 4 --seq 16 --layers 2 --micro-batches 2 --schedule 1f1b --json "$TMP/d.json"
python3 -c 'import json, sys; it = json.load(open(sys.argv[1]))["meta"]["iterations"]; print(it)
assert it == "5 (+1 warm-up) per configuration; at most 30 s per configuration, warm-up included", it' "$TMP/d.json" \
    >"$TMP/it" 2>&1 && pass "metadata: $(head -1 "$TMP/it")" || { fail "metadata: iterations"; cat "$TMP/it" >&2; }

# The fault makes one wrong value in each of a stage's five checks (docs/pp_pipeline.md):
# an output and an input gradient against its chunks' reference, a weight gradient, and the
# activation and gradient it received, altered before it computes on them, which only the
# links show (against the seeded tensors on the first and last stage, against the
# neighbour's hash elsewhere). Each check that counted nothing would make it 4.
for rank in 0 1; do
    expect_rc 1 "the fault on rank $rank exits 1" -- \
        mpi 2 -x PARABENCH_TEST_CORRUPT=$rank "$BIN/pp_pipeline" $SMALL --layers 2 --micro-batches 2 --schedule 1f1b
    expect_in "$TMP/out" "# wrong values: 5 FAILED" "the footer counts its 5 wrong values (rank $rank)"
done
# Interleaved: rank 1's chunks are virtual stages 1 and 3 (between stage 0's two chunks, and the last).
expect_rc 1 "the fault on rank 1, interleaved, exits 1" -- \
    mpi 2 -x PARABENCH_TEST_CORRUPT=1 "$BIN/pp_pipeline" $SMALL --layers 4 --micro-batches 2 --schedule interleaved
expect_in "$TMP/out" "# wrong values: 5 FAILED" "the footer counts its 5 wrong values (interleaved)"
# Two replicas: rank 3 is stage 1 of the second, checked there, and the count reaches
# rank 0's footer only through the sum over ranks.
expect_rc 1 "the fault on rank 3, of the second replica, exits 1" -- \
    mpi 4 -x PARABENCH_TEST_CORRUPT=3 "$BIN/pp_pipeline" $SMALL --layers 2 --stages 2 --micro-batches 2 --schedule 1f1b
expect_in "$TMP/out" "# wrong values: 5 FAILED" "the footer counts the other replica's wrong values"

# bf16 requested: the dtype column is the type computed in (fp32 where the
# CPU or the BLAS lacks bf16, as Debian's OpenBLAS does), and act_bytes and
# peak_act_mb are in that type's micro-batches (gpipe holds m, 1f1b p).
expect_rc 0 "--compute-dtype bf16" -- mpi 2 "$BIN/pp_pipeline" $SMALL --layers 4 --micro-batches 3 \
    --schedule gpipe,1f1b --compute-dtype bf16 --csv "$TMP/bf.csv"
python3 - "$TMP/bf.csv" <<'PY' && pass "bf16 rows in the effective type" || fail "bf16 rows in the effective type"
import csv, sys
rows = list(csv.DictReader(l for l in open(sys.argv[1]) if not l.startswith("#")))
assert len(rows) == 2, rows
for r in rows:
    size = {"float": 4, "bfloat16": 2}[r["dtype"]]
    assert int(r["act_bytes"]) == int(r["micro_batch"]) * int(r["seq"]) * int(r["hidden"]) * size, r
    held = {"gpipe": 3, "1f1b": 2}[r["schedule"]]
    assert abs(float(r["peak_act_mb"]) - held) < 1e-9, (r["schedule"], r["peak_act_mb"])
    assert int(r["wrong"]) == 0, r
PY

# Bad inputs: exit 2 naming the option, 3 for too few ranks.
while IFS='|' read -r args fragment; do
    # shellcheck disable=SC2086
    expect_rc 2 "bad option: $args" -- mpi 2 "$BIN/pp_pipeline" $SMALL $args </dev/null  # mpirun reads stdin
    expect_in "$TMP/err" "$fragment" "message for '$args' names '$fragment'"
done <<'CASES'
--layers 3|--stages
--micro-batches 0|--micro-batches
--micro-batches 2,,4|--micro-batches
--schedule zigzag|--schedule
--stages 0|--stages
--layers 4 --schedule interleaved --virtual-stages 4|--virtual-stages
--layers 4 --schedule interleaved --micro-batches 3|--micro-batches
--layers 4 --schedule 1f1b,interleaved --virtual-stages 4|--virtual-stages
CASES
# --virtual-stages' range, both ends and just past them (a dry run: --validate, no MPI)
for v in 2 64; do
    expect_rc 0 "--virtual-stages $v accepted" -- "$BIN/pp_pipeline" --schedule interleaved --virtual-stages $v \
        --layers 128 --validate 2:2
done
for v in 1 65; do
    expect_rc 2 "--virtual-stages $v refused" -- "$BIN/pp_pipeline" --schedule interleaved --virtual-stages $v \
        --layers 128 --validate 2:2
    expect_in "$TMP/err" "'$v' is out of range; expected an integer in [2, 64]" "--virtual-stages $v: the range named"
done
# Without the check (-c 0) nothing is captured: the first stage's input gradients are not copied anywhere.
expect_rc 0 "-c 0: the pipeline runs unchecked" -- mpi 2 "$BIN/pp_pipeline" $SMALL --layers 2 --micro-batches 2 -c 0
# and claims no verdict it did not reach (the checked runs' "wrong values: 0 OK" footer)
grep -q "wrong values" "$TMP/out" && fail "-c 0 printed a validation verdict: $(grep "wrong values" "$TMP/out")" \
    || pass "-c 0: no 'wrong values' verdict"
# Every benchmark's output starts with its name, as the result files' readers expect.
[ "$(head -n 1 "$TMP/out")" = "# parabench pp_pipeline" ] && pass "the output's first line names the benchmark" \
    || fail "first line: '$(head -n 1 "$TMP/out")', expected '# parabench pp_pipeline'"
# --pp-stride 2 on 4 ranks: pipelines {0,2} and {1,3}, stage = (rank mod 4) / 2, validated like any other
if mpi 4 "$BIN/pp_pipeline" $SMALL --layers 2 --stages 2 --pp-stride 2 --micro-batches 2 --trace "$TMP/stride.csv" \
    >"$TMP/stride.txt" 2>&1 && grep -q "wrong values: 0 OK" "$TMP/stride.txt"; then
    got=$(awk -F, 'NR > 1 { print $5 ":" $6 ":" $7 }' "$TMP/stride.csv" | sort -u | tr '\n' ' ')
    [ "$got" = "0:0:0 0:2:1 1:1:0 1:3:1 " ] && pass "--pp-stride 2: replica:rank:stage $got" ||
        fail "--pp-stride 2 placed replica:rank:stage as $got"
else fail "--pp-stride 2 on 4 ranks"; tail -5 "$TMP/stride.txt" >&2; fi
# The memory pre-check holds a stage's activations for the most micro-batches any
# configuration of the list keeps in flight (GPipe: all m), whatever the list's order.
# A sequence of 2^20 tokens needs more than any node has: refused before allocating.
need_of() { sed -n 's/.* needs \([0-9]*\) bytes .*/\1/p' "$TMP/err" | head -n 1; }
expect_rc 3 "gpipe, m = 64,1: more activations than memory" -- mpi 2 "$BIN/pp_pipeline" --hidden 1024 --heads 8 \
    --seq 1048576 --layers 2 --schedule gpipe --micro-batches 64,1
first=$(need_of)
expect_rc 3 "gpipe, m = 1,64: more activations than memory" -- mpi 2 "$BIN/pp_pipeline" --hidden 1024 --heads 8 \
    --seq 1048576 --layers 2 --schedule gpipe --micro-batches 1,64
if [ -n "$first" ] && [ "$first" = "$(need_of)" ]; then
    pass "the memory needed is the list's largest in flight, in either order ($first bytes)"
else
    fail "memory needed: $first bytes for m = 64,1, $(need_of) for m = 1,64"
fi
expect_rc 2 "--pp-stride not dividing the ranks" -- mpi 4 "$BIN/pp_pipeline" $SMALL --layers 2 --stages 2 --pp-stride 4
expect_in "$TMP/err" "--pp-stride" "message names --pp-stride"
expect_rc 3 "more stages than ranks" -- mpi 2 "$BIN/pp_pipeline" $SMALL --layers 4 --stages 4
expect_in "$TMP/err" "too few ranks" "message says too few ranks"
expect_rc 3 "a model too large for memory" -- mpi 2 "$BIN/pp_pipeline" --model llama-70b --micro-batches 64 -n 1
expect_in "$TMP/err" "available" "memory message gives both numbers"

# Communicators (docs/gpu.md, "Communicators"): activations and gradients, one per link colour
# some link has, created once for all 4 configurations of each run above: 2 for 2 stages, 4 for
# 3 and 4; an odd ring (interleaved on 3 stages) takes a third colour: 6. What the backend counted
# is the same, none left at the end.
expect_rc 0 "interleaved on 3 stages (an odd ring)" -- \
    mpi 3 "$BIN/pp_pipeline" $SMALL --layers 6 --micro-batches 3,6 --schedule 1f1b,interleaved --json "$TMP/ring3.json"
python3 - "$TMP"/p2.json "$TMP"/p3.json "$TMP"/p4.json "$TMP/ring3.json" <<'PY' >"$TMP/comms" 2>&1 &&
import json, sys
for path, want in zip(sys.argv[1:], (2, 4, 4, 6)):
    meta = json.load(open(path))["meta"]
    got = meta["communicators_measured"]
    assert meta["communicators"]["per_rank"] == want, (path, meta["communicators"])
    assert (got["created"], got["peak_live"], got["live_at_end"]) == (want, want, 0), (path, got)
    assert got["nccl_setup_bytes"] is None and got["nccl_setup_bytes_how"] == "not measured (backend mpi: no GPU memory)"
print("2, 4, 4 and 6 a rank, each created once")
PY
    pass "communicators: $(cat "$TMP/comms")" || { fail "communicators"; cat "$TMP/comms" >&2; }
# A design over the maximum a rank may hold is refused before anything is created.
PARABENCH_MAX_COMMS=3 expect_rc 3 "4 communicators over PARABENCH_MAX_COMMS=3" -- \
    mpi 4 -x PARABENCH_MAX_COMMS "$BIN/pp_pipeline" $SMALL --layers 4 --csv "$TMP/over.csv"
expect_in "$TMP/err" "pp_pipeline's 4-stage pipeline needs 4 communicators per rank, more than the 3 a rank may hold" \
    "the refusal names the need and the maximum"
[ -e "$TMP/over.csv" ] && fail "the refused run wrote a CSV" || pass "the refused run wrote nothing"
PARABENCH_MAX_COMMS=many expect_rc 2 "PARABENCH_MAX_COMMS=many" -- mpi 2 -x PARABENCH_MAX_COMMS "$BIN/pp_pipeline" $SMALL
expect_in "$TMP/err" "PARABENCH_MAX_COMMS: 'many' is not an integer" "names the variable"
finish
