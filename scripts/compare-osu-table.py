#!/usr/bin/env python3
"""Run parabench and the OSU Micro-Benchmarks side by side, interleaved, and
summarise the ratio parabench/OSU per operation and size (see
scripts/compare-osu.sh, which finds or builds OSU and calls this)."""
import argparse
import csv
import datetime
import os
import socket
import statistics
import subprocess
import sys
import tempfile

# name: (OSU binary, parabench binary and arguments, metric, buffer factor, default sizes)
# The buffer factor maps OSU's size to parabench's: OSU's allgather and
# alltoall sizes are per rank, parabench's (nccl-tests') the whole buffer.
# parabench's reducescatter is MPI_Reduce_scatter_block (NCCL's semantics), so
# it is compared with osu_reduce_scatter_block, not the vector osu_reduce_scatter.
OPS = {
    "allreduce": ("collective/osu_allreduce", ["coll_sweep", "--coll", "allreduce", "-d", "float"], "time_us", 1, (8, 1 << 20)),
    "allgather": ("collective/osu_allgather", ["coll_sweep", "--coll", "allgather", "-d", "float"], "time_us", "n", (8, 1 << 20)),
    "reduce_scatter": ("collective/osu_reduce_scatter_block", ["coll_sweep", "--coll", "reducescatter", "-d", "float"], "time_us", 1, (8, 1 << 20)),
    "bcast": ("collective/osu_bcast", ["coll_sweep", "--coll", "broadcast", "-d", "float"], "time_us", 1, (8, 1 << 20)),
    "alltoall": ("collective/osu_alltoall", ["coll_sweep", "--coll", "alltoall", "-d", "float"], "time_us", "n", (8, 1 << 20)),
    "latency": ("pt2pt/osu_latency", ["p2p_sweep", "--mode", "latency"], "time_us", 1, (8, 4 << 20)),
    "bw": ("pt2pt/osu_bw", ["p2p_sweep", "--mode", "bw"], "bw_MBps", 1, (8, 4 << 20)),
    "bibw": ("pt2pt/osu_bibw", ["p2p_sweep", "--mode", "bibw"], "bw_MBps", 1, (8, 4 << 20)),
}
BAND = (0.95, 1.05)
# --fixed-malloc: thresholds above any temporary of the sweep, fixed for the whole launch.
FIXED_MMAP, FIXED_TRIM = 64 << 20, 128 << 20


def run(cmd):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=1800)
    if p.returncode != 0:
        sys.exit(f"compare_osu: {' '.join(cmd)} failed with exit {p.returncode}:\n{p.stderr[-2000:]}")
    return p.stdout


def osu_values(out, factor):
    """{parabench size: value} from OSU's table (size, value, ...)."""
    vals = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 2 and not line.startswith("#") and f[0].isdigit():
            vals[int(f[0]) * factor] = float(f[1])
    return vals


def parabench_values(path, metric):
    vals = {}
    with open(path) as fh:
        for row in csv.DictReader(l for l in fh if l.strip() and not l.startswith("#")):
            v = float(row["bw_GBps"]) * 1e3 if metric == "bw_MBps" else float(row["time_us"])
            vals[int(row["bytes"])] = v
    return vals


def one_op(op, a, launch, tmp, first):
    osu_bin, pb_cmd, metric, factor, (lo, hi) = OPS[op]
    f = a.np if factor == "n" else factor
    lo, hi = a.min or lo, a.max or hi
    osu_cmd = launch + [os.path.join(a.osu, osu_bin), "-m", f"{max(lo // f, 1)}:{hi // f}"]
    if osu_bin.startswith("collective/"):
        osu_cmd += ["-T", "mpi_float"]
    csv_path = os.path.join(tmp, f"{op}.csv")
    pb = launch + [os.path.join(a.parabench, pb_cmd[0])] + pb_cmd[1:] + ["-b", str(lo), "-e", str(hi), "-f", "2", "--csv", csv_path]
    got = {}
    for tool in (("osu", "parabench") if first == "osu" else ("parabench", "osu")):
        if tool == "osu":
            got[tool] = osu_values(run(osu_cmd), f)
        else:
            run(pb)
            got[tool] = parabench_values(csv_path, metric)
    return metric, got


