#!/usr/bin/env python3
"""Draw a run's figures and write its report.

    scripts/report.py [--quiet] [--no-plots] RESULTS_DIR

Runs every plots/*.gp on the directory (gnuplot; a figure without data is
skipped with a note; the data that needs the hosts first: scripts/figure_data.py), then writes RESULTS_DIR/summary.txt (the headlines),
report.md and index.html (self-contained: the PNGs are embedded; no
JavaScript). Both read in the order a cluster operator needs: the acceptance
verdict with its failing rules (when acceptance ran), the headline figures
against their expected values, the suspects (hosts ranked by the evidence
against them: suspects.csv, good-hosts.txt; scripts/suspects.py), the
documents' figures (when the run has a reproduce.csv), then steps, every acceptance rule, figures and tables.
Standard library only. Exit 0, or 2 when RESULTS_DIR is not a directory.
"""
import base64
import csv
import glob
import html
import json
import math
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from suite import atomic_file, paths  # noqa: E402  (whole files or none; where the binaries are)
from suite import results_csv  # noqa: E402  (a garbled row is left out, named FILE:LINE)
from suite.meta import is_run, read_steps  # noqa: E402  (steps.tsv, as the driver wrote it)
from suite.units import size_text  # noqa: E402  (bytes in words, or compact for a cell)
from suite import manifest  # noqa: E402  (a step's output found by its role)
from suite.manifest import TABLES  # noqa: E402  (CSV name -> columns shown, declared with each step)
from suite import manifest  # noqa: E402  (a step's files, found by its role)
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import suspects  # noqa: E402  (the hosts the evidence points at: suspects.csv, good-hosts.txt)
import figure_data  # noqa: E402  (the figures' data that needs the hosts: the node-level matrix, group hosts)
import training_step  # noqa: E402  (the model's step from the measured parts)

FIGURES = [  # name, caption
    ("busbw", "Bus bandwidth vs message size, every collective"),
    ("latency", "Small-message latency: collectives and point-to-point"),
    ("algbw_busbw", "algbw vs busbw on one collective"),
    ("intra_inter", "The same collective inside one node and across nodes"),
    ("p2p_bw", "Point-to-point bandwidth"),
    ("p2p_matrix", "Every pair of ranks: latency and bandwidth"),
    ("groups", "Concurrent groups (node or rail): the median group and the slowest"),
    ("dp_overhead", "Data-parallel overhead vs gradient size, with the comm/compute prediction"),
    ("tp_fraction", "Tensor-parallel communication fraction vs bytes a rank moves a layer"),
    ("pp_efficiency", "Pipeline efficiency vs micro-batches, against m/(m+p-1)"),
    ("pp_timeline", "One pipeline step: the bubble"),
    ("plan_fit", "Predicted (plan --fit) vs measured"),
]



def csv_rows(out, name):
    """The rows of OUT/NAME.csv (a table of the manifest's, reproduce.csv)."""
    return results_csv.rows(os.path.join(out, name + ".csv"), "report")


def rows(out, role):
    """The rows of the CSV that the step playing ROLE wrote (suite/manifest.py's roles)."""
    return results_csv.rows(manifest.output(out, role), "report")


# The benchmarks' "# note: untrustworthy: ..." lines (docs/reliability.md): a figure taken from a
# difference of two times that is noise. The note names the row it is about.
UNTRUSTED = {  # by role
    "data parallel": (re.compile(r"untrustworthy: overhead \S+ \(grad (\d+) B, overlap ([^)]+)\): (.*)"),
                     ("grad_bytes", "overlap")),
    "pipeline parallel": (re.compile(r"untrustworthy: efficiency \S+ \(([^,]+), m=(\d+)\): (.*)"),
                    ("schedule", "micro_batches")),
    "sharded data parallel": (re.compile(r"untrustworthy: overhead \S+ \(prefetch (\w+), shard group (\d+)\): (.*)"),
                              ("prefetch", "shard_group")),
    "context parallel": (re.compile(r"untrustworthy: overhead \S+ \(overlap (\w+), cp (\d+)\): (.*)"), ("overlap", "cp")),
}


def untrusted(out, role):
    """{(key values of a row): why} for the rows of ROLE's CSV a note marks untrustworthy."""
    if role not in UNTRUSTED:
        return {}
    pattern, _ = UNTRUSTED[role]
    found = {}
    try:
        with open(manifest.output(out, role), errors="replace") as f:
            for line in f:
                m = pattern.match(line[len("# note: "):].strip()) if line.startswith("# note: ") else None
                if m:
                    found[m.groups()[:-1]] = m.groups()[-1].split(";")[0]
    except OSError:
        pass
    return found


def distrust(r, role, marks):
    """Why row R of ROLE's CSV is untrustworthy, or "" (MARKS: untrusted(out, ROLE))."""
    return marks.get(tuple(str(r.get(k, "")) for k in UNTRUSTED[role][1]), "") if marks else ""


