#!/usr/bin/env python3
"""`make docs-check`: every performance figure in README.md, docs/ and dev/ must
come from a recorded run in docs/measured/ (docs/measured/README.md) or, for
development runs, dev/records/.

A figure is a number followed by a unit of time, rate or share: us, µs, ms, s,
minutes, GB/s, MB/s, TB/s, GFLOP/s, TFLOP/s or %; in a block marked measured
(below), also a number written to 3 or more decimals (a ratio, an overhead). Inline code spans are
commands and rule syntax, not claims, and are not read. A block (a paragraph,
a table, a list item run, or a fenced code block) may be preceded by a marker:

  <!-- measured: docs/measured/NAME.txt ... -->  every figure of the block,
                                            and in a fenced block every number,
                                            appears in one of those recorded outputs
  <!-- not measured: REASON -->              specifications, settings, worked
                                            examples, thresholds, expectations;
                                            REASON says which, and the source

Unmarked figures must appear in some recorded output. Each recorded output
starts with '# command:', '# date:', '# commit:' and '# machine:' lines.
docs/measured/pending.txt lists lines ('FILE: REGEX') whose figures are known
to lack a recorded output: they are listed, and do not fail the check.
Exit: 0 every figure is accounted for, 1 otherwise."""
import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MEASURED = os.path.join(ROOT, "docs", "measured")
RECORDS = os.path.join(ROOT, "dev", "records")  # development runs (mutation testing), apart from the user docs
NUM = r"\d+(?:\.\d+)?"
UNIT = r"(?:us|µs|μs|ms|s|minutes?|GB/s|MB/s|TB/s|GFLOP/s|TFLOP/s|%)"
# "18-30 µs", "0.116-0.123 GB/s", "12%": every number of a range is a figure.
FIGURE = re.compile(rf"(?<![\w.])({NUM}(?:\s*[-–]\s*{NUM})*)\s*{UNIT}(?![\w/])")
# A number written to 3 or more decimals ("0.170241", "1.136") in a measured block is a figure
# even without a unit: it was copied from a run.
PRECISE = re.compile(r"(?<![\w.])(\d+\.\d{3,})(?![\w.])")
MARK = re.compile(r"<!--\s*(measured|not measured):\s*(.*?)\s*-->")
HEADER = ("# command:", "# date:", "# commit:", "# machine:")


def numbers(text):
    return re.findall(NUM, text)


def present(num, text):
    return re.search(rf"(?<![\d.]){re.escape(num)}(?![\d])", text) is not None


def blocks(lines):
    """(first line number, lines, fenced) for each block, with its marker."""
    out, cur, start, fenced, mark = [], [], 0, False, None
    for i, line in enumerate(lines, 1):
        if fenced:
            cur.append(line)
            if line.strip().startswith("```"):
                out.append((start, cur, True, mark))
                cur, fenced, mark = [], False, None
            continue
        m = MARK.search(line)
        if m and not cur:
            mark = (m.group(1), m.group(2))
            continue
        if line.strip().startswith("```"):
            if cur:
                out.append((start, cur, False, mark))
                mark = None
            cur, start, fenced = [line], i, True
            continue
        if not line.strip():
            if cur:
                out.append((start, cur, False, mark))
                cur, mark = [], None
            continue
        if not cur:
            start = i
        cur.append(line)
    if cur:
        out.append((start, cur, fenced, mark))
    return out


def main():
    errors, pending_hits = [], []
    recorded = {}
    for path in sorted(glob.glob(os.path.join(MEASURED, "*")) + glob.glob(os.path.join(RECORDS, "*"))):
        name = os.path.relpath(path, ROOT)
        if os.path.basename(path) in ("README.md", "pending.txt"):
            continue
        text = open(path, errors="replace").read()
        head = text.splitlines()[:12]
        for h in HEADER:
            if not any(l.startswith(h) for l in head):
                errors.append(f"{name}: no '{h}' line in its header")
        recorded[name] = text
    everything = "\n".join(recorded.values())
    pending = []
    pfile = os.path.join(MEASURED, "pending.txt")
    if os.path.exists(pfile):
        for l in open(pfile):
            if l.strip() and not l.startswith("#"):
                f, _, rx = l.partition(": ")
                pending.append((f.strip(), re.compile(rx.strip())))
    docs = [os.path.join(ROOT, "README.md")] + sorted(
        p for p in glob.glob(os.path.join(ROOT, "docs", "**", "*.md"), recursive=True)
        if not p.startswith(MEASURED + os.sep)) + sorted(glob.glob(os.path.join(ROOT, "dev", "*.md")))
    nfig = 0
    for path in docs:
        rel = os.path.relpath(path, ROOT)
        lines = open(path).read().splitlines()
        for start, blk, fenced, mark in blocks(lines):
            if mark and mark[0] == "not measured":
                if not mark[1]:
                    errors.append(f"{rel}:{start}: 'not measured' needs a reason")
                continue
            source, where = everything, "any recorded output"
            if mark:
                srcs = mark[1].split()
                unknown = [x for x in srcs if x not in recorded]
                if unknown or not srcs:
                    errors.append(f"{rel}:{start}: marker names {unknown or 'nothing'}, not a recorded output")
                    continue
                source, where = "\n".join(recorded[x] for x in srcs), " ".join(srcs)
            for k, line in enumerate(blk):
                n = start + k
                text = line if fenced else re.sub(r"`[^`]*`", "", line)
                if fenced and mark:
                    want = numbers(text)
                elif fenced:
                    continue  # commands and output without a marker: nothing is claimed as a figure
                else:
                    want = [x for f in FIGURE.findall(text) for x in numbers(f)]
                    if mark:  # a measured block's unitless figures too: ratios, overheads, efficiencies
                        want += [x for x in PRECISE.findall(text) if x not in want]
                nfig += len(want)
                missing = [x for x in want if not present(x, source)]
                if not missing:
                    continue
                if any(rel == f and rx.search(line) for f, rx in pending):
                    pending_hits.append(f"{rel}:{n}: {', '.join(missing)}")
                    continue
                errors.append(f"{rel}:{n}: {', '.join(missing)} not in {where}: {line.strip()[:100]}")
    for p in pending_hits:
        print(f"docs-check: pending (docs/measured/pending.txt): {p}")
    for e in errors:
        print(f"docs-check: {e}", file=sys.stderr)
    print(f"docs-check: {nfig} numbers checked against {len(recorded)} recorded outputs; "
          f"{len(errors)} problems, {len(pending_hits)} pending")
    sys.exit(1 if errors else 0)


if __name__ == "__main__":
    main()