def faster_half(values, metric):
    """The faster half of one tool's rounds (the larger half when their number is
    odd). This machine runs each launch at one of two speeds (docs/fidelity.md):
    the median of the faster half compares the two tools in the same mode."""
    ordered = sorted(values, reverse=(metric == "bw_MBps"))
    return ordered[:(len(ordered) + 1) // 2]


def launch_modes(raw):
    """{(round, op, tool): "fast" or "slow"}: a launch (one tool, one op, one round,
    every size) is fast when most of its sizes are in that tool's faster half of
    rounds (ties: the earlier round is the faster)."""
    per = {}
    for (r, op, size, metric, tool, v) in raw:
        per.setdefault((op, size, tool, metric), []).append((v, r))
    votes = {}
    for (op, size, tool, metric), vals in per.items():
        sign = -1 if metric == "bw_MBps" else 1
        ordered = sorted(vals, key=lambda vr: (sign * vr[0], vr[1]))
        for k, (_, r) in enumerate(ordered):
            fast, total = votes.get((r, op, tool), (0, 0))
            votes[(r, op, tool)] = (fast + (k < (len(ordered) + 1) // 2), total + 1)
    return {key: "fast" if 2 * fast >= total else "slow" for key, (fast, total) in votes.items()}


def write_summary(path, rows, header):
    with open(path, "w", newline="") as fh:
        for h in header:
            fh.write(f"# {h}\n")
        w = csv.writer(fh)
        w.writerow(["op", "bytes", "metric", "osu_median", "parabench_median", "ratio_median", "ratio_best",
                    "ratio_min", "ratio_max", "rounds", "in_band", "osu_fast_median", "parabench_fast_median",
                    "ratio_fast"])
        w.writerows(rows)


USAGE = ("scripts/compare-osu.sh OSU_PREFIX|OSU_TARBALL [--rounds N] [--np N] [--bind core|none] [--ops LIST] "
         "[--min BYTES] [--max BYTES] [--out DIR] [--fixed-malloc]")


class OneLineParser(argparse.ArgumentParser):
    """A usage error on one line, as every parabench tool reports one: what is wrong, then where the usage is."""

    def error(self, message):
        print(f"compare-osu.sh: {message}; see scripts/compare-osu.sh --help", file=sys.stderr)
        sys.exit(2)


def parse_args(argv):
    """compare-osu.sh's options: the script checks them (--check-only) before it looks for
    or builds OSU, so a usage error costs nothing and names compare-osu.sh's own options."""
    ap = OneLineParser(prog="compare-osu.sh", usage=USAGE, description=__doc__)
    ap.add_argument("--osu", help=argparse.SUPPRESS)
    ap.add_argument("--parabench", help=argparse.SUPPRESS)
    ap.add_argument("--check-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--np", type=int, default=2)
    ap.add_argument("--bind", choices=("core", "none"), default="core")
    ap.add_argument("--ops", default=",".join(OPS), help="comma-separated, from: " + ", ".join(OPS))
    ap.add_argument("--min", type=int, default=0, help="smallest size in bytes (parabench's buffer size)")
    ap.add_argument("--max", type=int, default=0, help="largest size in bytes")
    ap.add_argument("--out", default="")
    ap.add_argument("--fixed-malloc", action="store_true",
                    help="run both tools with glibc's mmap and trim thresholds fixed (MALLOC_MMAP_THRESHOLD_, "
                         "MALLOC_TRIM_THRESHOLD_), so that Open MPI's per-call temporaries do not depend on what "
                         "the process freed before (docs/fidelity.md, reduce_scatter)")
    a = ap.parse_args(argv)
    ops = a.ops.split(",")
    bad = [o for o in ops if o not in OPS]
    if bad:
        ap.error(f"--ops: {', '.join(repr(o) for o in bad)} not accepted; expected a comma-separated list of "
                 f"{', '.join(OPS)}")
    if len(set(ops)) != len(ops):
        ap.error("--ops: an operation is named twice; name each once")
    if a.rounds < 1:
        ap.error(f"--rounds: {a.rounds} is not accepted; expected 1 or more")
    if a.np < 2:
        ap.error(f"--np: {a.np} is not accepted; expected 2 or more")
    if a.min < 0 or a.max < 0 or (a.max and a.min > a.max):
        ap.error(f"--min {a.min} --max {a.max}: expected sizes of 0 or more, --min at most --max")
    if not a.check_only and not (a.osu and a.parabench):
        ap.error("--osu and --parabench are given by scripts/compare-osu.sh; run that script")
    return a


def main():
    a = parse_args(sys.argv[1:])
    if a.check_only:
        return
    ops = a.ops.split(",")
    host = socket.gethostname()
    out = a.out or os.path.join("results", datetime.datetime.now().strftime("compare-osu-%Y%m%d-%H%M%S-") + host)
    os.makedirs(out, exist_ok=True)
    launch = ["mpirun", "-np", str(a.np)]
    launch += ["--map-by", "core", "--bind-to", "core"] if a.bind == "core" else ["--bind-to", "none", "--oversubscribe"]
    if a.fixed_malloc:
        launch += ["-x", f"MALLOC_MMAP_THRESHOLD_={FIXED_MMAP}", "-x", f"MALLOC_TRIM_THRESHOLD_={FIXED_TRIM}"]

    raw = []  # (round, op, bytes, metric, tool, value)
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(1, a.rounds + 1):
            for op in ops:
                metric, got = one_op(op, a, launch, tmp, "osu" if r % 2 else "parabench")
                for tool, vals in got.items():
                    raw += [(r, op, size, metric, tool, v) for size, v in sorted(vals.items())]
            print(f"compare_osu: round {r}/{a.rounds} done", file=sys.stderr)

    rev = subprocess.run(["git", "-C", os.path.dirname(os.path.abspath(__file__)), "describe", "--always", "--dirty"],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout.strip() or "unknown"
    cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "unknown")
    header = [f"command: scripts/compare-osu.sh OSU --rounds {a.rounds} --np {a.np} --bind {a.bind} --ops {','.join(ops)}"
              + (f" --min {a.min}" if a.min else "") + (f" --max {a.max}" if a.max else "")
              + (" --fixed-malloc" if a.fixed_malloc else ""),
              f"date: {datetime.datetime.now().isoformat(timespec='seconds')}", f"commit: {rev}",
              f"machine: {host}, {os.cpu_count()} CPUs, {cpu}", f"launch: {' '.join(launch)}",
              "ratio: parabench / OSU of the metric each reports (time_us: lower is faster; bw_MBps: higher is faster)",
              "ratio_median: parabench's median over rounds / OSU's; ratio_best: fastest round / fastest round; "
              "ratio_min/max: the spread of the per-round ratios (each round runs both tools, one after the other)",
              "ratio_fast: the median of parabench's faster half of rounds / OSU's (each tool in its fast mode); "
              "raw mode: whether that launch was in its tool's faster half at most sizes"]
    with open(os.path.join(out, "compare-osu-raw.csv"), "w", newline="") as fh:
        for h in header:
            fh.write(f"# {h}\n")
        w = csv.writer(fh)
        w.writerow(["round", "op", "bytes", "metric", "tool", "value", "mode"])
        modes = launch_modes(raw)
        w.writerows(row + (modes[(row[0], row[1], row[4])],) for row in raw)

    rows = []
    for op in ops:
        metric = OPS[op][2]
        best = max if metric == "bw_MBps" else min  # the fastest round of each tool
        sizes = sorted({s for (_, o, s, _, _, _) in raw if o == op})
        for size in sizes:
            per = {t: {r: v for (r, o, s, _, tt, v) in raw if o == op and s == size and tt == t} for t in ("osu", "parabench")}
            rounds = sorted(set(per["osu"]) & set(per["parabench"]))
            if not rounds or min(per["osu"][r] for r in rounds) <= 0:
                continue
            osu = [per["osu"][r] for r in rounds]
            pb = [per["parabench"][r] for r in rounds]
            pair = [p / o for p, o in zip(pb, osu)]
            ratio = statistics.median(pb) / statistics.median(osu)
            osu_fast, pb_fast = (statistics.median(faster_half(v, metric)) for v in (osu, pb))
            rows.append([op, size, metric, f"{statistics.median(osu):.4g}", f"{statistics.median(pb):.4g}", f"{ratio:.3f}",
                         f"{best(pb) / best(osu):.3f}", f"{min(pair):.3f}", f"{max(pair):.3f}", len(rounds),
                         int(BAND[0] <= ratio <= BAND[1]), f"{osu_fast:.4g}", f"{pb_fast:.4g}",
                         f"{pb_fast / osu_fast:.3f}"])
    summary = os.path.join(out, "compare-osu.csv")
    write_summary(summary, rows, header)

    print(f"{'op':<15}{'size (B)':>10} {'metric':<8}{'OSU':>11}{'parabench':>11}{'ratio':>8}{'best':>8}{'fast':>8}"
          "  per-round")
    for r in rows:
        flag = "" if r[10] else "  outside 0.95-1.05"
        print(f"{r[0]:<15}{r[1]:>10} {r[2]:<8}{r[3]:>11}{r[4]:>11}{r[5]:>8}{r[6]:>8}{r[13]:>8}  {r[7]}-{r[8]}{flag}")
    inside = sum(r[10] for r in rows)
    print(f"{inside} of {len(rows)} sizes within {BAND[0]}-{BAND[1]} (median of {a.rounds} interleaved rounds)")
    plot = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "plots", "compare_osu.gp")
    subprocess.run(["gnuplot", "-c", plot, out], check=False)
    print(f"written: {summary}, {os.path.join(out, 'compare-osu-raw.csv')}, {os.path.join(out, 'plots', 'compare_osu.png')}")


if __name__ == "__main__":
    main()
