#!/usr/bin/env python3
"""A node's history: parabench-history (docs/acceptance.md, "The golden-run loop").

    parabench-history [-o DIR] [--quiet] [--no-plots] RUN RUN [RUN...]
    parabench-history --version

Reads two runs or more of the same cluster, puts them in order of date
(meta.json's date) and follows each node (meta.json's hosts) through them.
Per node and run, its evidence:

  - matrix bw (CLASS) and matrix latency (CLASS): the node's bandwidth and
    latency per link class in the all-pairs matrix (its pairs file;
    ranks map to hosts as scripts/suspects.py maps them) with its best
    partner node, each partner node's figure the median of its pairs with
    the node. A pair runs at its slower end's rate: the best partner's
    figure is the node's own, and a slow partner does not lower it (as long
    as one partner is sound);
  - TP group time: tp_layer's layer time (at the largest hidden size, the mean
    over its rows) of the node's TP group: the slowest group's when the node
    is in it, else the median group's, the figure the run gives for the other
    groups; where the run has tp_layer with several groups;
  - suspects score: scripts/suspects.py's score for the node in that run.

A figure drifts when it gets worse in every run after the first that holds
it (a lower rate, a longer time, a higher score) and its least-squares
slope over the runs (x: the run's place in date order) is worse than
DRIFT_PER_RUN (5%) of its first value per run, or SCORE_DRIFT_PER_RUN
(0.25) per run for the score. A node with a drifting figure is named, even
if it was never the slowest of a run nor a suspect. A node missing from a
run is a gap there, said so (the runs need not have the same hosts, but
must share one).

Writes into DIR (default history, in the current directory): history.txt
(the table, also printed), history.csv, history.json (the same fields per
row, with the runs and the named nodes) and DIR/plots/history.png (gnuplot; when
gnuplot is missing it says so and writes the rest).

Exit: 0 no node drifts; 1 a node drifts; 2 usage or runs that cannot be
followed (fewer than two, a folder that is not a run, a run without a date
or hosts, runs with no host in common, DIR that is a run or inside one):
nothing written; 3 DIR cannot be written.
Standard library only (and gnuplot for the figure).
"""
import csv
import datetime
import importlib
import io
import json
import math
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # realpath: bin/parabench-history is a link
sys.path.insert(0, ROOT)
from suite import atomic_file, manifest, version  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import suspects  # noqa: E402  (ranks to hosts, the score)
compare = importlib.import_module("compare-runs")  # noqa: E402  (a run's meta.json, the output folder's checks)

ME = "parabench-history"
MATRIX, TP = "every pair of ranks", "tensor parallel"  # the steps whose output it reads, by role
DRIFT_PER_RUN = 0.05        # of the first value, per run
SCORE_DRIFT_PER_RUN = 0.25  # suspects score points per run (a suspect is above suspects.THRESHOLD)
FIELDS = ["host", "figure", "unit", "better", "order", "run", "date", "value", "change_per_run", "steady",
          "drifting", "note"]
Refusal = compare.Refusal


# ---- a run's evidence per node ----

def matrix_figures(run):
    """{host: {figure: value}} per link class: the node's bandwidth and latency with its best partner node
    (each partner node's figure: the median of its pairs with the node)."""
    node = {r: h for h, ranks in suspects.hosts_of(run, MATRIX) for r in ranks}
    seen = {}  # (host, class, partner host) -> ([bw], [latency])
    for p in suspects._csv_rows(manifest.output(run, MATRIX, "-pairs.csv")):
        try:
            a, b = node[int(p["a"])], node[int(p["b"])]
        except (KeyError, ValueError):
            continue
        bw, lat = suspects._num(p, "bw_GBps"), suspects._num(p, "latency_us")
        if not suspects._finite(bw, lat):
            continue
        for h, partner in {(a, b), (b, a)}:
            bws, lats = seen.setdefault((h, p.get("link_class", ""), partner), ([], []))
            bws.append(bw)
            lats.append(lat)
    found = {}
    for (h, cls, _), (bws, lats) in seen.items():
        figs = found.setdefault(h, {})
        bw, lat = f"matrix bw ({cls})", f"matrix latency ({cls})"
        figs[bw] = max(figs.get(bw, float("-inf")), statistics.median(bws))
        figs[lat] = min(figs.get(lat, float("inf")), statistics.median(lats))
    return found


