#!/usr/bin/env python3
"""Checks on a benchmark's CSV and JSON output, used by the integration tests.

usage: results.py CSV JSON --columns a,b,c [--rows N] [--zero-wrong] [--complete]
                  [--expect COL=VALUE ...] [--positive COL ...]
--expect COL= (empty value) means "not measured": an empty CSV cell and null in JSON.
Exits 1 with a message naming what is wrong."""
import argparse
import csv
import json
import sys


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
    for key in ("# command:", "# date:", "# hosts:", "# backend:", "# git_revision:", "# backend_library:"):
        if not any(c.startswith(key) for c in comments):
            fail(f"{a.csv}: metadata line '{key}' missing")
    if a.complete and "# complete" not in comments:
        fail(f"{a.csv}: not marked '# complete'")

    with open(a.json) as f:
        doc = json.load(f)
    for key in ("benchmark", "meta", "rows", "summary", "complete"):
        if key not in doc:
            fail(f"{a.json}: key '{key}' missing")
    for key in ("command", "date", "hosts", "ranks_per_node", "backend", "backend_library", "git_revision",
                "topology", "nranks"):
        if key not in doc["meta"]:
            fail(f"{a.json}: meta.{key} missing")
    if len(doc["rows"]) != len(rows):
        fail(f"JSON has {len(doc['rows'])} rows, CSV {len(rows)}")
    if a.complete and doc["complete"] is not True:
        fail(f"{a.json}: complete is {doc['complete']}")
    for r in doc["rows"]:
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
    print(f"results.py: {a.csv}: {len(rows)} rows ok")


if __name__ == "__main__":
    main()
