#!/usr/bin/env python3
"""compare-osu-rounds.py RAW_CSV [--band 0.05] [--draws 2000] [--seed 1]: how many
interleaved rounds of scripts/compare-osu.sh it takes, on the machine that wrote
RAW_CSV (its compare-osu-raw.csv), for the fast-mode ratio of every operation
of the acceptance set (docs/fidelity.md) to be resolved within +-BAND.

For k = 3, 5, 7, ... up to the rounds in the file, it draws k of the rounds at
random (with replacement, a bootstrap of a k-round run; DRAWS times) and computes the fast-mode ratio
(scripts/compare-osu-table.py: the median of each tool's faster half of rounds,
parabench over OSU) from them. It prints, per row of the set, the interval
holding 90% of those ratios, relative to the ratio from all rounds, and the
smallest k whose interval lies within +-BAND for every row: the rounds that
resolve a 5% difference here. Exit 0; 2 on a usage error or a file without
the set's rows."""
import argparse
import csv
import importlib.util
import os
import random
import statistics
import sys

# The acceptance set of docs/fidelity.md: (op, bytes).
ACCEPTANCE = (("allreduce", 8), ("allreduce", 65536), ("allreduce", 1 << 20), ("latency", 8), ("latency", 65536),
              ("bw", 1 << 20), ("bw", 4 << 20))

_spec = importlib.util.spec_from_file_location(
    "compare_osu_table", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts",
                                      "compare-osu-table.py"))
table = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(table)


def read(path):
    """{(op, bytes): (metric, {tool: {round: value}})}."""
    rows = {}
    with open(path) as f:
        for r in csv.DictReader(l for l in f if not l.startswith("#")):
            key = (r["op"], int(r["bytes"]))
            metric, per = rows.setdefault(key, (r["metric"], {"osu": {}, "parabench": {}}))
            per[r["tool"]][int(r["round"])] = float(r["value"])
    return rows


def fast_ratio(metric, per, rounds):
    osu, pb = ([per[t][r] for r in rounds] for t in ("osu", "parabench"))
    return statistics.median(table.faster_half(pb, metric)) / statistics.median(table.faster_half(osu, metric))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("raw")
    ap.add_argument("--band", type=float, default=0.05)
    ap.add_argument("--draws", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if not 0 < a.band < 1 or a.draws < 10:
        ap.error("--band must be in (0, 1) and --draws at least 10")
    rows = read(a.raw)
    missing = [k for k in ACCEPTANCE if k not in rows]
    if missing:
        sys.exit(f"compare-osu-rounds: {a.raw} has no rows for {missing} (run compare-osu.sh with --ops "
                 "allreduce,latency,bw --max 4194304)")
    rng = random.Random(a.seed)
    every = {k: sorted(set(rows[k][1]["osu"]) & set(rows[k][1]["parabench"])) for k in ACCEPTANCE}
    n = min(len(r) for r in every.values())
    print(f"{n} rounds in {os.path.basename(a.raw)}; fast-mode ratio from k rounds drawn with replacement ({a.draws} draws), "
          f"90% interval relative to all {n} rounds' ratio")
    print(f"{'row':<20}{'all rounds':>11}  " + "  ".join(f"{'k=' + str(k):>13}" for k in range(3, n + 1, 2)))
    enough = {}
    lines = {key: f"{key[0] + ' ' + str(key[1]):<20}" for key in ACCEPTANCE}
    for k in range(3, n + 1, 2):
        worst = 0.0
        for key in ACCEPTANCE:
            metric, per = rows[key]
            full = fast_ratio(metric, per, every[key])
            got = sorted(fast_ratio(metric, per, rng.choices(every[key], k=k)) / full for _ in range(a.draws))
            lo, hi = got[int(0.05 * a.draws)], got[int(0.95 * a.draws) - 1]
            worst = max(worst, 1 - lo, hi - 1)
            if k == 3:
                lines[key] += f"{full:>11.3f}"
            lines[key] += f"  {lo:>6.3f}-{hi:<6.3f}"
        enough[k] = worst <= a.band
    print("\n".join(lines.values()))
    first = next((k for k in sorted(enough) if enough[k] and all(enough[j] for j in enough if j >= k)), None)
    if first is None:
        print(f"no k up to {n} resolves +-{100 * a.band:.0f}% for every row")
    else:
        print(f"rounds that resolve +-{100 * a.band:.0f}% for every row: {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
