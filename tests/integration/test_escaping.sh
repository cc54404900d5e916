#!/usr/bin/env bash
# User strings reach every writer escaped (core/escape.h): an argument with a
# newline, an injected "row" and "# complete", invalid UTF-8 and glob
# characters, given as the --csv/--json paths (free text the parser accepts),
# must leave the CSV with exactly the measured rows (parabench's own reader
# and Python's csv), the JSON valid (strict json.load), the table one line
# per metadata key; the same for plan --json.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
mkdir -p "$TMP/d"
odd=$'x\n7,7,7,7,7,7,7,7,7\n# complete\n\xff\xfe*?[a] \'q\' \x1b'
CSV="$TMP/d/$odd.csv" JSON="$TMP/d/$odd.json"
expect_rc 0 "coll_sweep with a newline, invalid UTF-8 and glob characters in its paths" -- \
    "$BIN/coll_sweep" --coll allreduce -b 8 -e 64 -n 2 -w 1 --csv "$CSV" --json "$JSON"
cp "$CSV" "$TMP/run.csv"; cp "$JSON" "$TMP/run.json"
if python3 - "$TMP/run.csv" "$TMP/run.json" <<'PY'
import csv, json, sys
text = open(sys.argv[1], encoding="utf-8").read()     # strict: valid UTF-8
lines = text.split("\n")
body = [l for l in lines if l and not l.startswith("#")]
rows = list(csv.DictReader(body))
doc = json.load(open(sys.argv[2], encoding="utf-8"))
assert len(rows) == len(doc["rows"]) == 4, (len(rows), len(doc["rows"]))
assert [r["bytes"] for r in rows] == ["8", "16", "32", "64"], rows
assert not any(l.startswith("7,7") for l in lines), "an injected row"
assert lines.count("# complete") == 1 and lines[-2] == "# complete"
cmd = [l for l in lines if l.startswith("# command: ")]
assert len(cmd) == 1 and "\\n7,7,7" in cmd[0] and "\\xff\\xfe*?[a]" in cmd[0], cmd
assert "\ufffd" in doc["meta"]["command"] or "\\xff" in doc["meta"]["command"], doc["meta"]["command"]
assert "\n" not in doc["meta"]["command"], "the command is one shell line"
PY
then pass "CSV has exactly the 4 measured rows, one '# complete', one command line; JSON is valid"
else fail "escaped CSV/JSON"; fi
# parabench's own reader: acceptance reads the file and trusts it
mark_run "$TMP/r"; cp "$TMP/run.csv" "$TMP/r/coll_sweep.csv"
printf 'coll_latency coll=allreduce size=64 <= 1000000 us\n' >"$TMP/t.thr"
expect_rc 0 "acceptance reads the escaped CSV" -- "$BIN/acceptance" -t "$TMP/t.thr" -r "$TMP/r"
expect_in "$TMP/out" "1 passed, 0 failed" "acceptance: the escaped CSV passes"
# the table on stdout: one line per metadata key
expect_rc 0 "coll_sweep table" -- "$BIN/coll_sweep" --coll allreduce -b 8 -e 8 -n 1 -w 0 --csv "$CSV"
if grep -q '^7,7' "$TMP/out"; then fail "stdout: the path's newline split a line"; else pass "stdout: metadata lines stay whole"; fi
# plan --json: valid JSON whatever the path holds
PJ="$TMP/d/$odd.plan.json"
expect_rc 0 "plan --json with odd bytes" -- "$BIN/plan" --model llama-7b --cluster a100 --gpus 8 --json "$PJ"
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1],encoding="utf-8")); assert "\n" not in d["metadata"]["command"]' "$PJ"
then pass "plan JSON valid, command one line"; else fail "plan JSON"; fi
# plan --calibrate DIR writes DIR into cluster.txt's first comment: run_all's --out holding a
# newline must not end the comment and start a line `plan --cluster` refuses (or reads as a key).
NL="$TMP/res
name = injected
x"
mark_run "$NL"
export PARABENCH_RUN=$NL # these steps are the run's own, as run_all starts them
expect_rc 0 "coll_sweep into a directory whose name holds a newline" -- \
    mpi 2 "$BIN/coll_sweep" --coll allreduce -b 8 -e 64K -n 2 -w 0 --csv "$NL/coll_sweep.csv"
printf 'test,engine,dtype,size,rate,unit\ngemm,blas,float,256,50.0,GFLOP/s\n# complete\n' >"$NL/compute_probe.csv"
expect_rc 0 "plan --calibrate a directory whose name holds a newline" -- "$BIN/plan" --calibrate "$NL" -o "$NL/cluster.txt"
unset PARABENCH_RUN
[ "$(grep -c '^#' "$NL/cluster.txt")" -eq 1 ] && ! grep -q '^x:' "$NL/cluster.txt" \
    && pass "cluster.txt: the directory stays in its one comment line" || fail "cluster.txt: the newline split the comment"
expect_rc 0 "plan --cluster reads the cluster.txt back" -- "$BIN/plan" --model tiny --cluster "$NL/cluster.txt" --gpus 2
expect_in "$NL/cluster.txt" 'res\nname = injected\nx' "cluster.txt: the newline is written as \\n"
finish