def tp_figures(run, hosts):
    """{host: {"TP group time": us}}: the node's TP group's layer time at the largest hidden size."""
    rs = [r for r in suspects._csv_rows(manifest.output(run, TP))
          if suspects._num(r, "groups") >= 2 and r.get("slowest_group_hosts")
          and suspects._finite(suspects._num(r, "hidden"), suspects._num(r, "slowest_group_step_us"),
                               suspects._num(r, "median_group_step_us"))]
    if not rs:
        return {}
    big = max(suspects._num(r, "hidden") for r in rs)
    rs = [r for r in rs if suspects._num(r, "hidden") == big]
    return {h: {"TP group time": statistics.mean(
        suspects._num(r, "slowest_group_step_us" if h in r["slowest_group_hosts"].split("+") else "median_group_step_us")
        for r in rs)} for h in hosts}


def evidence(run, hosts):
    """{host: {figure: value}} for one run."""
    found = {h: {} for h in hosts}
    for part in (matrix_figures(run), tp_figures(run, hosts)):
        for h, figs in part.items():
            found.setdefault(h, {}).update(figs)
    v = suspects.rank(run)
    for h, score, _ in (v.ranked if v else []):
        found.setdefault(h, {})["suspects score"] = score
    return found


UNITS = {"matrix bw": ("GB/s", "higher"), "matrix latency": ("us", "lower"), "TP group time": ("us", "lower"),
         "suspects score": ("", "lower")}


def unit_of(figure):
    return UNITS[figure.split(" (")[0]]


# ---- the trend ----

def slope(points):
    """Least-squares slope of [(x, y)]; nan under two points."""
    if len(points) < 2:
        return float("nan")
    mx = statistics.mean(x for x, _ in points)
    my = statistics.mean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / sxx if sxx else float("nan")


def trend(figure, points):
    """(change per run, steady, drifting) of one node's figure over [(order, value)]: the change is
    relative to the first value (absolute for the score); steady: every run worse than the one before."""
    better = unit_of(figure)[1]
    worse = (lambda a, b: b < a) if better == "higher" else (lambda a, b: b > a)
    steady = len(points) >= 2 and all(worse(a, b) for (_, a), (_, b) in zip(points, points[1:]))
    s = slope(points)
    if figure == "suspects score":
        change, bar = s, SCORE_DRIFT_PER_RUN
    else:
        first = points[0][1] if points else float("nan")
        change, bar = (s / abs(first) if first else float("nan")), DRIFT_PER_RUN
    beyond = math.isfinite(change) and (change < -bar if better == "higher" else change > bar)
    return change, steady, steady and beyond


# ---- the runs ----

