#!/usr/bin/env python3
"""Draw a run's figures and write its report.

    scripts/report.py [--quiet] [--no-plots] RESULTS_DIR

Runs every plots/*.gp on the directory (gnuplot; a figure without data is
skipped with a note), then writes RESULTS_DIR/summary.txt (the headlines),
report.md and index.html (self-contained: the PNGs are embedded). Standard
library only. Exit 0, or 2 when RESULTS_DIR is not a directory.
"""
import base64
import csv
import glob
import html
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

FIGURES = [  # name, caption
    ("busbw", "Bus bandwidth vs message size, every collective"),
    ("latency", "Small-message latency: collectives and point-to-point"),
    ("algbw_busbw", "algbw vs busbw on one collective"),
    ("intra_inter", "The same collective inside one node and across nodes"),
    ("p2p_bw", "Point-to-point bandwidth"),
    ("p2p_matrix", "Every pair of ranks: latency and bandwidth"),
    ("groups", "Concurrent groups (node or rail): the median group and the slowest"),
    ("dp_overhead", "Data-parallel overhead vs gradient size, with the comm/compute prediction"),
    ("tp_fraction", "Tensor-parallel communication fraction vs hidden size"),
    ("pp_efficiency", "Pipeline efficiency vs micro-batches, against m/(m+p-1)"),
    ("pp_timeline", "One pipeline step: the bubble"),
    ("plan_fit", "Predicted (plan --fit) vs measured"),
]

TABLES = {  # file -> columns shown in the report
    "coll_sweep": ["collective", "bytes", "nranks", "link_class", "time_us", "algbw_GBps", "busbw_GBps", "wrong"],
    "coll_sweep_intra": ["collective", "bytes", "nranks", "link_class", "time_us", "algbw_GBps", "busbw_GBps", "wrong"],
    "p2p_sweep": ["mode", "bytes", "rank_a", "rank_b", "link_class", "time_us", "bw_GBps", "wrong"],
    "p2p_matrix-pairs": ["a", "b", "link_class", "latency_us", "bw_GBps", "slow"],
    "dp_allreduce": ["nranks", "link_class", "grad_bytes", "overlap", "compute_us", "comm_us", "step_us", "overhead",
                     "predicted_overhead", "busbw_GBps", "wrong"],
    "tp_layer": ["tp", "link_class", "mode", "hidden", "compute_us", "comm_us", "step_us", "comm_fraction",
                 "comm_bytes_per_rank", "speedup", "wrong"],
    "pp_pipeline": ["schedule", "stages", "micro_batches", "link_class", "step_us", "efficiency", "efficiency_theory",
                    "bubble_fraction", "peak_act_bytes", "wrong"],
    "hybrid_3d": ["placement", "tp", "pp", "dp", "tp_link", "pp_link", "dp_link", "step_us", "compute_us",
                  "tp_comm_us", "pp_wait_us", "dp_comm_us", "wrong"],
    "plan_fit": ["benchmark", "row", "predicted_us", "measured_us", "rel_error"],
}


def rows(out, name):
    path = os.path.join(out, name + ".csv")
    if not os.path.exists(path):
        return []
    try:
        with open(path, newline="") as f:
            return list(csv.DictReader(l for l in f if l.strip() and not l.startswith("#")))
    except (OSError, csv.Error):
        return []


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


def human_bytes(b):
    b = int(b)
    for unit, shift in (("G", 30), ("M", 20), ("K", 10)):
        if b >= 1 << shift and b % (1 << shift) == 0:
            return f"{b >> shift}{unit}"
    return str(b)


