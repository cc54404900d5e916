#!/usr/bin/env python3
"""shapes-table.py [RANKS...] [--per-node R] [--model NAME] [--profile P]: the shape
suite/shapes.py gives every workload step, as a Markdown table per world
(default: 8, 64 and 1,024 ranks at 8 per node, tiny, default profile), then
the upper bound `run_all.sh --dry-run` gives each world in every profile
(suite/estimate.py; needs the sweep binaries built, BUILD=dir as run_all).
docs/run_all.md quotes its recorded output, docs/measured/shapes.txt
(tools/dev/record.sh shapes python3 tools/dev/shapes-table.py)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from suite import dry_run, estimate, manifest  # noqa: E402
from suite.shapes import shapes  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def bound_rows(ranks, per_node, gpus):
    """One Markdown row per world and profile: the workloads' bound and the whole run's."""
    bin_dir = os.path.join(ROOT, os.environ.get("BUILD", "build"), "bin")
    for n in ranks:
        rpn = min(per_node, n)
        for profile in manifest.PROFILES:
            run = manifest.Run(profile=profile, nranks=n, gpus=gpus, bin=bin_dir, dry_run=True,
                               nodes=estimate.nodes_of(n, rpn), ranks_per_node=rpn)
            steps = manifest.plan(run)
            names = dry_run.choices(steps, bin_dir)
            if isinstance(names, str):
                sys.exit(names)
            bounds = {s.name: seconds for s, seconds, _ in estimate.Estimate(run, names).bounds(steps)}
            work = sum(bounds[s.name] for s in steps if s.cost == "configs")
            total = sum(bounds.values())
            yield "| %d | %s | %.0f s | %.0f s (%.1f minutes) |" % (n, profile, work, total, total / 60)


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
        for s in manifest.name_shapes(shapes(n, a.per_node, a.gpus, a.model, a.profile)):
            args = "(skipped)" if s["args"] is None else "`%s`" % " ".join(s["args"]) if s["args"] else "(none)"
            print("| %s | %s | %s |" % (s["step"], args, s["describe"]))
    print("\nUpper bound of the whole run, `run_all.sh --dry-run --np N --ranks-per-node %d` (suite/estimate.py):\n"
          % a.per_node)
    print("| ranks | profile | workloads | whole run |")
    print("| --- | --- | --- | --- |")
    for row in bound_rows(a.ranks, a.per_node, a.gpus):
        print(row)


if __name__ == "__main__":
    main()