def load_runs(paths):
    """[(run, date, meta, [hosts])] in order of date; Refusal when a run cannot be followed."""
    if len(paths) < 2:
        raise Refusal("give two runs or more (a history needs a trend); see --help")
    if len({os.path.realpath(p) for p in paths}) != len(paths):
        raise Refusal("a run is given twice; give each run once")
    runs = []
    for p in paths:
        meta = compare.load_meta(p, "run")
        try:
            date = datetime.datetime.strptime(str(meta.get("date")), "%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            raise Refusal(f"run '{p}' has no date in its meta.json (date: {meta.get('date')!r}, expected "
                          "YYYY-MM-DDTHH:MM:SSZ as run_all.sh writes it); the runs cannot be put in order")
        hosts = [h for h, _ in suspects.run_hosts(p)]
        if not hosts:
            raise Refusal(f"run '{p}' names no hosts in its meta.json (machine.hosts); a node cannot be followed")
        runs.append((p, date, meta, hosts))
    runs.sort(key=lambda t: t[1])
    common = set(runs[0][3]).intersection(*(set(r[3]) for r in runs[1:]))
    if not common:
        raise Refusal("the runs have no host in common: " + "; ".join(f"{r[0]}: {', '.join(r[3])}" for r in runs)
                      + ". Follow runs of one cluster")
    return runs


def history_rows(runs):
    """The rows: one per node, figure and run, in node order, then figure, then date."""
    all_hosts = list(dict.fromkeys(h for r in runs for h in r[3]))
    per_run = [evidence(r[0], r[3]) for r in runs]
    kinds = list(UNITS)
    figures = {h: sorted({f for ev in per_run for f in ev.get(h, {})}, key=lambda f: (kinds.index(f.split(" (")[0]), f))
               for h in all_hosts}
    rows = []
    for h in all_hosts:
        for fig in figures[h]:
            points = [(i, ev[h][fig]) for i, ev in enumerate(per_run) if fig in ev.get(h, {})]
            change, steady, drifting = trend(fig, points)
            unit, better = unit_of(fig)
            for i, (run, date, _, hosts) in enumerate(runs):
                value = per_run[i].get(h, {}).get(fig, float("nan"))
                note = ("gap: the node is not in this run" if h not in hosts
                        else "" if math.isfinite(value) else "not measured in this run")
                rows.append({"host": h, "figure": fig, "unit": unit, "better": better, "order": i, "run": run,
                             "date": date.strftime("%Y-%m-%dT%H:%M:%SZ"), "value": value,
                             "change_per_run": change, "steady": int(steady), "drifting": int(drifting),
                             "note": note})
    return rows


def drifting(rows):
    """{host: [(figure, change per run)]} of the nodes named."""
    found = {}
    for r in rows:
        if r["drifting"] and r["order"] == 0:
            found.setdefault(r["host"], []).append((r["figure"], r["change_per_run"]))
    return found


# ---- what it writes ----

def change_text(figure, change):
    if not math.isfinite(change):
        return "-"
    return f"{change:+.2f}/run" if figure == "suspects score" else f"{100 * change:+.1f}%/run"


def text_table(runs, rows):
    head = ["host", "figure"] + [f"#{i + 1} {r[1]:%Y-%m-%d %H:%M}" for i, r in enumerate(runs)] + ["change", "trend"]
    body = [head]
    for i in range(0, len(rows), len(runs)):
        group = rows[i:i + len(runs)]
        r = group[0]
        cells = ["gap" if g["note"].startswith("gap") else compare.fmt(g["value"], g["unit"]) for g in group]
        body.append([r["host"], r["figure"]] + cells + [change_text(r["figure"], r["change_per_run"]),
                     "DRIFTING" if r["drifting"] else "steady worse" if r["steady"] else "-"])
    width = [max(len(c[k]) for c in body) for k in range(len(head) - 1)]
    return "\n".join("  ".join(c.ljust(width[k]) if k < len(width) else c for k, c in enumerate(line)).rstrip()
                     for line in body)


def summary(named):
    if not named:
        return "no node drifts"
    return "DRIFTING: " + "; ".join(f"{h} ({', '.join(f'{f} {change_text(f, c)}' for f, c in figs)})"
                                    for h, figs in named.items())


def write_csv(path, rows):
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    w.writerow(FIELDS)
    for r in rows:
        w.writerow([r[k] if not isinstance(r[k], float) else (f"{r[k]:.6g}" if math.isfinite(r[k]) else "")
                    for k in FIELDS])
    atomic_file.write_text(path, s.getvalue())


def plot_script(out, runs, rows, named):
    """A gnuplot script: one panel per figure, a line per node over the runs; a named node's line thick."""
    figs = list(dict.fromkeys(r["figure"] for r in rows))[:6]  # the first node's order
    hosts = list(dict.fromkeys(r["host"] for r in rows))
    data = compare.gp_string(os.path.join(out, "history.csv"))
    cols = 3 if len(figs) > 4 else 2 if len(figs) > 1 else 1
    lines = [f"dir = {compare.gp_string(out)}", f"load {compare.gp_string(os.path.join(ROOT, 'plots', 'common.gp'))}",
             "eval set_term('png', 'history')", "set xlabel 'run (in order of date)'",
             f"set xrange [-0.3:{len(runs) - 0.7}]", "set xtics 1", "set key outside right top",
             f"set multiplot layout {math.ceil(len(figs) / cols)},{cols} title "
             + compare.gp_string(f"Each node's evidence over {len(runs)} runs: {summary(named)}")]
    for fig in figs:
        unit = unit_of(fig)[0]
        lines.append(f"set title {compare.gp_string(fig)}")
        lines.append(f"set ylabel {compare.gp_string(unit)}")
        plots = []
        for k, h in enumerate(hosts):
            sel = (f"(strcol('host') eq {compare.gp_string(h)} && strcol('figure') eq {compare.gp_string(fig)} ? "
                   "column('order') : NaN):(column('value'))")
            width = " lw 4" if h in named else ""
            plots.append(f"{data} using {sel} with linespoints lt {k % 8 + 1}{width} title {compare.gp_string(h)}")
        lines.append("plot " + ", \\\n     ".join(plots))
    lines.append("unset multiplot")
    return "\n".join(lines) + "\n"


def draw(out, runs, rows, named, quiet):
    """DIR/plots/history.png; False when gnuplot is missing or fails (said on stderr)."""
    try:
        p = subprocess.run(["gnuplot"], input=plot_script(out, runs, rows, named), capture_output=True, text=True,
                           timeout=60)
    except FileNotFoundError:
        print(f"{ME}: gnuplot is not installed (scripts/install-deps.sh): history.csv and history.json are written, "
              "the figure is not", file=sys.stderr)
        return False
    except (OSError, subprocess.TimeoutExpired) as e:
        print(f"{ME}: gnuplot did not run: {e}", file=sys.stderr)
        return False
    ok = p.returncode == 0 and os.path.exists(os.path.join(out, "plots", "history.png"))
    if not ok and not quiet:
        print(f"{ME}: gnuplot failed (exit {p.returncode}): {p.stderr.strip()[-300:]}", file=sys.stderr)
    return ok


def main(argv):
    if "--version" in argv:
        print(version.string(os.environ.get("BUILD", "build")))
        return 0
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    quiet, plots, out, args = compare.parse_args(argv, ("-o", "--out"))
    runs = load_runs(args)
    out = out or "history"
    compare.check_out(out, [r[0] for r in runs], "-o")
    rows = history_rows(runs)
    if not rows:
        matrix = manifest.by_role(MATRIX).name
        raise Refusal(f"the runs hold no evidence per node (no {matrix}-pairs.csv, {manifest.by_role(TP).name}.csv "
                      f"or suspects' evidence); run the all-pairs matrix (run_all.sh --steps {matrix})")
    named = drifting(rows)
    gaps = sorted({(r["host"], r["run"]) for r in rows if r["note"].startswith("gap")})
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    table = text_table(runs, rows)
    line = f"{ME}: {len(runs)} runs, {runs[0][1]:%Y-%m-%d} to {runs[-1][1]:%Y-%m-%d}: {summary(named)}"
    gap_lines = [f"{ME}: gap: {h} is not in run {run}" for h, run in gaps]
    atomic_file.write_text(os.path.join(out, "history.txt"), "\n".join([table, *gap_lines, line]) + "\n")
    write_csv(os.path.join(out, "history.csv"), rows)
    doc = {"runs": [{"run": r[0], "date": f"{r[1]:%Y-%m-%dT%H:%M:%SZ}", "version": compare.report.version_of(r[2]),
                     "hosts": r[3]} for r in runs],
           "drift_per_run": DRIFT_PER_RUN, "score_drift_per_run": SCORE_DRIFT_PER_RUN,
           "drifting": {h: [f for f, _ in figs] for h, figs in named.items()}, "summary": summary(named),
           "gaps": [{"host": h, "run": run} for h, run in gaps],
           "rows": [{k: compare.json_value(r[k]) for k in FIELDS} for r in rows]}
    atomic_file.write_text(os.path.join(out, "history.json"), json.dumps(doc, indent=1) + "\n")
    if plots:
        draw(out, runs, rows, named, quiet)
    if not quiet:
        print(table)
    for g in gap_lines:
        print(g, file=sys.stderr)
    print(line)
    return 1 if named else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refusal as e:
        print(f"{ME}: {e}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        print(f"{ME}: cannot write {e.filename or 'the history'}: {e.strerror or e}", file=sys.stderr)
        sys.exit(3)