def draw(out, quiet):
    """Run every plots/*.gp; return {figure: note} for the ones skipped or failed."""
    notes = {}
    os.makedirs(os.path.join(out, "plots"), exist_ok=True)
    log = open(os.path.join(out, "plots", "gnuplot.log"), "w")
    for script in sorted(glob.glob(os.path.join(ROOT, "plots", "*.gp"))):
        name = os.path.basename(script)[:-3]
        if name == "common":
            continue
        try:
            p = subprocess.run(["gnuplot", "-c", script, out], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            notes[name] = f"gnuplot did not run: {e}"
            continue
        log.write(f"== {name} (exit {p.returncode})\n{p.stdout}{p.stderr}")
        skip = [l[6:] for l in p.stdout.splitlines() if l.startswith("skip: ")]
        if skip:
            notes[name] = skip[0]
        elif p.returncode != 0 or not os.path.exists(os.path.join(out, "plots", name + ".png")):
            notes[name] = f"gnuplot failed (exit {p.returncode}); see plots/gnuplot.log"
        if name in notes and not quiet:
            print(f"report: {name}: {notes[name]}", file=sys.stderr)
    log.close()
    return notes


def headlines(out):
    """The summary lines: bus bandwidth intra/inter, DP overhead, TP fraction, PP efficiency."""
    lines = []
    coll = rows(out, "coll_sweep") + rows(out, "coll_sweep_intra")
    for link in ("intra", "inter", "mixed"):
        ar = [r for r in coll if r.get("collective") == "allreduce" and r.get("link_class") == link]
        if ar:
            best = max(ar, key=lambda r: num(r, "busbw_GBps", 0))
            small = min(ar, key=lambda r: num(r, "bytes", 0))
            lines.append(f"allreduce busbw, {link}-node: {num(best, 'busbw_GBps'):.2f} GB/s peak at "
                         f"{human_bytes(best['bytes'])} B ({best['nranks']} ranks); "
                         f"{num(small, 'time_us'):.1f} us at {small['bytes']} B")
    p2p = rows(out, "p2p_sweep")
    lat = [r for r in p2p if r.get("mode") == "latency"]
    bw = [r for r in p2p if r.get("mode") == "bw"]
    if lat and bw:
        best = max(bw, key=lambda r: num(r, "bw_GBps", 0))
        lines.append(f"p2p ({lat[0]['link_class']}): {num(lat[0], 'time_us'):.2f} us at {lat[0]['bytes']} B; "
                     f"{num(best, 'bw_GBps'):.2f} GB/s at {human_bytes(best['bytes'])} B")
    dp = rows(out, "dp_allreduce")
    if dp:
        big = max(num(r, "grad_bytes", 0) for r in dp)
        parts = [f"{r['overlap']} {100 * num(r, 'overhead'):.0f}% (predicted {100 * num(r, 'predicted_overhead'):.0f}%)"
                 for r in dp if num(r, "grad_bytes", 0) == big]
        lines.append(f"DP overhead at {human_bytes(big)} B of gradients: " + ", ".join(parts))
    tp = rows(out, "tp_layer")
    if tp:
        big = max(num(r, "hidden", 0) for r in tp)
        parts = [f"{r['mode']} {100 * num(r, 'comm_fraction'):.0f}%" for r in tp if num(r, "hidden", 0) == big]
        lines.append(f"TP communication fraction at h={int(big)} (t={tp[0]['tp']}): " + ", ".join(parts))
    pp = rows(out, "pp_pipeline")
    if pp:
        parts = []
        for sched in dict.fromkeys(r["schedule"] for r in pp):
            sr = [r for r in pp if r["schedule"] == sched]
            r = max(sr, key=lambda r: num(r, "micro_batches", 0))
            parts.append(f"{sched} {num(r, 'efficiency'):.2f} vs theory {num(r, 'efficiency_theory'):.2f} "
                         f"({100 * num(r, 'efficiency') / num(r, 'efficiency_theory', 1):.0f}%)")
        lines.append(f"PP efficiency at m={pp[-1]['micro_batches']}, p={pp[0]['stages']}: " + ", ".join(parts))
    fit = rows(out, "plan_fit")
    if fit:
        errs = sorted(abs(num(r, "rel_error", 0)) for r in fit)
        lines.append(f"plan --fit: median |error| {100 * errs[len(errs) // 2]:.0f}% over {len(errs)} rows")
    return lines


def steps(out):
    path = os.path.join(out, "steps.tsv")
    if not os.path.exists(path):
        return []
    keys = ("name", "status", "rc", "seconds", "note")
    return [dict(zip(keys, l.rstrip("\n").split("\t"))) for l in open(path) if l.strip()]


def fmt_cell(v, unit):
    if unit == "B":
        try:
            return human_bytes(v)
        except ValueError:
            return v
    try:
        f = float(v)
    except ValueError:
        return v
    return v if f.is_integer() and abs(f) < 1e15 else f"{f:.4g}"


def table(out, name, limit=60):
    rs = rows(out, name)
    if not rs:
        return None, None
    cols = [c for c in TABLES[name] if c in rs[0]]
    unit = units(out, name)
    body = [[fmt_cell(r.get(c, ""), unit.get(c, "")) for c in cols] for r in rs[:limit]]
    return cols, body


def md_text(value):
    """A user string (host, launcher, note, CSV cell) as Markdown text: one
    line, no table break, no HTML: control characters as \\xNN, then
    HTML-escaped, '|' and '`' escaped."""
    text = "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in str(value))
    return html.escape(text).replace("|", "\\|").replace("`", "\\`")


def group_summary(out):
    """Summary lines for concurrent groups (coll_sweep --groups node|rail): per collective,
    at its largest size, the median busbw over the groups, the slowest group and the ratio."""
    for name in ("coll_sweep_intra", "coll_sweep"):
        rs = [r for r in rows(out, name) if r.get("group")]
        if len({r["group"] for r in rs}) > 1:
            break
    else:
        return []
    lines = [f"groups ({name}.csv, {len({r['group'] for r in rs})} groups), at each collective's largest size: "
             "median group busbw, slowest group, ratio"]
    for coll in dict.fromkeys(r["collective"] for r in rs):
        cr = [r for r in rs if r["collective"] == coll]
        big = max(num(r, "bytes", 0) for r in cr)
        at = sorted((r for r in cr if num(r, "bytes", 0) == big), key=lambda r: num(r, "busbw_GBps", 0))
        bw = [num(r, "busbw_GBps", 0) for r in at]
        k = len(bw)
        med = bw[k // 2] if k % 2 else (bw[k // 2 - 1] + bw[k // 2]) / 2
        ratio = f"{bw[0] / med:.2f}" if med > 0 else "n/a"
        lines.append(f"{coll} at {human_bytes(big)} B: median {med:.3f} GB/s; slowest {at[0]['group']} "
                     f"{bw[0]:.3f} GB/s; ratio {ratio}")
    return lines


def write_md(out, meta, lines, notes, st, accept):
    md = [f"# parabench run {md_text(os.path.basename(out))}", ""]
    mach = meta.get("machine", {})
    md += [f"- date: {md_text(meta.get('date', '?'))}; host: {md_text(meta.get('host', '?'))}; "
           f"profile: {md_text(meta.get('profile', '?'))}",
           f"- ranks: {md_text(meta.get('nranks', '?'))} ({md_text(meta.get('devices', '?'))}), "
           f"launcher: {md_text(meta.get('launch', '?'))}",
           f"- backend: {md_text(mach.get('backend', meta.get('backend', '?')))} "
           f"({md_text(mach.get('backend_library', '?'))}); git {md_text(mach.get('git_revision', '?'))}", ""]
    md += ["## Summary", ""] + [f"- {l}" for l in lines] + [""]
    if st:
        md += ["## Steps", "", "| step | status | exit | seconds | note |", "| --- | --- | --- | --- | --- |"]
        md += ["| " + " | ".join(md_text(s.get(k, "")) for k in ("name", "status", "rc", "seconds", "note")) + " |"
               for s in st] + [""]
    if accept:
        md += ["## Acceptance", "", "```", accept.rstrip(), "```", ""]
    md += ["## Figures", ""]
    for name, caption in FIGURES:
        if os.path.exists(os.path.join(out, "plots", name + ".png")):
            md += [f"### {caption}", "", f"![{caption}](plots/{name}.png)", ""]
        else:
            md += [f"### {caption}", "", f"_not drawn: {notes.get(name, 'no data')}_", ""]
    md += ["## Tables", ""]
    for name in TABLES:
        cols, body = table(out, name)
        if not cols:
            continue
        md += [f"### {name}.csv", "", "| " + " | ".join(cols) + " |", "|" + " --- |" * len(cols)]
        md += ["| " + " | ".join(md_text(c) for c in r) + " |" for r in body] + [""]
    open(os.path.join(out, "report.md"), "w").write("\n".join(md))


CSS = """body{font-family:system-ui,sans-serif;max-width:1180px;margin:2em auto;padding:0 1em;color:#222}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0}td,th{border:1px solid #ddd;padding:.2em .5em;text-align:right}
th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}img{max-width:100%;border:1px solid #eee}
.ok{color:#080}.failed,.FAIL{color:#b00;font-weight:bold}.skipped{color:#888}pre{background:#f6f6f6;padding:.6em;overflow-x:auto}
figure{margin:1em 0}figcaption{font-weight:bold;margin-bottom:.3em}.note{color:#888;font-style:italic}"""


def write_html(out, meta, lines, notes, st, accept):
    e = html.escape
    h = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>parabench {e(os.path.basename(out))}</title>",
         f"<style>{CSS}</style></head><body><h1>parabench run {e(os.path.basename(out))}</h1>"]
    mach = meta.get("machine", {})
    h.append(f"<p>{e(str(meta.get('date', '')))} &middot; host {e(str(meta.get('host', '')))} &middot; profile "
             f"{e(str(meta.get('profile', '')))} &middot; {e(str(meta.get('nranks', '')))} ranks "
             f"({e(str(meta.get('devices', '')))}) &middot; backend {e(str(mach.get('backend', meta.get('backend', ''))))} "
             f"&middot; git {e(str(mach.get('git_revision', '?')))}</p>")
    h.append("<h2>Summary</h2><ul>" + "".join(f"<li>{e(l)}</li>" for l in lines) + "</ul>")
    if st:
        h.append("<h2>Steps</h2><table><tr><th>step</th><th>status</th><th>exit</th><th>seconds</th><th>note</th></tr>")
        h += [f"<tr><td>{e(s['name'])}</td><td class='{e(s['status'].split()[0])}'>{e(s['status'])}</td><td>{e(s['rc'])}</td>"
              f"<td>{e(s['seconds'])}</td><td>{e(s['note'])}</td></tr>" for s in st]
        h.append("</table>")
    if accept:
        h.append(f"<h2>Acceptance</h2><pre>{e(accept)}</pre>")
    h.append("<h2>Figures</h2>")
    for name, caption in FIGURES:
        png = os.path.join(out, "plots", name + ".png")
        if os.path.exists(png):
            data = base64.b64encode(open(png, "rb").read()).decode()
            h.append(f"<figure><figcaption>{e(caption)}</figcaption><img alt='{e(caption)}' "
                     f"src='data:image/png;base64,{data}'></figure>")
        else:
            h.append(f"<p><b>{e(caption)}</b>: <span class='note'>not drawn: {e(notes.get(name, 'no data'))}</span></p>")
    h.append("<h2>Tables</h2>")
    for name in TABLES:
        cols, body = table(out, name)
        if not cols:
            continue
        h.append(f"<h3>{e(name)}.csv</h3><table><tr>" + "".join(f"<th>{e(c)}</th>" for c in cols) + "</tr>")
        h += ["<tr>" + "".join(f"<td>{e(v)}</td>" for v in r) + "</tr>" for r in body]
        h.append("</table>")
    h.append("</body></html>")
    open(os.path.join(out, "index.html"), "w").write("\n".join(h))


def main(argv):
    quiet = "--quiet" in argv
    plots = "--no-plots" not in argv
    args = [a for a in argv if not a.startswith("--")]
    if len(args) != 1 or not os.path.isdir(args[0]):
        print("report.py: give one results directory (a run_all.sh output)", file=sys.stderr)
        return 2
    out = os.path.abspath(args[0])
    notes = draw(out, quiet) if plots else {}
    try:
        meta = json.load(open(os.path.join(out, "meta.json")))
    except (OSError, ValueError):
        meta = {}
    lines = headlines(out) + group_summary(out)
    accept_path = os.path.join(out, "acceptance.txt")
    accept = open(accept_path).read() if os.path.exists(accept_path) else ""
    st = steps(out)
    open(os.path.join(out, "summary.txt"), "w").write("\n".join(lines) + "\n")
    write_md(out, meta, lines, notes, st, accept)
    write_html(out, meta, lines, notes, st, accept)
    if not quiet:
        print(f"report: {out}/report.md, {out}/index.html", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
