#!/usr/bin/env python3
"""microbatch-fit.py --p P --batch B --runs D:SECONDS,... [--candidates 1,2,4,8]

The micro-batch size a pipeline-parallel run must have used, inferred from how
its published step time scales with the data-parallel degree d, not from the
times' level. With 1F1B on p stages, a step of B sequences over d pipelines
takes slot * (m + p - 1) where m = B / (d * mb) and slot grows with mb, so
step / seq_slot = mb * (B / (d * mb) + p - 1) sequence slots. For each
candidate mb the script fits step = a * that count through the origin (the
planner has no per-step constant but the DP all-reduce) and with a free
intercept c. The right mb fits through the origin, and its free fit gives
c near 0; a wrong one needs a constant to make up the bubble it misjudges.

Prints one row per candidate and "best MB": the candidate with the smallest
largest relative residual through the origin. Exit 0; 2 on bad input."""
import argparse
import sys


def die(msg):
    print(f"microbatch-fit: {msg}", file=sys.stderr)
    sys.exit(2)


def positive_ints(text, what):
    try:
        vals = [int(v) for v in text.split(",")]
    except ValueError:
        die(f"{what}: expected comma-separated positive integers, got {text!r}")
    if not vals or min(vals) < 1:
        die(f"{what}: expected comma-separated positive integers, got {text!r}")
    return vals


def parse_runs(text):
    runs = []
    for item in text.split(","):
        d, _, sec = item.partition(":")
        try:
            runs.append((int(d), float(sec)))
        except ValueError:
            die(f"--runs: expected D:SECONDS,..., got {item!r}")
        if runs[-1][0] < 1 or runs[-1][1] <= 0:
            die(f"--runs: expected a positive d and time, got {item!r}")
    if len(runs) < 3:
        die("--runs: at least 3 runs are needed to tell a slope from an intercept")
    return runs


def seq_slots(p, batch, d, mb):
    """Sequence slots of one 1F1B step, or None when B does not split into whole micro-batches."""
    if batch % (d * mb):
        return None
    return mb * (batch // (d * mb) + p - 1)


def fit(xs, ys):
    """(a through the origin, its largest relative residual, a and c of the free fit)."""
    a0 = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
    worst = max(abs(y - a0 * x) / y for x, y in zip(xs, ys))
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return a0, worst, a, my - a * mx


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--p", type=int, required=True)
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--runs", required=True)
    ap.add_argument("--candidates", default="1,2,4,8")
    a = ap.parse_args()
    if a.p < 1 or a.batch < 1:
        die("--p and --batch: expected positive integers")
    runs = parse_runs(a.runs)
    best = None
    print(f"{'mb':>3} {'slot/seq (origin)':>18} {'worst residual':>15} {'slot/seq (free)':>16} {'intercept c':>12}")
    for mb in positive_ints(a.candidates, "--candidates"):
        xs = [seq_slots(a.p, a.batch, d, mb) for d, _ in runs]
        if None in xs:
            print(f"{mb:>3} (the batch does not split into whole micro-batches of {mb} at every d)")
            continue
        a0, worst, a1, c = fit(xs, [s for _, s in runs])
        print(f"{mb:>3} {a0:>16.4f} s {100 * worst:>14.1f}% {a1:>14.4f} s {c:>10.2f} s")
        if best is None or worst < best[1]:
            best = (mb, worst)
    if best is None:
        die("no candidate splits the batch at every d")
    print(f"best {best[0]}")


if __name__ == "__main__":
    main()
