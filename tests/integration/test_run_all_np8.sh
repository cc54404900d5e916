#!/usr/bin/env bash
# test-runner: exclusive (8 ranks oversubscribing the cores for a whole run: both cores busy throughout)
# run_all.sh --np 8 --quick on a machine with fewer cores (oversubscribed): exit 0, every step ok
# or skipped with its reason, and the workloads shaped by suite/shapes.py for one node of 8:
# tp_layer at t = 8, pp_pipeline with the stages shapes() gives; meta.json records the shapes and
# the oversubscription. The results' invariants are checked by finish (lib.sh). About a minute.
source "$(dirname "$0")/lib.sh"
ROOT=$(cd "$TESTS_DIR/../.." && pwd)
[ -x "$BIN/tp_layer" ] || fail "$BIN/tp_layer is missing; build first (make)"
RUN=$TMP/np8
BUILD=$BUILD timeout 600 "$ROOT/run_all.sh" --quick --quiet --no-install --np 8 --out "$RUN" >"$TMP/stdout" 2>"$TMP/stderr"
rc=$?
if [ "$rc" -eq 0 ]; then pass "--np 8 --quick exits 0"; else
    fail "--np 8 --quick: exit $rc"; sed 's/^/  | /' "$TMP/stderr" | tail -15 >&2; fi

bad=$(awk -F'\t' '!($2 == "ok" || ($2 == "skipped" && $5 != ""))' "$RUN/steps.tsv" 2>/dev/null)
if [ -s "$RUN/steps.tsv" ] && [ -z "$bad" ]; then pass "every step ok, or skipped with a reason"
else fail "steps: ${bad:-no steps.tsv}"; fi

if python3 - "$ROOT" "$RUN" >"$TMP/py.out" 2>&1 <<'EOF'
import csv, json, os, sys
sys.path.insert(0, sys.argv[1])
from suite import manifest, shapes
run = sys.argv[2]
meta = json.load(open(os.path.join(run, "meta.json")))
assert meta["oversubscribed"] is True and meta["cores"] < 8, (meta["oversubscribed"], meta["cores"])
# 8 ranks cannot have a core each: the binding asked for is not the one applied, and the note says why.
b = meta["binding"]
assert (b["requested"], b["applied"]) == ("core", "none") and "cannot have a core each" in (b["note"] or ""), b
quick = manifest.Run(profile="quick", nranks=8)  # the CPU model and the quick profile's micro-batches
want = {s["step"]: s for s in manifest.name_shapes(shapes.shapes(8, 8, 0, quick.model_spec, "quick", 4, quick.pp_counts))}
# the model the workloads ran, recorded with its precision: the CPU model, in fp32
assert (meta["model"]["name"], meta["model"]["precision"], meta["model"]["shape"]["kv_heads"]) == ("tiny-gqa", "fp32", 8), meta["model"]
for step, s in meta["shapes"].items():
    assert s["args"] == want[step]["args"] and s["skip"] == want[step]["skip"], (step, s)

def rows(name):
    with open(os.path.join(run, name)) as f:
        return list(csv.DictReader(line for line in f if not line.startswith("#")))

tp = rows("tp_layer.csv")
assert tp and {r["tp"] for r in tp} == {"8"}, "tp_layer: tp %s" % {r["tp"] for r in tp}
stages = want["pp_pipeline"]["args"][want["pp_pipeline"]["args"].index("--stages") + 1]
pp = rows("pp_pipeline.csv")
assert pp and {r["stages"] for r in pp} == {stages}, "pp_pipeline: stages %s, shapes() says %s" % (
    {r["stages"] for r in pp}, stages)
print("tp 8 in %d rows, %s stages in %d rows" % (len(tp), stages, len(pp)))
EOF
then pass "meta.json (oversubscribed, shapes) and the CSVs: $(cat "$TMP/py.out")"
else fail "shapes in the results"; sed 's/^/  | /' "$TMP/py.out" >&2; fi
finish
