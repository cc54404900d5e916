#!/usr/bin/env python3
"""Checks on a benchmark's CSV and JSON output, used by the integration tests.

usage: results.py CSV JSON --columns a,b,c [--rows N] [--zero-wrong] [--complete]
                  [--expect COL=VALUE ...] [--positive COL ...]
--expect COL= (empty value) means "not measured": an empty CSV cell and null in JSON.
The full column list, units and types come from the JSON document's "columns"
schema: the CSV header and every JSON row must match it. --columns names the
columns a test relies on. The file must also hold every invariant of invariants.py.
Exits 1 with a message naming what is wrong."""
import argparse
import csv
import json
import sys

import invariants


def fail(msg):
    print(f"results.py: {msg}", file=sys.stderr)
    sys.exit(1)


def read_csv(path):
    with open(path) as f:
        lines = f.read().splitlines()
    comments = [l for l in lines if l.startswith("#")]
    body = [l for l in lines if l and not l.startswith("#")]
    if not body:
        fail(f"{path}: no header row")
    rows = list(csv.DictReader(body))
    return rows, comments, body[0].split(",")


# JSON value types each schema type admits (a float cell may be null: not measured;
# cJSON writes a whole float without a point).
JSON_TYPES = {"int": (int,), "float": (int, float, type(None)), "string": (str,)}


def read_schema(path, doc):
    """The "columns" schema: [(key, unit, type)], each entry complete."""
    cols = doc.get("columns")
    if not isinstance(cols, list) or not cols:
        fail(f"{path}: no 'columns' schema")
    out = []
    for c in cols:
        if not isinstance(c, dict) or not all(isinstance(c.get(k), str) for k in ("key", "unit", "type")):
            fail(f"{path}: schema entry {c} lacks a key, unit or type")
        if c["type"] not in JSON_TYPES:
            fail(f"{path}: column {c['key']}: type '{c['type']}' is not one of {sorted(JSON_TYPES)}")
        out.append((c["key"], c["unit"], c["type"]))
    return out


def check_row_types(path, schema, r):
    keys = [k for k, _, _ in schema]
    if list(r) != keys:
        fail(f"{path}: row keys {list(r)} differ from the schema's {keys}")
    for key, _, typ in schema:
        v = r[key]
        if isinstance(v, bool) or not isinstance(v, JSON_TYPES[typ]):
            fail(f"{path}: {key} = {v!r} is not of the schema's type {typ}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("json")
    ap.add_argument("--columns", required=True)
    ap.add_argument("--rows", type=int)
    ap.add_argument("--zero-wrong", action="store_true")
    ap.add_argument("--complete", action="store_true")
    ap.add_argument("--expect", action="append", default=[])
    ap.add_argument("--positive", action="append", default=[])
    a = ap.parse_args()

    rows, comments, header = read_csv(a.csv)
    want = a.columns.split(",")
    missing = [c for c in want if c not in header]
    if missing:
        fail(f"{a.csv}: missing columns {missing}; header is {header}")
    if a.rows is not None and len(rows) != a.rows:
        fail(f"{a.csv}: {len(rows)} rows, expected {a.rows}")
    for key in ("# command:", "# date:", "# hosts:", "# backend:", "# version:", "# git_revision:", "# backend_library:"):
        if not any(c.startswith(key) for c in comments):
            fail(f"{a.csv}: metadata line '{key}' missing")
    if a.complete and "# complete" not in comments:
        fail(f"{a.csv}: not marked '# complete'")

    with open(a.json) as f:
        doc = json.load(f)
    for key in ("benchmark", "meta", "rows", "summary", "complete"):
        if key not in doc:
            fail(f"{a.json}: key '{key}' missing")
    for key in ("command", "date", "hosts", "ranks_per_node", "backend", "backend_library", "version", "git_revision",
                "topology", "nranks"):
        if key not in doc["meta"]:
            fail(f"{a.json}: meta.{key} missing")
    schema = read_schema(a.json, doc)
    types = {k: t for k, _, t in schema}
    if header != [k for k, _, _ in schema]:
        fail(f"{a.csv}: header {header} differs from the JSON schema's columns {[k for k, _, _ in schema]}")
    for e in a.expect:
        col, val = e.split("=", 1)
        if val == "" and types.get(col) != "float":
            fail(f"{a.json}: {col} is {types.get(col)}; only a float column can be 'not measured'")
    for col in a.positive:
        if types.get(col) not in ("int", "float"):
            fail(f"{a.json}: --positive {col}: the column is {types.get(col)}, not a number")
    if len(doc["rows"]) != len(rows):
        fail(f"JSON has {len(doc['rows'])} rows, CSV {len(rows)}")
    if a.complete and doc["complete"] is not True:
        fail(f"{a.json}: complete is {doc['complete']}")
    for r in doc["rows"]:
        check_row_types(a.json, schema, r)
        missing = [c for c in want if c not in r]
        if missing:
            fail(f"{a.json}: row lacks {missing}")
        for e in a.expect:  # COL= (empty: not measured) must be null in JSON
            col, val = e.split("=", 1)
            if val == "" and r.get(col) is not None:
                fail(f"{a.json}: {col} = {r.get(col)}, expected null (not measured)")

    for r in rows:
        if a.zero_wrong and r.get("wrong") not in ("0",):
            fail(f"row {r}: wrong = {r.get('wrong')}")
        for e in a.expect:
            col, val = e.split("=", 1)
            if r[col] != val:
                fail(f"row {r}: {col} = {r[col]}, expected {val}")
        for col in a.positive:
            if not float(r[col]) > 0:
                fail(f"row {r}: {col} = {r[col]} is not positive")
    errors = invariants.check_file(a.csv)  # and the invariants every result file holds
    if errors:
        fail("; ".join(errors[:5]))
    print(f"results.py: {a.csv}: {len(rows)} rows ok")


if __name__ == "__main__":
    main()
