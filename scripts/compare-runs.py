#!/usr/bin/env python3
"""One run against another: parabench-compare (docs/acceptance.md, "The golden-run loop").

    parabench-compare [--out DIR] [--quiet] [--no-plots] RUN_A RUN_B
    parabench-compare --version

RUN_A is the reference (a golden run), RUN_B the run judged. Each headline
figure both runs measured (busbw per collective and link class at the largest
size, allreduce latency at the smallest, point-to-point latency and bandwidth,
every pair of the all-pairs matrix, DP overhead, TP communication fraction, PP
efficiency) gets a row: A, B, B/A, the noise and a verdict: same (the
difference is within the noise), better or worse. The noise is the runs' own:
each figure's spread within its run (for a time, the larger of median - min
over the median and the distance between the run's two estimates of its mean;
for DP's overhead, its paired and in-step estimates; for PP, the mean against
the median step). Each run's figure is its value give or take its spread;
when the two ranges overlap (|B - A| <= spread A + spread B) the figure is
the same. A figure either run marked untrustworthy is shown as such, never
judged.

Runs of another shape (ranks, nodes, ranks per node, backend, profile, model)
or that measured other steps are refused (exit 2, naming each difference):
their figures are not the same quantities. Writes into DIR (default
compare-A-vs-B in the current directory): compare.txt (the table, also
printed), compare.csv, compare.json (the same fields, with the runs and the
verdict), index.html in the report's style and plots/ with both runs' curves
of bus bandwidth, latency and point-to-point bandwidth overlaid (gnuplot).

Exit: 0 nothing worse beyond the noise; 1 a figure is worse; 2 usage or runs
that cannot be compared (nothing written); 3 DIR cannot be written.
Standard library only (and gnuplot for the figures).
"""
import csv
import io
import json
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # realpath: bin/parabench-compare is a link
sys.path.insert(0, ROOT)
from suite import atomic_file, manifest, version  # noqa: E402
from suite.meta import is_run, read_steps  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import report  # noqa: E402  (the run's rows, untrustworthy notes, sizes, the page's HTML)

ME = "parabench-compare"
FIELDS = ["figure", "unit", "better", "a", "b", "ratio", "noise", "verdict", "why"]


class Refusal(Exception):
    """Runs that cannot be compared, or a bad command line: exit 2, nothing written."""


def num(r, key):
    x = report.num(r, key)
    return x if math.isfinite(x) else float("nan")


def time_spread(r):
    """A time's relative spread within its run: the bulk of its samples, (median - min) / median, and
    how far apart the run's two estimates of its mean lie (the timed loop and the sample pass, where
    the benchmark makes both)."""
    t, med, lo, other = num(r, "time_us"), num(r, "time_us_median"), num(r, "time_us_min"), num(r, "time_us_sample_mean")
    cands = []
    if med > 0 and math.isfinite(lo):
        cands.append((med - lo) / med)
    if t > 0 and math.isfinite(other):
        cands.append(abs(t - other) / t)
    return max(cands) if cands else float("nan")


def figure(key, name, unit, better, value, spread, why=""):
    return {"key": key, "figure": name, "unit": unit, "better": better, "value": value, "spread": spread, "why": why}


def coll_figures(run):
    """busbw per collective and link class at the largest size (the worst row there: the slowest
    group), and allreduce's time at the smallest."""
    rs = [r for r in report.rows(run, "collectives over all ranks") + report.rows(run, "collectives inside each node")
          if math.isfinite(num(r, "bytes")) and math.isfinite(num(r, "busbw_GBps"))]
    found = []
    for coll, link in dict.fromkeys((r["collective"], r.get("link_class", "")) for r in rs):
        cr = [r for r in rs if r["collective"] == coll and r.get("link_class", "") == link]
        big = max(num(r, "bytes") for r in cr)
        w = min((r for r in cr if num(r, "bytes") == big), key=lambda r: num(r, "busbw_GBps"))
        found.append(figure(("busbw", coll, link), f"{coll} busbw, {link}, {report.size_text(big)}", "GB/s", "higher",
                            num(w, "busbw_GBps"), num(w, "busbw_GBps") * time_spread(w)))
        if coll == "allreduce":
            small = min(num(r, "bytes") for r in cr)
            w = max((r for r in cr if num(r, "bytes") == small), key=lambda r: num(r, "time_us"))
            found.append(figure(("coll_latency", coll, link), f"{coll} time, {link}, {report.size_text(small)}", "us",
                                "lower", num(w, "time_us"), num(w, "time_us") * time_spread(w)))
    return found