def units(out, name):
    """{column: unit} from the run's JSON document (its "columns" schema, which
    the benchmark writes from its own column table); {} without one."""
    try:
        with open(os.path.join(out, name + ".json")) as f:
            return {c["key"]: c.get("unit", "") for c in json.load(f).get("columns", [])}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def num(r, key, default=float("nan")):
    try:
        return float(r.get(key, ""))
    except (TypeError, ValueError):
        return default


NO_GNUPLOT = "gnuplot is not installed (not on PATH)"


def draw(out, quiet):
    """Run every plots/*.gp; return {figure: note} for the ones skipped or failed."""
    notes = {}
    figure_data.write(out)
    log = open(os.path.join(out, "plots", "gnuplot.log"), "w")
    gnuplot = shutil.which("gnuplot")
    if not gnuplot:   # one reason for every figure (a GPU node or container often has no gnuplot)
        log.write(NO_GNUPLOT + "\n")
        if not quiet:
            print(f"report: {NO_GNUPLOT}: no figure drawn; the tables are in report.md", file=sys.stderr)
    for script in sorted(glob.glob(os.path.join(ROOT, "plots", "*.gp"))):
        name = os.path.basename(script)[:-3]
        if name == "common":
            continue
        if not gnuplot:
            notes[name] = NO_GNUPLOT
            continue
        try:
            p = subprocess.run(["gnuplot", "-c", script, out], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            notes[name] = f"gnuplot did not run: {e}"
            continue
        log.write(f"== {name} (exit {p.returncode})\n{p.stdout}{p.stderr}")
        # gnuplot's print writes to stderr: a "skip:" line may be on either stream.
        skip = [l[6:] for l in (p.stdout + p.stderr).splitlines() if l.startswith("skip: ")]
        if skip:
            notes[name] = skip[0].removeprefix(name + ": ")
        elif p.returncode != 0 or not os.path.exists(os.path.join(out, "plots", name + ".png")):
            notes[name] = f"gnuplot failed (exit {p.returncode}); see plots/gnuplot.log"
        if name in notes and not quiet:
            print(f"report: {name}: {notes[name]}", file=sys.stderr)
    log.close()
    return notes


def figure(name, value, unit, expected=None, basis="", why=""):
    """One row of the headline table: a measured value, and what it is expected to be, from where;
    WHY: the benchmark's reason to distrust the value, if it gave one."""
    return {"figure": name, "value": value, "unit": unit, "expected": expected, "basis": basis, "why": why}


def coll_headlines(out):
    coll = rows(out, "collectives over all ranks") + rows(out, "collectives inside each node")
    found = []
    for link in ("intra", "inter", "mixed"):
        ar = [r for r in coll if r.get("collective") == "allreduce" and r.get("link_class") == link]
        if ar:
            best = max(ar, key=lambda r: num(r, "busbw_GBps", 0))
            small = min(ar, key=lambda r: num(r, "bytes", 0))
            line = (f"allreduce busbw, {link}-node: {num(best, 'busbw_GBps'):.2f} GB/s peak at "
                    f"{size_text(best['bytes'])} ({best['nranks']} ranks); "
                    f"{num(small, 'time_us'):.1f} us at {size_text(small['bytes'])}")
            found.append((line, [
                figure(f"allreduce bus bandwidth, {link}-node, peak ({size_text(best['bytes'])}, "
                       f"{best['nranks']} ranks)", num(best, "busbw_GBps"), "GB/s"),
                figure(f"allreduce time, {link}-node, {size_text(small['bytes'])}", num(small, "time_us"), "us")]))
    return found


def p2p_headlines(out):
    p2p = rows(out, "point-to-point")
    lat = [r for r in p2p if r.get("mode") == "latency"]
    bw = [r for r in p2p if r.get("mode") == "bw"]
    if not (lat and bw):
        return []
    best = max(bw, key=lambda r: num(r, "bw_GBps", 0))
    link = lat[0]["link_class"]
    line = (f"p2p ({link}): {num(lat[0], 'time_us'):.2f} us at {size_text(lat[0]['bytes'])}; "
            f"{num(best, 'bw_GBps'):.2f} GB/s at {size_text(best['bytes'])}")
    return [(line, [figure(f"point-to-point latency, {link}, {size_text(lat[0]['bytes'])}", num(lat[0], "time_us"), "us"),
                    figure(f"point-to-point bandwidth, {link}, {size_text(best['bytes'])}", num(best, "bw_GBps"),
                           "GB/s")])]


def dp_headlines(out):
    dp = rows(out, "data parallel")
    if not dp:
        return []
    big = max(num(r, "grad_bytes", 0) for r in dp)
    at = [r for r in dp if num(r, "grad_bytes", 0) == big]
    marks = untrusted(out, "data parallel")
    why = {id(r): distrust(r, "data parallel", marks) for r in at}
    # An untrustworthy figure is shown as such, never as a finding.
    parts = [f"{r['overlap']} {100 * num(r, 'overhead'):.0f}% "
             + (f"(untrustworthy: {why[id(r)]})" if why[id(r)]
                else f"(predicted {100 * num(r, 'predicted_overhead'):.0f}%)") for r in at]
    line = f"DP overhead at {size_text(big)} of gradients: " + ", ".join(parts)
    return [(line, [figure(f"data-parallel overhead, {size_text(big)} of gradients, overlap {r['overlap']}",
                           num(r, "overhead"), "%", num(r, "predicted_overhead"), "comm/compute model", why[id(r)])
                    for r in at])]


def tp_headlines(out):
    tp = rows(out, "tensor parallel")
    if not tp:
        return []
    big = max(num(r, "hidden", 0) for r in tp)
    at = [r for r in tp if num(r, "hidden", 0) == big]
    # run_all sweeps the model's own layer at s/2, s and 2s: the headline is at s, the middle one
    seqs = sorted({num(r, "seq", 0) for r in at})
    s = seqs[len(seqs) // 2]
    at = [r for r in at if num(r, "seq", 0) == s]
    where = f"h={int(big)}" + (f", s={int(s)}" if len(seqs) > 1 else "")
    line = (f"TP communication fraction at {where} (t={tp[0]['tp']}): "
            + ", ".join(f"{r['mode']} {100 * num(r, 'comm_fraction'):.0f}%" for r in at))
    return [(line, [figure(f"tensor-parallel communication fraction, {where}, t={tp[0]['tp']}, {r['mode']}",
                           num(r, "comm_fraction"), "%") for r in at])]


def pp_headlines(out):
    pp = rows(out, "pipeline parallel")
    if not pp:
        return []
    parts, found = [], []
    marks = untrusted(out, "pipeline parallel")
    for sched in dict.fromkeys(r["schedule"] for r in pp):
        r = max((r for r in pp if r["schedule"] == sched), key=lambda r: num(r, "micro_batches", 0))
        why = distrust(r, "pipeline parallel", marks)
        tag = f" (untrustworthy: {why})" if why else ""
        parts.append(f"{sched} {num(r, 'efficiency'):.2f} vs theory {num(r, 'efficiency_theory'):.2f} "
                     + (tag.strip() if why else f"({100 * num(r, 'efficiency') / num(r, 'efficiency_theory', 1):.0f}%)"))
        found.append(figure(f"pipeline efficiency, {sched}, m={r['micro_batches']}, p={r['stages']}",
                            num(r, "efficiency"), "", num(r, "efficiency_theory"), "m/(m+p-1)", why))
    line = f"PP efficiency at m={pp[-1]['micro_batches']}, p={pp[0]['stages']}: " + ", ".join(parts)
    return [(line, found)]


def exposed_headlines(out, role, setting, what, tail=lambda r: ""):
    """One line for a workload that reports exposed communication over compute per SETTING (a column: off,
    on), each against its step model's, WHAT naming the model and shape; an untrustworthy row says why."""
    rs = rows(out, role)
    if not rs:
        return []
    marks = untrusted(out, role)
    why = {id(r): distrust(r, role, marks) for r in rs}
    predicted = {id(r): num(r, "predicted_exposed_us") / num(r, "compute_us", 1) for r in rs}
    parts = [f"{setting} {r[setting]} {100 * num(r, 'overhead'):.0f}% "
             + (f"(untrustworthy: {why[id(r)]})" if why[id(r)] else f"(predicted {100 * predicted[id(r)]:.0f}%)")
             for r in rs]
    name, model = what(rs[0])
    line = f"{name} exposed communication over compute ({model}): " + ", ".join(parts) + tail(rs[0])
    return [(line, [figure(f"{name} exposed communication over compute, {model}, {setting} {r[setting]}",
                           num(r, "overhead"), "%", predicted[id(r)], f"{name} step model", why[id(r)]) for r in rs])]


def fsdp_headlines(out):
    def group(r):
        return "FSDP", f"shard group of {r['shard_group']}" + (
            f" x {r['replicas']} replicas" if num(r, "replicas", 1) > 1 else "")
    return exposed_headlines(out, "sharded data parallel", "prefetch", group,
                             lambda r: f"; DP's all-reduce of the same gradient {100 * num(r, 'dp_overhead'):.0f}%")


def cp_headlines(out):
    return exposed_headlines(out, "context parallel", "overlap",
                             lambda r: ("CP", f"rings of {r['cp']}, {r['seq']} tokens"))


def moe_headlines(out):
    """Per EP group: the skewed dispatch's slowdown against uniform load, expected to be the heaviest
    rank's share over the mean (imbalance), and the all-to-alls' share of the layer at uniform load."""
    rs = rows(out, "expert parallel")
    if not rs:
        return []
    parts, found = [], []
    for group in dict.fromkeys(r["ep_group"] for r in rs):
        at = [r for r in rs if r["ep_group"] == group]
        even = next((r for r in at if num(r, "skew") == 1), None)
        hot = max(at, key=lambda r: num(r, "skew", 0))
        text = f"EP group of {group}:"
        if hot is not even:
            text += (f" dispatch at skew {hot['skew']} {num(hot, 'dispatch_vs_even'):.2f}x uniform (rank imbalance "
                     f"{num(hot, 'imbalance'):.2f})")
            found.append(figure(f"MoE dispatch under skew {hot['skew']} over uniform, EP group of {group}",
                                num(hot, "dispatch_vs_even"), "x", num(hot, "imbalance"),
                                "the heaviest rank's rows over the mean"))
        if even is not None:
            text += f"{',' if hot is not even else ''} all-to-alls {100 * num(even, 'a2a_share'):.0f}% of the layer"
            found.append(figure(f"MoE all-to-alls' share of the layer, EP group of {group}, uniform load",
                                num(even, "a2a_share"), "%"))
        parts.append(text)
    return [(f"MoE layer of {rs[0]['model']}: " + "; ".join(parts), found)]


def fit_headlines(out):
    fit = rows(out, "model fit")
    if not fit:
        return []
    # a row without a finite error (nothing measured) says nothing about the fit: left out, not counted as 0
    errs = sorted(abs(e) for e in (num(r, "rel_error") for r in fit) if math.isfinite(e))
    if not errs:
        return []
    med = errs[len(errs) // 2]
    line = f"plan --fit: median |error| {100 * med:.0f}% over {len(errs)} rows"
    return [(line, [figure(f"plan --fit: median |predicted - measured| / measured, {len(errs)} rows", med, "%")])]


def headline_figures(out):
    """[(summary line, [figure rows])]: bus bandwidth per link class, p2p, DP overhead against its
    prediction, TP fraction, PP efficiency against theory, FSDP's and CP's exposed communication against
    their models, MoE's dispatch under skew against the imbalance, plan --fit's error."""
    return (coll_headlines(out) + p2p_headlines(out) + step_headlines(out) + dp_headlines(out) + tp_headlines(out)
            + pp_headlines(out) + fsdp_headlines(out) + cp_headlines(out) + moe_headlines(out) + fit_headlines(out))


def step_headlines(out):
    """The run's model's training step assembled from the measured parts (scripts/training_step.py),
    beside the planner's prediction from the run's calibrated cluster file."""
    s = training_step.assemble(out)
    if not s:
        return []
    predicted = training_step.plan_step(out, s, os.path.join(paths.bin_dir(os.environ.get("BUILD", "build")), "plan"))
    line = training_step.line(s)
    if predicted:
        line += f"; plan predicts {predicted:.3f} s from cluster.txt ({100 * (s['step_us'] / 1e6 / predicted - 1):+.0f}%)"
    return [(line, [figure(f"training step of {s['model']} (TP {s['t']} x PP {s['p']} x DP {s['d']}), from measured "
                           "parts", s["step_us"] / 1e6, "s", predicted, "plan --cluster cluster.txt" if predicted else "")])]


def headlines(out):
    """The summary lines (summary.txt, and what run_all.sh prints)."""
    return [line for line, _ in headline_figures(out)]


def fmt_value(v, unit):
    if v is None or v != v:
        return "-"
    if unit == "%":
        return f"{100 * v:.0f}%"
    text = f"{v:.2f}" if abs(v) < 100 else f"{v:.0f}"
    return f"{text} {unit}".rstrip()


def figure_cells(f):
    """figure, measured, expected, measured / expected, expected from: the headline table's cells."""
    e, why = f["expected"], f.get("why")
    # An untrustworthy value is no finding: no ratio to its expectation, and it says why.
    ratio = "untrustworthy" if why else f"{100 * f['value'] / e:.0f}%" if e else "-"
    name = f"{f['figure']} (untrustworthy: {why})" if why else f["figure"]
    return [name, fmt_value(f["value"], f["unit"]), fmt_value(e, f["unit"]), ratio,
            f["basis"] or "no model value"]


FIGURE_HEAD = ["figure", "measured", "expected", "measured / expected", "expected from"]


def acceptance(out):
    """The acceptance verdict from acceptance.txt: {verdict: PASS|FAIL|None (did not finish),
    summary, failed: [[line, rule, measured, threshold, why]], text}; None when acceptance did not run."""
    path = os.path.join(out, "acceptance.txt")
    if not os.path.exists(path):
        return None
    text = open(path, errors="replace").read()
    res = {"verdict": None, "summary": "", "failed": [], "text": text}
    for l in text.splitlines():
        m = re.match(r"^acceptance: (.* rules): (PASS|FAIL)$", l)
        if m:
            res["summary"], res["verdict"] = m.groups()
        # the tool's columns: "%5d  %-58.58s %14s %16s  %s%s%s" (line, rule, measured, threshold, result, why)
        m = re.match(r"^\s*(\d+)  (.{58}) (.{14,}?) +(\S.{0,15}?)  FAIL\b\s*(.*)$", l)
        if m:
            res["failed"].append([m.group(1)] + [g.strip() for g in m.groups()[1:]])
        elif re.search(r"  FAIL\b", l):
            res["failed"].append(["", l.strip(), "", "", ""])
    return res


def failed_steps(st):
    return [s["name"] for s in st if s.get("status") in ("failed", "not built", "interrupted")
            and s["name"] != manifest.by_role("acceptance verdict").name]


REPRO_COLS = ["figure", "unit", "document_value", "formula_value", "measured_value", "ratio", "verdict",
              "configuration", "note"]
REPRO_HEAD = ["figure", "unit", "in the document", "formula", "measured", "ratio", "verdict", "configuration", "note"]
VERDICTS = ("reproduced", "differs", "not judged", "simulated", "skipped")


def reproduce(out):
    """The rows of reproduce.csv (run_all.sh --reproduce: the documents' figures against this run), [] without one."""
    return csv_rows(out, "reproduce")


def verdict_counts(rs):
    n = {v: sum(r.get("verdict") == v for r in rs) for v in VERDICTS}
    other = len(rs) - sum(n.values())
    return ", ".join(f"{n[v]} {v}" for v in VERDICTS) + (f", {other} other" if other else "")


def fmt_cell(v, unit):
    if unit == "B":
        try:
            return size_text(v, compact=True)
        except ValueError:
            return v
    try:
        f = float(v)
    except ValueError:
        return v
    if f.is_integer() and abs(f) < 1e15:
        return v
    if 1e4 <= abs(f) < 1e9:  # plain digits: 15480, not 1.548e+04
        return f"{f:.0f}"
    return f"{f:.4g}"


def table(out, name, limit=60):
    """(columns, formatted rows up to limit, total rows) of one CSV; (None, None, 0) without data."""
    rs = csv_rows(out, name)
    if not rs:
        return None, None, 0
    cols = [c for c in TABLES[name] if c in rs[0]]
    unit = units(out, name)
    body = [[fmt_cell(r.get(c, ""), unit.get(c, "")) for c in cols] for r in rs[:limit]]
    return cols, body, len(rs)


def md_text(value):
    """A user string (host, launcher, note, CSV cell) as Markdown text: one
    line, no table break, no HTML: control characters as \\xNN, then
    HTML-escaped, '|' and '`' escaped."""
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(value))
    return html.escape(text, quote=False).replace("|", "\\|").replace("`", "\\`")


def group_summary(out):
    """Summary lines for concurrent groups (coll_sweep --groups node|rail): per collective,
    at its largest size, the median busbw over the groups, the slowest group and the ratio."""
    for role in ("collectives inside each node", "collectives over all ranks"):
        rs = [r for r in rows(out, role) if r.get("group")]
        if len({r["group"] for r in rs}) > 1:
            break
    else:
        return []
    lines = [f"groups ({os.path.basename(manifest.output(out, role))}, {len({r['group'] for r in rs})} groups), at each collective's largest size: "
             "median group busbw, slowest group, ratio"]
    for coll in dict.fromkeys(r["collective"] for r in rs):
        cr = [r for r in rs if r["collective"] == coll]
        big = max(num(r, "bytes", 0) for r in cr)
        at = sorted((r for r in cr if num(r, "bytes", 0) == big), key=lambda r: num(r, "busbw_GBps", 0))
        bw = [num(r, "busbw_GBps", 0) for r in at]
        k = len(bw)
        med = bw[k // 2] if k % 2 else (bw[k // 2 - 1] + bw[k // 2]) / 2
        ratio = f"{bw[0] / med:.2f}" if med > 0 else "n/a"
        lines.append(f"{coll} at {size_text(big)}: median {med:.3f} GB/s; slowest {at[0]['group']} "
                     f"{bw[0]:.3f} GB/s; ratio {ratio}")
    return lines


# ---- the report as a list of blocks in reading order; write_md and write_html render the same list ----
#   ("h", level, text, anchor, link)   a heading; link: a file of the run shown beside it, or None
#   ("banner", ok, title, text)        the verdict
#   ("about", text) ("note", text) ("list", [text]) ("pre", text) ("p", text)
#   ("table", head, body, colour)      colour: index of a column whose value is also a CSS class, or None
#   ("figure", caption, path)          a PNG of the run
#   ("toc", [(anchor, text)])          HTML only

COMPARISON = "comparison with the baseline"  # the step's role (--baseline RUN)


def comparison(out, st):
    """This run against its --baseline (compare/compare.json): {doc, status, rc, why}; None
    when the run had no baseline. Without compare.json, WHY is the last line the step wrote on stderr
    (runs of another shape, or steps that differ: parabench-compare's refusal)."""
    step = manifest.by_role(COMPARISON)
    rec = next((s for s in st if s["name"] == step.name), None)
    if rec is None:
        return None
    res = {"doc": None, "status": rec.get("status", ""), "rc": rec.get("rc", ""), "why": ""}
    try:
        with open(os.path.join(out, step.outputs[0], "compare.json")) as f:  # its folder, as the manifest names it
            res["doc"] = json.load(f)
    except (OSError, ValueError):
        try:
            with open(os.path.join(out, "logs", step.name + ".err"), errors="replace") as f:
                said = [line.strip() for line in f if line.strip()]
        except OSError:
            said = []
        res["why"] = said[-1].removeprefix("parabench-compare: ") if said else ""
    return res


def compare_value(v, unit):
    return "-" if v is None else f"{v:.4g} {unit}".rstrip()


def comparison_blocks(c):
    """The verdict against the baseline, and the figures that moved beyond the noise (worse first)."""
    if c is None:
        return []
    doc = c["doc"]
    if doc is None:
        title = "not compared" if c["status"] == "refused" else "no comparison"
        why = c["why"] or f"the comparison step {c['status']} (exit {c['rc']})"
        return [("banner", False, f"Against the baseline: {title}", f"{why} (see logs/)")]
    baseline = doc.get("a", {}).get("run", "?")
    b = [("banner", not doc.get("worse"), "Against the baseline: " + ("WORSE" if doc.get("worse") else "no regression"),
          f"{doc.get('summary', '').removeprefix('WORSE: ')}; baseline {baseline}")]
    moved = sorted((f for f in doc.get("figures", []) if f.get("verdict") in ("worse", "better")),
                   key=lambda f: f["verdict"] != "worse")
    if moved:
        b += [("h", 3, "Figures that moved against the baseline", None, "compare/index.html"),
              ("table", ["figure", "baseline", "this run", "this / baseline", "noise", "verdict"],
               [[f["figure"], compare_value(f.get("a"), f["unit"]), compare_value(f.get("b"), f["unit"]),
                 "-" if f.get("ratio") is None else f"{f['ratio']:.3f}",
                 "-" if f.get("noise") is None else "±" + compare_value(f["noise"], f["unit"]), f["verdict"]]
                for f in moved], 5)]
    return b


def verdict_blocks(acc, st, compared=None):
    """What a cluster operator needs first: the acceptance verdict and its failing rules, what moved
    against the baseline, failed steps."""
    b = []
    if acc:
        if acc["verdict"]:
            b.append(("banner", acc["verdict"] == "PASS", f"Acceptance: {acc['verdict']}", acc["summary"]))
        else:
            b.append(("banner", False, "Acceptance: no verdict",
                      "acceptance.txt has no verdict line; see logs/acceptance.err"))
        if acc["failed"]:
            b.append(("table", ["line", "failing rule", "measured", "threshold", "why"], acc["failed"], None))
    b += comparison_blocks(compared)
    bad = failed_steps(st)
    if bad:
        b.append(("banner", False, "Steps that did not complete", ", ".join(bad) + " (see Steps and logs/)"))
    return b


def headline_blocks(groups, lines):
    """The headline figures against their expected values; summary lines that have no row (added by
    other summaries) follow as a list."""
    covered = {line for line, _ in groups}
    body = [figure_cells(f) for _, fs in groups for f in fs]
    others = [l for l in lines if l not in covered]
    b = [("h", 2, "Headline figures", "headlines", "summary.txt")]
    b += [("table", FIGURE_HEAD, body, None)] if body else []
    b += [("list", others)] if others else []
    return b + ([] if body or others else [("note", "no benchmark results")])


SUSPECT_SHOWN = 20  # the table's rows; every host is in suspects.csv


def suspect_blocks(v):
    """The hosts ranked by the evidence against them, and what the next job should run on."""
    if v is None:
        return []
    b = [("h", 2, "Suspects", "suspects", "suspects.csv")]
    if v.suspects:
        b.append(("p", f"{len(v.suspects)} of {len(v.hosts)} hosts have a score above {suspects.THRESHOLD}: "
                       + ", ".join(v.suspects) + f". good-hosts.txt lists the other {len(v.hosts) - len(v.suspects)}"
                       " with their slots, a hostfile for the next job."))
    else:
        b.append(("p", f"no suspects: no host of {len(v.hosts)} has a score above {suspects.THRESHOLD}; "
                       "good-hosts.txt lists every host."))
    shown = [[h, f"{s:.2f}", str(len(why)), "; ".join(why)] for h, s, why in v.ranked if why][:SUSPECT_SHOWN]
    if shown:
        b.append(("table", ["host", "score", "evidence", "reasons"], shown, None))
    return b


def reproduce_blocks(rs):
    if not rs:
        return []
    values = {"document_value", "formula_value", "measured_value", "ratio"}
    body = [[fmt_cell(r.get(c) or "", "") if c in values else r.get(c) or "" for c in REPRO_COLS] for r in rs]
    return [("h", 2, "The documents' figures", "reproduce", "reproduce.csv"),
            ("p", "Each figure the documents quote, with its formula's value and this run's measurement: "
                  + verdict_counts(rs) + "."),
            ("table", REPRO_HEAD, body, REPRO_COLS.index("verdict"))]


def figure_blocks(out, notes):
    b = [("h", 2, "Figures", "figures", None)]
    for name, caption in FIGURES:
        if name == "p2p_matrix" and os.path.exists(figure_data.node_matrix_path(out, "latency")):
            caption = "Every pair of nodes (median of its rank pairs): latency and bandwidth"  # as the plot draws it
        if os.path.exists(os.path.join(out, "plots", name + ".png")):
            b.append(("figure", caption, f"plots/{name}.png"))
        else:
            b += [("h", 3, caption, None, None), ("note", f"not drawn: {notes.get(name, 'no data')}")]
    return b


def table_blocks(out):
    b = [("h", 2, "Tables", "tables", None)]
    for name in TABLES:
        cols, body, total = table(out, name)
        if not cols:
            continue
        b += [("h", 3, f"{name}.csv", None, f"{name}.csv"), ("table", cols, body, None)]
        if total > len(body):
            b.append(("note", f"the first {len(body)} of {total} rows; every row is in {name}.csv"))
    return b


def detail_blocks(out, notes, st, acc):
    """After the verdicts: steps, every acceptance rule, figures, tables."""
    b = []
    if st:
        b += [("h", 2, "Steps", "steps", "steps.tsv"),
              ("table", ["step", "status", "exit", "seconds", "note"],
               [[s.get(k, "") for k in ("name", "status", "rc", "seconds", "note")] for s in st], 1)]
    if acc:
        b += [("h", 2, "Acceptance: every rule", "acceptance", "acceptance.txt"), ("pre", acc["text"].rstrip())]
    return b + figure_blocks(out, notes) + table_blocks(out)


def version_of(meta):
    """The suite's version (run_all's, in meta.json) and, when they differ from it, the
    benchmarks' (each binary's JSON metadata): results of mixed builds say so. A run from
    before versions were recorded shows its git revision."""
    mach = meta.get("machine", {})
    suite = meta.get("version") or mach.get("version") or f"parabench (git {mach.get('git_revision', '?')})"
    binaries = mach.get("version")
    return suite if not binaries or binaries == suite else f"{suite} (benchmarks: {binaries})"


def report_blocks(out, meta, groups, lines, notes, st, acc, verdict=None, compared=None):
    """The whole report in reading order: verdict, headline figures, the documents' figures, details."""
    mach = meta.get("machine", {})
    about = (f"{version_of(meta)} · {meta.get('date', '?')} · host {meta.get('host', '?')} · "
             f"profile {meta.get('profile', '?')} · "
             + (f"only the steps {', '.join(meta['selected_steps'])} · " if meta.get("selected_steps") else "") +
             f"{meta.get('nranks', '?')} ranks ({meta.get('devices', '?')}) · launcher {meta.get('launch', '?')} · "
             f"backend {mach.get('backend', meta.get('backend', '?'))} ({mach.get('backend_library', '?')})")
    repro = reproduce(out)
    toc = [("headlines", "Headline figures")] + ([("suspects", "Suspects")] if verdict else [])
    toc += ([("reproduce", "The documents' figures")] if repro else [])
    toc += ([("steps", "Steps")] if st else []) + ([("acceptance", "Acceptance")] if acc else [])
    toc += [("figures", "Figures"), ("tables", "Tables")]
    return ([("h", 1, f"parabench run {os.path.basename(out)}", None, None), ("about", about), ("toc", toc)]
            + verdict_blocks(acc, st, compared) + headline_blocks(groups, lines) + suspect_blocks(verdict)
            + reproduce_blocks(repro)
            + detail_blocks(out, notes, st, acc))


def md_table(head, body):
    return (["| " + " | ".join(md_text(c) for c in head) + " |", "|" + " --- |" * len(head)]
            + ["| " + " | ".join(md_text(c) for c in r) + " |" for r in body] + [""])


def md_block(b):
    kind = b[0]
    if kind == "h":
        _, level, text, _, link = b
        return ["#" * level + " " + md_text(text) + (f" ([{link}]({link}))" if link else ""), ""]
    if kind == "banner":
        return [f"> **{md_text(b[2])}**: {md_text(b[3])}", ""]
    if kind in ("about", "p"):
        return [md_text(b[1]), ""]
    if kind == "note":
        return [f"_{md_text(b[1])}_", ""]
    if kind == "list":
        return [f"- {md_text(t)}" for t in b[1]] + [""]
    if kind == "pre":
        return ["```", b[1].replace("`", "'"), "```", ""]
    if kind == "table":
        return md_table(b[1], b[2])
    if kind == "figure":
        return [f"### {md_text(b[1])}", "", f"![{md_text(b[1])}]({b[2]})", ""]
    return []  # toc: Markdown viewers list the headings themselves


def write_md(out, blocks):
    atomic_file.write_text(os.path.join(out, "report.md"), "\n".join(line for b in blocks for line in md_block(b)))


CSS = """body{font-family:system-ui,sans-serif;max-width:1180px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
h3{font-size:1.05em;margin:1.2em 0 .3em}h2 small,h3 small{font-weight:normal;font-size:.7em}
.about{color:#555;margin-top:0}.toc a{margin-right:1.2em}.scroll{overflow-x:auto}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.2em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.num{text-align:right;white-space:nowrap;font-variant-numeric:tabular-nums}
img{max-width:100%;border:1px solid #eee}figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}
.banner{padding:.6em 1em;margin:1em 0 .4em;border-radius:4px;font-size:1.1em}
.banner.pass{background:#e6f4e6;border:1px solid #7b7}.banner.fail{background:#fbe9e9;border:1px solid #d77}
.ok,.reproduced{color:#080}.failed,.interrupted,.differs{color:#b00;font-weight:bold}
.worse{color:#b00;font-weight:bold}.better{color:#080}
.skipped,.simulated{color:#777}.note{color:#777;font-style:italic}
pre{background:#f6f6f6;padding:.6em;overflow-x:auto;font-size:.85em}"""

# A cell that reads as a number, with at most a short unit: right-aligned.
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?( ?[A-Za-z/%]{1,4})?$")


def html_table(head, body, colour):
    e = html.escape
    numeric = [bool(body) and all(NUMBER.match(str(r[i])) or str(r[i]) in ("", "-") for r in body)
               for i in range(len(head))]
    h = ["<div class='scroll'><table><tr>"
         + "".join(f"<th class='num'>{e(c)}</th>" if numeric[i] else f"<th>{e(c)}</th>" for i, c in enumerate(head))
         + "</tr>"]
    for r in body:
        cells = []
        for i, v in enumerate(r):
            cls = (["num"] if numeric[i] else []) + (str(v).split()[:1] if i == colour else [])
            attr = f" class='{e(' '.join(cls))}'" if cls else ""
            cells.append(f"<td{attr}>{e(str(v))}</td>")
        h.append("<tr>" + "".join(cells) + "</tr>")
    return h + ["</table></div>"]


def html_block(out, b):
    e = html.escape
    kind = b[0]
    if kind == "h":
        _, level, text, anchor, link = b
        ident = f" id='{anchor}'" if anchor else ""
        ref = f" <small>(<a href='{e(link)}'>{e(link)}</a>)</small>" if link else ""
        return [f"<h{level}{ident}>{e(text)}{ref}</h{level}>"]
    if kind == "banner":
        return [f"<div class='banner {'pass' if b[1] else 'fail'}'><b>{e(b[2])}</b>: {e(b[3])}</div>"]
    if kind == "about":
        return [f"<p class='about'>{e(b[1])}</p>"]
    if kind == "p":
        return [f"<p>{e(b[1])}</p>"]
    if kind == "note":
        return [f"<p class='note'>{e(b[1])}</p>"]
    if kind == "list":
        return ["<ul>" + "".join(f"<li>{e(t)}</li>" for t in b[1]) + "</ul>"]
    if kind == "pre":
        return [f"<pre>{e(b[1])}</pre>"]
    if kind == "table":
        return html_table(b[1], b[2], b[3])
    if kind == "figure":
        data = base64.b64encode(open(os.path.join(out, b[2]), "rb").read()).decode()
        return [f"<figure><figcaption>{e(b[1])}</figcaption><img alt='{e(b[1])}' "
                f"src='data:image/png;base64,{data}'></figure>"]
    if kind == "toc":
        return ["<p class='toc'>" + "".join(f"<a href='#{a}'>{e(t)}</a>" for a, t in b[1]) + "</p>"]
    return []


def write_html(out, blocks):
    """Self-contained (figures embedded) and readable without JavaScript."""
    h = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>parabench {html.escape(os.path.basename(out))}"
         f"</title><style>{CSS}</style></head><body>"]
    h += [line for b in blocks for line in html_block(out, b)]
    h.append("</body></html>")
    atomic_file.write_text(os.path.join(out, "index.html"), "\n".join(h))


def main(argv):
    quiet = "--quiet" in argv
    plots = "--no-plots" not in argv
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("report.py: give one results directory (a run_all.sh output)", file=sys.stderr)
        return 2
    if not is_run(args[0]):  # a folder of the user's own files is never written into
        print(f"report.py: '{args[0]}' is not a run's results folder (no meta.json or steps.tsv); "
              "expected a run_all.sh --out", file=sys.stderr)
        return 2
    out = os.path.abspath(args[0])
    notes = draw(out, quiet) if plots else {}
    try:
        meta = json.load(open(os.path.join(out, "meta.json")))
    except (OSError, ValueError):
        meta = {}
    groups = headline_figures(out)
    lines = headlines(out) + group_summary(out)
    acc = acceptance(out)
    st = read_steps(out)
    compared = comparison(out, st)
    # summary.txt (what run_all.sh prints at the end) ends with the verdict against the baseline
    against = [f"{b[2]}: {b[3]}" for b in comparison_blocks(compared)[:1]]
    atomic_file.write_text(os.path.join(out, "summary.txt"), "\n".join(lines + against) + "\n")
    blocks = report_blocks(out, meta, groups, lines, notes, st, acc, suspects.judge(out), compared)
    write_md(out, blocks)
    write_html(out, blocks)
    if not quiet:
        print(f"report: {out}/report.md, {out}/index.html", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except OSError as e:  # a full disk or a read-only results directory: the environment, exit 3
        print(f"report.py: cannot write {e.filename or 'the report'}: {e.strerror or e}", file=sys.stderr)
        sys.exit(3)
