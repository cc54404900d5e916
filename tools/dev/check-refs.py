#!/usr/bin/env python3
"""Every file the code and docs refer to is in the repository (`make docs-check`).

Reads every tracked source, script and document and finds
 - paths into the tree: `docs/gpu.md`, `common/core/report.c`, `tools/dev/record.sh`;
 - bare Markdown names: `METRICS.md`, `ARCHITECTURE.md`;
and fails on any that names no file of the repository. Recorded outputs
(docs/measured/) are quotations and are not read. Not references: names
with a placeholder (`benchmarks/X.c`, `docs/measured/NAME.txt`),
the files a run writes (GENERATED), and a line that says `refs: example`
with the fenced block right after it (example code: the recipes of docs/ARCHITECTURE.md).

usage: check-refs.py [ROOT]; exit 0 when every reference resolves, 1 otherwise.
"""
import os
import re
import subprocess
import sys

TOP = r"(?:common|docs|scripts|tests|tools|benchmarks|plots|acceptance|\.ci)"
EXT = r"(?:c|h|cu|md|sh|py|gp|txt|csv|png|svg|thresholds|supp|sbatch|json)"
PATH = re.compile(rf"(?<![\w./-])({TOP}/[\w./-]*?\.{EXT})(?![\w/-])")
BARE_MD = re.compile(r"(?<![\w./-])([A-Za-z][\w-]*\.md)\b")
# The capital words the docs use for "fill in a name here".
PLACEHOLDER = re.compile(r"(^|[/_])(X|N|NAME|LAYER|DIR|FILE)(?=[._/]|$)")
GENERATED = {"report.md", "gpu-check.md"}  # written into a results folder (run_all.sh / scripts/report.py; scripts/gpu-check.sh)
READ = re.compile(r"(\.(c|h|cu|sh|py|md|gp)$|^Makefile$|^run_all\.sh$|^\.ci/run$)")


def tracked(root):
    out = subprocess.check_output(["git", "-C", root, "ls-files"], text=True)
    return [p for p in out.split() if os.path.isfile(os.path.join(root, p))]


def breaches(root):
    files = tracked(root)
    names = {os.path.basename(p) for p in files}
    out = []
    for rel in files:
        if rel.startswith(("docs/measured/", "dev/records/")) or not READ.search(rel):
            continue
        with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
            example, prev = False, ""  # example: inside the block after a "refs: example" line
            for n, line in enumerate(f, 1):
                fence = line.lstrip().startswith("```")
                if example or (fence and "refs: example" in prev):
                    example = not (example and fence)
                    prev = line
                    continue
                prev = line
                if "refs: example" in line:
                    continue
                for ref in PATH.findall(line):
                    if not PLACEHOLDER.search(ref) and not os.path.exists(os.path.join(root, ref)):
                        out.append(f"{rel}:{n}: refers to {ref}, which is not in the repository")
                for ref in BARE_MD.findall(line):
                    if ref not in names and ref not in GENERATED and not PLACEHOLDER.search(ref):
                        out.append(f"{rel}:{n}: refers to {ref}, which is not in the repository")
    return out


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    found = breaches(root)
    for line in found:
        print(f"check-refs: {line}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