def p2p_figures(run):
    """The measured pair's latency at the smallest size, bandwidth at the largest (p2p_sweep)."""
    rs = report.rows(run, "point-to-point")
    found = []
    for mode, pick, col, unit, better in (("latency", min, "time_us", "us", "lower"),
                                          ("bw", max, "bw_GBps", "GB/s", "higher"),
                                          ("bibw", max, "bw_GBps", "GB/s", "higher")):
        for link in dict.fromkeys(r.get("link_class", "") for r in rs if r.get("mode") == mode):
            mr = [r for r in rs if r.get("mode") == mode and r.get("link_class", "") == link
                  and math.isfinite(num(r, "bytes"))]
            if not mr:
                continue
            at = pick(num(r, "bytes") for r in mr)
            r = next(r for r in mr if num(r, "bytes") == at)
            found.append(figure(("p2p", mode, link), f"p2p {mode}, {link}, {report.size_text(at)}", unit, better,
                                num(r, col), num(r, col) * time_spread(r)))
    return found


def matrix_figures(run):
    """Every pair of the all-pairs matrix: its latency and its bandwidth."""
    found = []
    for r in report.rows(run, "every pair of ranks"):
        mode = r.get("mode")
        if mode not in ("latency", "bw"):
            continue
        col, unit, better = ("time_us", "us", "lower") if mode == "latency" else ("bw_GBps", "GB/s", "higher")
        pair = f"ranks {r.get('rank_a')}-{r.get('rank_b')} ({r.get('host_a')}-{r.get('host_b')})"
        found.append(figure(("matrix", mode, r.get("rank_a"), r.get("rank_b")),
                            f"matrix {mode}, {pair}, {r.get('link_class')}, {report.size_text(num(r, 'bytes'))}",
                            unit, better, num(r, col), num(r, col) * time_spread(r)))
    return found


def dp_figures(run):
    """DP overhead per overlap at the largest gradient; its spread: the paired and in-step estimates."""
    rs = report.rows(run, "data parallel")
    if not rs:
        return []
    big = max(num(r, "grad_bytes") for r in rs)
    marks = report.untrusted(run, "data parallel")
    found = []
    for r in (r for r in rs if num(r, "grad_bytes") == big):
        v = num(r, "overhead")
        spread = max([abs(v - num(r, c)) for c in ("overhead_paired", "overhead_instep")
                      if math.isfinite(num(r, c))] or [float("nan")])
        found.append(figure(("dp", r.get("overlap"), r.get("link_class")),
                            f"DP overhead, overlap {r.get('overlap')}, {report.size_text(big)}", "", "lower", v, spread,
                            report.distrust(r, "data parallel", marks)))
    return found


