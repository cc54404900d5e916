#!/usr/bin/env python3
"""shapes-table.py [RANKS...] [--per-node R] [--model NAME] [--profile P]: the shape
suite/shapes.py gives every workload step, as a Markdown table per world
(default: 8, 64 and 1,024 ranks at 8 per node, tiny, default profile).
docs/run_all.md quotes its recorded output, docs/measured/shapes.txt
(scripts/record.sh shapes python3 scripts/shapes-table.py)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from suite.shapes import shapes  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ranks", nargs="*", type=int, default=[8, 64, 1024])
    ap.add_argument("--per-node", type=int, default=8)
    ap.add_argument("--gpus", type=int, default=0)
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--profile", default="default")
    a = ap.parse_args()
    for n in a.ranks:
        print("\n%d ranks, %d per node, model %s, %s profile:\n" % (n, a.per_node, a.model, a.profile))
        print("| step | arguments | what runs |")
        print("| --- | --- | --- |")
        for s in shapes(n, a.per_node, a.gpus, a.model, a.profile):
            args = "(skipped)" if s["args"] is None else "`%s`" % " ".join(s["args"]) if s["args"] else "(none)"
            print("| %s | %s | %s |" % (s["step"], args, s["describe"]))


if __name__ == "__main__":
    main()