def tp_figures(run):
    """TP communication fraction per mode at the largest hidden size and the middle sequence
    (the report's headline); its spread: the step's max over ranks against its mean."""
    rs = report.rows(run, "tensor parallel")
    if not rs:
        return []
    big = max(num(r, "hidden") for r in rs)
    at = [r for r in rs if num(r, "hidden") == big]
    seqs = sorted({num(r, "seq") for r in at})
    s = seqs[len(seqs) // 2]
    found = []
    for r in (r for r in at if num(r, "seq") == s):
        step, mean, v = num(r, "step_us"), num(r, "step_us_mean"), num(r, "comm_fraction")
        found.append(figure(("tp", r.get("mode"), r.get("link_class")),
                            f"TP comm fraction, {r.get('mode')}, h={big:.0f}, s={s:.0f}", "", "lower", v,
                            v * abs(step - mean) / step if step > 0 else float("nan")))
    return found


def pp_figures(run):
    """PP efficiency per schedule at the most micro-batches; its spread: mean step against median."""
    rs = report.rows(run, "pipeline parallel")
    marks = report.untrusted(run, "pipeline parallel")
    found = []
    for sched in dict.fromkeys(r.get("schedule") for r in rs):
        r = max((r for r in rs if r.get("schedule") == sched), key=lambda r: num(r, "micro_batches"))
        step, med, v = num(r, "step_us"), num(r, "step_us_median"), num(r, "efficiency")
        found.append(figure(("pp", sched, r.get("stages")),
                            f"PP efficiency, {sched}, m={r.get('micro_batches')}, p={r.get('stages')}", "", "higher", v,
                            v * abs(step - med) / step if step > 0 else float("nan"),
                            report.distrust(r, "pipeline parallel", marks)))
    return found


def figures(run):
    return (coll_figures(run) + p2p_figures(run) + matrix_figures(run) + dp_figures(run) + tp_figures(run)
            + pp_figures(run))


def verdict(fa, fb):
    """same, better or worse, with the noise band (in the figure's unit); untrustworthy or missing: not judged."""
    if fa is None or fb is None:
        return ("only in A" if fb is None else "only in B"), float("nan")
    if fa["why"] or fb["why"]:
        return "untrustworthy", float("nan")
    a, b = fa["value"], fb["value"]
    if not (math.isfinite(a) and math.isfinite(b)):
        return "not measured", float("nan")
    sa, sb = (s if math.isfinite(s) else 0.0 for s in (fa["spread"], fb["spread"]))
    noise = sa + sb  # each run's value give or take its own spread: same while the two ranges overlap
    if abs(b - a) <= noise:
        return "same", noise
    return ("better" if (b > a) == (fa["better"] == "higher") else "worse"), noise


def compare_rows(run_a, run_b):
    fa = {f["key"]: f for f in figures(run_a)}
    fb = {f["key"]: f for f in figures(run_b)}
    out = []
    for key in list(fa) + [k for k in fb if k not in fa]:
        a, b = fa.get(key), fb.get(key)
        f = a or b
        v, noise = verdict(a, b)
        va = a["value"] if a else float("nan")
        vb = b["value"] if b else float("nan")
        why = "; ".join(x["why"] for x in (a, b) if x and x["why"])
        out.append({"figure": f["figure"], "unit": f["unit"], "better": f["better"], "a": va, "b": vb,
                    "ratio": vb / va if va else float("nan"), "noise": noise, "verdict": v, "why": why})
    return out


# ---- the runs: what they are, and whether they can be compared ----

def load_meta(run, label):
    if not os.path.isdir(run):
        raise Refusal(f"{label} '{run}' is not a directory; expected a run_all.sh results folder")
    if not is_run(run):
        raise Refusal(f"{label} '{run}' is not a run's results folder (no meta.json or steps.tsv)")
    try:
        with open(os.path.join(run, "meta.json")) as f:
            meta = json.load(f)
    except (OSError, ValueError) as e:
        raise Refusal(f"{label} '{run}' has no readable meta.json ({getattr(e, 'strerror', None) or e}): the run did "
                      "not finish; compare finished runs")
    return meta if isinstance(meta, dict) else {}


def shape(meta):
    """What must be equal for two runs' figures to be the same quantities."""
    mach = meta.get("machine") or {}
    hosts = mach.get("hosts") or []
    per_node = sorted(len(h.get("ranks", [])) for h in hosts if isinstance(h, dict))
    return {"ranks": meta.get("nranks", mach.get("nranks")), "nodes": len(hosts) or mach.get("nnodes"),
            "ranks per node": per_node or mach.get("ranks_per_node"),
            "backend": mach.get("backend", meta.get("backend")), "profile": meta.get("profile"),
            "model": (meta.get("model") or {}).get("name")}


# The steps that judge or report what the others measured (acceptance, this comparison, the report):
# a run checked against thresholds, or compared, measured nothing more than one that was not.
NOT_MEASURING = {s.name for s in manifest.STEPS if s.always}


def measured_steps(run):
    try:
        return {s["name"]: s.get("status", "") for s in read_steps(run) if s["name"] not in NOT_MEASURING}
    except OSError:
        return {}


def check_comparable(run_a, run_b):
    ma, mb = load_meta(run_a, "RUN_A"), load_meta(run_b, "RUN_B")
    sa, sb = shape(ma), shape(mb)
    diff = [f"{k}: {sa[k]} in A, {sb[k]} in B" for k in sa if sa[k] != sb[k]]
    if diff:
        raise Refusal("the runs have different shapes, so their figures are not the same quantities: "
                      + "; ".join(diff) + ". Compare runs of one shape (or derive thresholds per shape)")
    ta, tb = measured_steps(run_a), measured_steps(run_b)
    ok_a = {s for s, st in ta.items() if st == "ok"}
    ok_b = {s for s, st in tb.items() if st == "ok"}
    if ok_a != ok_b:
        what = [f"{s} ({'ok' if s in ok_a else ta.get(s, 'not run')} in A, {'ok' if s in ok_b else tb.get(s, 'not run')} in B)"
                for s in sorted(ok_a ^ ok_b)]
        raise Refusal("the runs did not measure the same steps: " + ", ".join(what)
                      + ". Rerun the missing steps (run_all.sh --steps) or compare runs of the same steps")
    return ma, mb, sa


def inside(path, folder):
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def check_out(out, runs, option="--out"):
    """DIR is no input: not a run, not inside one (except the run's own folder when run_all writes it).
    OPTION: how the command line named DIR, for the message (scripts/history.py's -o)."""
    own = os.environ.get("PARABENCH_RUN")
    for run in runs:
        if inside(out, run) and not (own and os.path.realpath(own) == os.path.realpath(run) and
                                     os.path.realpath(out) != os.path.realpath(run)):
            raise Refusal(f"{option} '{out}' is {'the run' if os.path.realpath(out) == os.path.realpath(run) else 'inside the run'} "
                          f"'{run}', an input; a run's records are never written into. Give another folder")
    if os.path.exists(out) and not os.path.isdir(out):
        raise Refusal(f"{option} '{out}' exists and is not a folder")
    if os.path.isdir(out) and is_run(out):
        raise Refusal(f"{option} '{out}' is a run's results folder; give another folder")


# ---- what it writes ----

def fmt(v, unit=""):
    if v is None or not math.isfinite(v):
        return "-"
    text = f"{v:.4g}"
    return f"{text} {unit}".rstrip()


def table_cells(r):
    ratio = f"{r['ratio']:.3f}" if math.isfinite(r["ratio"]) else "-"
    noise = f"±{fmt(r['noise'], r['unit'])}" if math.isfinite(r["noise"]) else "-"
    return [r["figure"], fmt(r["a"], r["unit"]), fmt(r["b"], r["unit"]), ratio, noise,
            r["verdict"] + (f" ({r['why']})" if r["why"] else "")]


HEAD = ["figure", "A", "B", "B/A", "noise", "verdict"]


def text_table(rows):
    body = [HEAD] + [table_cells(r) for r in rows]
    width = [max(len(c[i]) for c in body) for i in range(len(HEAD) - 1)]
    return "\n".join("  ".join(c.ljust(width[i]) if i < len(width) else c for i, c in enumerate(line)).rstrip()
                     for line in body)


def counts(rows):
    c = {}
    for r in rows:
        c[r["verdict"]] = c.get(r["verdict"], 0) + 1
    return c


def summary(rows):
    c = counts(rows)
    worse = [r["figure"] for r in rows if r["verdict"] == "worse"]
    head = ", ".join(f"{n} {v}" for v, n in c.items())
    return ("WORSE: " + "; ".join(worse) if worse else "no figure worse beyond the noise") + f" ({head})"


def write_csv(path, rows):
    s = io.StringIO()
    w = csv.writer(s, lineterminator="\n")
    w.writerow(FIELDS)
    for r in rows:
        w.writerow([r[k] if not isinstance(r[k], float) else (f"{r[k]:.6g}" if math.isfinite(r[k]) else "")
                    for k in FIELDS])
    atomic_file.write_text(path, s.getvalue())


def json_value(v):
    return None if isinstance(v, float) and not math.isfinite(v) else v


def gp_string(s):
    return "'" + str(s).replace("'", "''") + "'"


# Overlays: name, title, y label, log y, [(role of the step whose CSV it draws, filter on the row, x column, y column)]
OVERLAYS = [
    ("busbw", "Bus bandwidth vs message size", "bus bandwidth (GB/s)", False,
     [("collectives over all ranks", "collective", None, "bytes", "busbw_GBps")]),
    ("latency", "Small-message latency: allreduce and point-to-point", "time (us)", True,
     [("collectives over all ranks", "collective", "allreduce", "bytes", "time_us"),
      ("point-to-point", "mode", "latency", "bytes", "time_us")]),
    ("p2p_bw", "Point-to-point bandwidth", "bandwidth (GB/s)", False,
     [("point-to-point", "mode", "bw", "bytes", "bw_GBps"), ("point-to-point", "mode", "bibw", "bytes", "bw_GBps")]),
]


def overlay_script(out, run_a, run_b, name, title, ylabel, logy, series):
    """A gnuplot script: each series of A solid, of B dashed in the same colour."""
    lines = [f"dir = {gp_string(out)}", f"load {gp_string(os.path.join(ROOT, 'plots', 'common.gp'))}",
             f"set title {gp_string(f'{title}: A {os.path.basename(run_a)} (solid), B {os.path.basename(run_b)} (dashed)')}",
             "set xlabel 'message size (bytes)'", f"set ylabel {gp_string(ylabel)}", "set logscale x 2",
             "eval 'set xtics '.SIZETICS", "set logscale y" if logy else "set yrange [0:*]", "set key top left"]
    plots, lt = [], 0
    for role, col, value, x, y in series:
        fa, fb = manifest.output(run_a, role), manifest.output(run_b, role)
        if not (os.path.exists(fa) and os.path.exists(fb)):
            continue
        values = [value] if value else list(dict.fromkeys(r.get(col, "") for r in report.rows(run_a, role)))
        if name == "latency":  # the small sizes only
            keep = f"(column('{x}') <= 65536 ? column('{x}') : NaN)"
        else:
            keep = f"column('{x}')"
        for v in values:
            lt += 1
            sel = f"(strcol('{col}') eq {gp_string(v)} ? {keep} : NaN):(column('{y}'))"
            plots.append(f"{gp_string(fa)} using {sel} with linespoints lt {lt} title {gp_string(v + ' (A)')}")
            plots.append(f"{gp_string(fb)} using {sel} with linespoints lt {lt} dt 2 pt 6 title {gp_string(v + ' (B)')}")
    if not plots:
        return None
    lines += [f"eval set_term('png', {gp_string(name)})", "plot " + ", \\\n     ".join(plots)]
    return "\n".join(lines) + "\n"


def draw(out, run_a, run_b, quiet):
    """plots/NAME.png for each overlay both runs have data for; [(caption, path)]."""
    drawn = []
    for name, title, ylabel, logy, series in OVERLAYS:
        script = overlay_script(out, run_a, run_b, name, title, ylabel, logy, series)
        if not script:
            continue
        try:
            p = subprocess.run(["gnuplot"], input=script, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            if not quiet:
                print(f"{ME}: {name}: gnuplot did not run: {e}", file=sys.stderr)
            continue
        png = os.path.join(out, "plots", name + ".png")
        if p.returncode == 0 and os.path.exists(png):
            drawn.append((f"{title}, both runs", f"plots/{name}.png"))
        elif not quiet:
            print(f"{ME}: {name}: gnuplot failed (exit {p.returncode}): {p.stderr.strip()[-300:]}", file=sys.stderr)
    return drawn


def run_about(run, meta):
    return f"{run} ({report.version_of(meta)}, {meta.get('date', '?')}, host {meta.get('host', '?')})"


def blocks(run_a, run_b, ma, mb, shp, rows, drawn):
    worse = any(r["verdict"] == "worse" for r in rows)
    about = (f"A: {run_about(run_a, ma)} · B: {run_about(run_b, mb)} · "
             + ", ".join(f"{k} {v}" for k, v in shp.items()))
    b = [("h", 1, f"parabench: {os.path.basename(os.path.normpath(run_b))} against "
                  f"{os.path.basename(os.path.normpath(run_a))}", None, None),
         ("about", about),
         ("banner", not worse, "Against A: " + ("WORSE" if worse else "no regression"), summary(rows)),
         ("h", 2, "Figures, A against B", "figures", "compare.csv"),
         ("p", "Each run's figure give or take its spread, taken from its own samples (median and minimum, its two "
               "estimates of the mean; DP's paired estimates); noise: the two spreads added. Same: the two ranges "
               "overlap. B/A below 1 is slower for a rate, faster for a time."),
         ("table", HEAD, [table_cells(r) for r in rows], len(HEAD) - 1)]
    if drawn:
        b.append(("h", 2, "Curves of both runs", "curves", None))
        b += [("figure", caption, path) for caption, path in drawn]
    return b


def parse_args(argv, out_flags):
    """(quiet, plots, out, runs) of a tool's command line: --quiet, --no-plots, OUT_FLAGS FOLDER
    (or --out=FOLDER), then the runs. Shared with parabench-history; an option given twice is
    refused, as every parabench tool refuses it."""
    quiet, plots, out, args, seen = False, True, None, [], set()
    it = iter(argv)
    for a in it:
        flag = "--out" if a.startswith("--out=") or a in out_flags else a
        if flag.startswith("-") and flag in seen:
            raise Refusal(f"option {a.split('=')[0]}: is given twice; give it once")
        seen.add(flag)
        if a == "--quiet":
            quiet = True
        elif a == "--no-plots":
            plots = False
        elif a in out_flags:
            out = next(it, None)
            if not out:
                raise Refusal(f"{a} needs a folder")
        elif a.startswith("--out="):
            out = a[len("--out="):]
        elif a.startswith("-"):
            raise Refusal(f"option {a}: unknown; see --help")
        else:
            args.append(a)
    return quiet, plots, out, args


def main(argv):
    if "--version" in argv:
        print(version.string(os.environ.get("BUILD", "build")))
        return 0
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    quiet, plots, out, args = parse_args(argv, ("--out",))
    if len(args) != 2:
        raise Refusal("give two runs, RUN_A (the reference) and RUN_B; see --help")
    run_a, run_b = args
    ma, mb, shp = check_comparable(run_a, run_b)
    if out is None:
        out = f"compare-{os.path.basename(os.path.normpath(run_a))}-vs-{os.path.basename(os.path.normpath(run_b))}"
    check_out(out, (run_a, run_b))
    rows = compare_rows(run_a, run_b)
    if not rows:
        raise Refusal("the runs hold no figure to compare (no benchmark results)")
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    table = text_table(rows)
    line = f"{ME}: B {run_b} against A {run_a}: {summary(rows)}"
    atomic_file.write_text(os.path.join(out, "compare.txt"), table + "\n" + line + "\n")
    write_csv(os.path.join(out, "compare.csv"), rows)
    doc = {"a": {"run": run_a, "date": ma.get("date"), "version": report.version_of(ma)},
           "b": {"run": run_b, "date": mb.get("date"), "version": report.version_of(mb)},
           "shape": shp, "worse": any(r["verdict"] == "worse" for r in rows),
           "counts": counts(rows), "summary": summary(rows),
           "figures": [{k: json_value(r[k]) for k in FIELDS} for r in rows]}
    atomic_file.write_text(os.path.join(out, "compare.json"), json.dumps(doc, indent=1) + "\n")
    drawn = draw(out, run_a, run_b, quiet) if plots else []
    report.write_html(out, blocks(run_a, run_b, ma, mb, shp, rows, drawn))
    if not quiet:
        print(table)
    print(line)
    return 1 if doc["worse"] else 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except Refusal as e:
        print(f"{ME}: {e}", file=sys.stderr)
        sys.exit(2)
    except OSError as e:
        print(f"{ME}: cannot write {e.filename or 'the comparison'}: {e.strerror or e}", file=sys.stderr)
        sys.exit(3)
