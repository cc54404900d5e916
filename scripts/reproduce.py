#!/usr/bin/env python3
"""The documents' figures, scaled to this machine and measured (run_all.sh --reproduce).

  reproduce.py setup RESULTS NP     choose each benchmark's configuration from the rates the
                                    run measured (the collectives over all ranks, the compute
                                    rate, ...) and write RESULTS/reproduce/<step>.args (one
                                    argument a line; steps found by their roles, suite/manifest.py)
  reproduce.py write RESULTS PLAN   read the measurements back and write RESULTS/reproduce.csv

reproduce.csv: '#' lines (metadata, '# complete' last), then
figure,unit,document_value,formula_value,measured_value,ratio,verdict,configuration,note
with ratio = measured/document and verdict one of reproduced (within 15% of the
document's figure), differs, simulated, skipped. Exit: 0 ok, 2 usage, 3 missing input.
"""
import csv
import json
import math
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from suite import atomic_file  # noqa: E402  (whole files or none)
from suite import manifest  # noqa: E402  (a step's output and arguments found by its role)

COLUMNS = ["figure", "unit", "document_value", "formula_value", "measured_value", "ratio", "verdict",
           "configuration", "note"]
TOLERANCE = 0.15  # "reproduced": within 15% of the document's figure
DP_RATIO = 0.56 / 5.0  # the documents' 0.56 s of all-reduce over 5 s of compute
DP_SCAN = [0.1, 0.2, 0.3, 0.5]  # around the 20% rule of thumb, far enough above it that the measured overhead usually crosses it
RULE = 0.2
PP_EFF = 32 / 39  # p = 8, m = 32
PP_DOC = (8, 32)
# The TP layer measured (tiny's shape).
TP_SHAPE = {"hidden": 256, "seq": 128, "batch": 1, "layers": 1}


# ---- the arithmetic (tests/integration/test_reproduce_math.py) ----

def ring_factor(n):
    """Bytes on the wire per byte of an allreduce, per rank: 2(n-1)/n (nccl-tests' busbw factor)."""
    return 2.0 * (n - 1) / n


def layer_flops(b, s, h):
    """Forward + backward FLOPs of one layer: 3 x (2bs*12h^2 + 4bs^2h) (docs/plan.md)."""
    return 3.0 * (24.0 * b * s * h * h + 4.0 * b * s * s * h)


def interp_log(points, x):
    """y at x from (x, y) points, linear in log x; clamped to the ends."""
    pts = sorted(p for p in points if p[0] > 0 and p[1] > 0)
    if not pts:
        raise ValueError("no points")
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if x <= x1:
            f = (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + f * (y1 - y0)
    return pts[-1][1]


def grad_bytes_for_ratio(ratio, compute_s, busbw_at, n, align=1024):
    """Gradient bytes S whose ring allreduce takes `ratio` x compute_s, at busbw_at(S) bytes/s:
    t = S * 2(n-1)/n / busbw, solved by fixed-point iteration (busbw depends on S)."""
    s = ratio * compute_s * busbw_at(1 << 20) / ring_factor(n)
    for _ in range(30):  # damped: a noisy busbw curve must not make it oscillate
        s = 0.5 * s + 0.5 * ratio * compute_s * busbw_at(s) / ring_factor(n)
    return max(align, int(round(s / align)) * align)


def pipe_efficiency(m, p):
    return m / (m + p - 1)


def micro_batches_for_efficiency(p, target):
    """The m whose m/(m+p-1) is nearest `target` (p = 8: 32 for 32/39; p = 2: 5)."""
    if p <= 1:
        return 1
    exact = target * (p - 1) / (1 - target)
    cands = {max(1, math.floor(exact)), max(1, math.ceil(exact))}
    return min(sorted(cands), key=lambda m: abs(pipe_efficiency(m, p) - target))


def verdict(measured, document):
    """reproduced when measured is within 15% of the document's figure, else differs."""
    if measured is None or document in (None, 0) or not math.isfinite(measured):
        return "differs"
    return "reproduced" if abs(measured / document - 1) <= TOLERANCE else "differs"


def tp_comm_fraction(t, layers, b, s, h, dsize, alpha_s, bw_Bps, compute1_s):
    """Megatron TP: per layer 4 ring allreduces of b*s*h elements (8(t-1) latency terms,
    8bsh(t-1)/t elements per rank) over the compute of one rank, compute1_s / t."""
    if t <= 1:
        return 0.0
    comm = layers * (8 * (t - 1) * alpha_s + 8 * b * s * h * (t - 1) / t * dsize / bw_Bps)
    return comm / (compute1_s / t)


def largest_t_under(limit, frac_of_t, candidates=(1, 2, 4, 8, 16, 32, 64)):
    """Largest t of `candidates` with frac_of_t(t) < limit (1 when none)."""
    best = 1
    for t in candidates:
        if frac_of_t(t) < limit:
            best = t
    return best


def crossing(points, level):
    """The x at which y (rising with x) first reaches `level`, linear between points; None if never."""
    pts = sorted(points)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if y0 < level <= y1 and y1 != y0:
            return x0 + (level - y0) * (x1 - x0) / (y1 - y0)
    if pts and pts[0][1] >= level:
        return pts[0][0]
    return None


# ---- reading a run ----

def read_rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(l for l in f if not l.startswith("#")))


def num(row, key, default=None):
    try:
        v = float(row.get(key, ""))
        return v if math.isfinite(v) else default
    except (TypeError, ValueError):
        return default


def allreduce_busbw(out, n):
    """(bytes, busbw B/s) of the run's world allreduce rows (the collectives over all ranks, and the
    documents' all-reduce sweep: the large sizes --reproduce adds)."""
    rows = []
    for role in ("collectives over all ranks", "documents' all-reduce sweep"):
        if os.path.exists(manifest.output(out, role)):
            rows += read_rows(manifest.output(out, role))
    pts = [(num(r, "bytes"), num(r, "busbw_GBps", 0) * 1e9) for r in rows
           if r.get("collective") == "allreduce" and r.get("group", "world") == "world" and num(r, "nranks") == n]
    pts = [p for p in pts if p[0] and p[1] > 0]
    if not pts:
        raise LookupError("%s has no allreduce rows on %d ranks"
                          % (os.path.basename(manifest.output(out, "collectives over all ranks")), n))
    return pts


def gemm_rates(out):
    """{size: GFLOP/s} of the compute rate's gemm rows."""
    return {int(num(r, "size")): num(r, "rate") for r in read_rows(manifest.output(out, "compute rate"))
            if r.get("test") == "gemm" and num(r, "rate")}


def nearest_rate(rates, size):
    return rates[min(rates, key=lambda k: abs(math.log(k / size)))]


def layer_efficiency(out, rates):
    """The run's dp_allreduce layers' GFLOP/s over the GEMM rate at their hidden size: what real
    layers (attention, softmax, norms) reach of a square GEMM, and their (hidden, seq). 1 and
    256 x 128 when the run has none."""
    try:
        rows = [r for r in read_rows(manifest.output(out, "data parallel")) if num(r, "gflops") and num(r, "hidden")]
    except OSError:
        rows = []
    if not rows:
        return 1.0, "no dp_allreduce rows: layers assumed at the GEMM rate", 256, 128
    eff = sorted(num(r, "gflops") / nearest_rate(rates, num(r, "hidden")) for r in rows)
    med = eff[len(eff) // 2]
    return (med, "layers of this shape ran at %.0f%% of the GEMM rate in this run's dp_allreduce" % (100 * med),
            int(num(rows[0], "hidden")), int(num(rows[0], "seq")))


# Bytes per element of every name pb_dtype_parse accepts (tp_layer writes float, bfloat16 or half).
DTYPE_BYTES = {"float": 4, "float32": 4, "fp32": 4, "f32": 4, "bfloat16": 2, "bf16": 2, "half": 2, "float16": 2,
               "fp16": 2, "int32": 4, "int": 4}


def dtype_bytes(name):
    try:
        return DTYPE_BYTES[(name or "").lower()]
    except KeyError:
        raise ValueError("dtype '%s' is not one of %s" % (name, ", ".join(DTYPE_BYTES))) from None


def read_cluster(path):
    vals = {}
    for line in open(path):
        line = line.split("#", 1)[0]
        if "=" in line:
            k, v = line.split("=", 1)
            vals[k.strip()] = v.strip()
    return vals


# ---- setup ----

def bucket_mb_for(grad_bytes):
    """DDP-style buckets for the bucketing row: a quarter of the gradient each (4 buckets to overlap), in whole
    MiB, at least 1 (dp_allreduce refuses --bucket-mb 0)."""
    return max(1, int(grad_bytes / 4 / 1048576))


def setup(out, n):
    d = os.path.join(out, "reproduce")
    os.makedirs(d, exist_ok=True)
    plan = {"nranks": n}
    # DP: compute from the GEMM rate (compute_probe) x the layers' measured share of it.
    rates = gemm_rates(out)
    eff, eff_note, h, s = layer_efficiency(out, rates)
    # Enough layers of the run's shape for ~30 ms of compute: long against the timer and the noise.
    layers = max(2, math.ceil(0.03 * nearest_rate(rates, h) * 1e9 * eff / layer_flops(1, s, h)))
    flops = layers * layer_flops(1, s, h)
    compute_s = flops / (nearest_rate(rates, h) * 1e9 * eff)
    model = ["--model", "tiny", "--layers", str(layers), "--hidden", str(h), "--seq", str(s)]
    bw = allreduce_busbw(out, n)
    busbw_at = lambda x: interp_log(bw, x)  # noqa: E731
    ratios = [DP_RATIO] + DP_SCAN
    sizes = [grad_bytes_for_ratio(r, compute_s, busbw_at, n) for r in ratios]
    bucket_mb = bucket_mb_for(sizes[0])
    plan["dp"] = {"ratios": ratios, "sweep_bytes": sizes, "compute_s": compute_s, "flops": flops,
                  "gemm_gflops": nearest_rate(rates, h), "layer_efficiency": eff, "note": eff_note,
                  "busbw_GBps": [busbw_at(x) / 1e9 for x in sizes], "bucket_mb": bucket_mb,
                  "shape": "tiny L=%d h=%d s=%d" % (layers, h, s)}
    # The document's ratio: the sweep's prediction of its size starts dp_allreduce's own search
    # (--target-ratio), whose probes are the no-overlap step itself, in the step's process; the
    # nearest probe is the row. 20 iterations: the overhead is about a ninth of the times it comes from.
    write_args(d, "documents' DP", ["--overlap", "none,bucket"] + model + [
        "--target-ratio", "%.6g" % DP_RATIO, "--grad-bytes", str(sizes[0]), "--bucket-mb", str(bucket_mb),
        "-n", "20", "-w", "2"])
    plan["dp"]["model_args"] = model
    # PP: as many stages as the world allows (up to 8), m nearest 32/39, and m = 32.
    p = min(n, PP_DOC[0])
    m = micro_batches_for_efficiency(p, PP_EFF)
    plan["pp"] = {"stages": p, "micro_batches": [m, PP_DOC[1]]}
    # One layer a stage: its compute still dwarfs a 128 KiB transfer, the efficiency
    # m/(m+p-1) does not depend on it, and a quiet machine runs each configuration's 4
    # steps in about a second. The cap keeps a loaded one's two configurations (and their
    # validation) inside --quick's 90 s step limit.
    write_args(d, "documents' PP", ["--schedule", "1f1b", "--stages", str(p), "--micro-batches", "%d,%d" % (m, PP_DOC[1]),
                               "--model", "tiny", "--layers", str(p), "--hidden", "256", "--seq", "128",
                               "-n", "3", "-w", "1", "--max-seconds-per-size", "15"])
    # TP: one Megatron layer on every rank.
    plan["tp"] = dict(TP_SHAPE, tp=n)
    write_args(d, "documents' TP", ["--tp", str(n), "--tp-comm", "allreduce", "--model", "tiny",
                               "--hidden-list", str(TP_SHAPE["hidden"]), "--seq", str(TP_SHAPE["seq"]),
                               "--layers", str(TP_SHAPE["layers"]), "-n", "5", "-w", "1"])
    with atomic_file.replace(os.path.join(d, "plan.json")) as f:
        json.dump(plan, f, indent=2)
    return plan


def scan_sizes(out, plan, align=1024):
    """The scan's gradient sizes and where they come from: DP_SCAN's ratios scaled from the size
    repro_dp ran and the comm/compute its own loop measured (the all-reduce's time is close to
    linear in its size at these megabytes), or the sweep's sizes when repro_dp left no row."""
    path = manifest.output(out, "documents' DP")
    rows = read_rows(path) if os.path.exists(path) else []
    main = next((r for r in rows if r.get("overlap") == "none" and num(r, "target_ratio") is not None
                 and abs(num(r, "target_ratio") - DP_RATIO) <= 1e-6), None)
    g, pred = (num(main, "grad_bytes"), num(main, "predicted_overhead")) if main else (None, None)
    if g and pred and pred > 0:
        return ([max(align, int(round(g * q / pred / align)) * align) for q in DP_SCAN],
                "scaled from repro_dp's %d B at comm/compute %.4f" % (g, pred))
    return plan["dp"]["sweep_bytes"][1:], "the sweep's sizes (%s has no overlap=none row at 0.112)" % (
        os.path.basename(path))


def scan_setup(out):
    """repro_dp_scan's arguments, once repro_dp has measured: the scan needs no search (each row's
    own loop measures the comm/compute that is its x), but its sizes must straddle the 20% line,
    which the sweep's busbw alone predicts too loosely."""
    d = os.path.join(out, "reproduce")
    with open(os.path.join(d, "plan.json")) as f:
        plan = json.load(f)
    sizes, source = scan_sizes(out, plan)
    plan["dp"]["scan_bytes"], plan["dp"]["scan_source"] = sizes, source
    write_args(d, "documents' DP scan", ["--overlap", "none"] + plan["dp"]["model_args"] + [
        "--grad-bytes", ",".join(str(x) for x in sizes), "-n", "8", "-w", "2"])
    with atomic_file.replace(os.path.join(d, "plan.json")) as f:
        json.dump(plan, f, indent=2)


def write_args(d, role, args):
    """The arguments of the step playing ROLE, one a line, where the manifest reads them (chosen_args)."""
    with atomic_file.replace(os.path.join(d, manifest.by_role(role).name + ".args")) as f:
        f.write("\n".join(args) + "\n")


# ---- write ----

def fmt(v):
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    return "%.6g" % v


def row(figure, unit, doc, formula, measured, verdict_, config, note):
    ratio = measured / doc if measured is not None and doc else None
    return {"figure": figure, "unit": unit, "document_value": fmt(doc), "formula_value": fmt(formula),
            "measured_value": fmt(measured), "ratio": fmt(ratio), "verdict": verdict_, "configuration": config,
            "note": note}


BUSY_OTHERS, BUSY_STEAL = 0.10, 0.05  # shares of the node's CPU time above which a measurement is not judged


def load_of(path):
    """(others, steal) shares from a result CSV's "# note: load: ..." line (pb_bench_note_load); None without one."""
    try:
        with open(path) as f:
            for line in f:
                m = re.match(r"^# note: load: other processes used (\d+)% .*steal (\d+)%", line)
                if m:
                    return int(m.group(1)) / 100, int(m.group(2)) / 100
    except OSError:
        pass
    return None


def busy_reason(load):
    """Why the machine was too busy to judge a timing, or None when it was quiet (or not known)."""
    if load is None:
        return None
    others, steal = load
    if others > BUSY_OTHERS or steal > BUSY_STEAL:
        return ("machine busy: other processes used %.0f%% of the node's CPU time and the hypervisor %.0f%% during "
                "the measurement (judged only under %.0f%% and %.0f%%)"
                % (100 * others, 100 * steal, 100 * BUSY_OTHERS, 100 * BUSY_STEAL))
    return None


def node_cores_and_ranks(out):
    """(cores of a node, most ranks on one node) from the DP measurement's own metadata (its JSON),
    else the run's meta.json (written when the run ends); (None, None) when neither says."""
    for path, key in ((manifest.output(out, "documents' DP", ".json"), "meta"), (os.path.join(out, "meta.json"), "machine")):
        try:
            with open(path) as f:
                machine = json.load(f).get(key, {})
            return int(machine["topology"]["cores"]), max(len(h["ranks"]) for h in machine["hosts"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            continue
    return None, None


def bucketing_verdict(hidden, cores, ranks_on_node):
    """(verdict, why) of the bucketing row. Bucketing hides the all-reduce only where
    its progress runs beside the backward compute: a core of its own per rank on a
    CPU. With fewer than 2 cores per rank the all-reduce thread takes cores from the
    compute and the hidden share says nothing about bucketing: not judged."""
    if cores is None or ranks_on_node is None:
        return "not judged", "the run's meta.json does not say how many cores a node has for its ranks"
    if cores < 2 * ranks_on_node:
        return "not judged", ("%d cores for %d ranks on a node: the all-reduce thread competes with the backward "
                              "compute for the cores, so bucketing can only add work here (it needs a core beside "
                              "each rank's compute, as NCCL runs beside the GPU's)" % (cores, ranks_on_node))
    return ("reproduced" if hidden is not None and hidden > 0 else "differs"), ""


SEARCH_NOTE = re.compile(r"^# note: target comm/compute (\S+): grad_bytes (\d+) chosen in this run after (\d+) probes? "
                         r".*there comm/compute ([0-9.eE+-]+)( \(not within)?")


def searches(path):
    """{target ratio: (bytes, probes, comm/compute at that probe, converged)} from dp_allreduce's
    --target-ratio notes."""
    found = {}
    try:
        with open(path) as f:
            for line in f:
                m = SEARCH_NOTE.match(line)
                if m:
                    found[float(m.group(1))] = (int(m.group(2)), int(m.group(3)), float(m.group(4)), not m.group(5))
    except (OSError, ValueError):
        pass
    return found


def at_ratio(table, ratio):
    """The entry of {target ratio: x} for `ratio` (the CSV and the notes print it rounded)."""
    return next((v for k, v in table.items() if abs(k - ratio) <= 1e-6 * ratio), None)


def skew_note(r):
    """The ranks' compute skew of a dp_allreduce row, as a share of its compute: a step without
    overlap waits for each iteration's slowest rank, which the documents' model leaves out."""
    comp, slowest = num(r, "compute_us"), num(r, "compute_us_slowest")
    if not comp or slowest is None:
        return "no compute_us_slowest column"
    return ("the ranks' compute skew (each iteration's slowest rank over the slowest mean) added %.3f of the compute"
            % ((slowest - comp) / comp))


def step_overhead(r):
    """A dp_allreduce row's overhead from inside its steps (overhead_instep: the median over iterations of
    the step minus its own compute, so the compute's noise between two phases cancels), else from its
    paired iterations (the step minus the separate compute phase), else from the means."""
    for col in ("overhead_instep", "overhead_paired"):
        if num(r, col) is not None:
            return num(r, col)
    return num(r, "overhead")


def dp_rows(out, plan):
    p = plan["dp"]
    path = manifest.output(out, "documents' DP")
    rows = read_rows(path)
    targets = {}
    for r in rows:
        if num(r, "target_ratio") is not None:
            targets.setdefault(num(r, "target_ratio"), {})[r["overlap"]] = r
    found = searches(path)
    n = plan["nranks"]
    res = []
    main = (at_ratio(targets, DP_RATIO) or {}).get("none")
    bucket = (at_ratio(targets, DP_RATIO) or {}).get("bucket")
    search = at_ratio(found, DP_RATIO)
    cfg = "%s, grad_bytes=%s on %d ranks" % (p["shape"], main["grad_bytes"] if main else "-", n)
    busy = busy_reason(load_of(path))
    if main:
        ov, insitu = step_overhead(main), num(main, "predicted_overhead", 0)
        paired = num(main, "overhead_paired")
        searched = ("searched in this run: %d probes, the nearest %.4f%s" % (search[1], search[2], "" if search[3] else
                    " (not within 2%)") if search else "no search note")
        res.append(row("DP overhead (comm/compute, no overlap)", "fraction", DP_RATIO, DP_RATIO, ov,
                       "not judged" if busy else verdict(ov, DP_RATIO),
                       cfg, (busy + "; " if busy else "") + "gradient size chosen for comm/compute %.3f by probing "
                       "the no-overlap step in dp_allreduce's own process (%s); in the step's loop "
                       "comm/compute %.3f, and the step added %.3f (its all-reduce after its own compute, the median "
                       "of its iterations; against the separate compute phase %s; from the means %.3f); the sweep "
                       "(busbw %.2f GB/s, compute %.1f ms from GEMM %.1f GFLOP/s x %.2f, %s) predicted %d B"
                       % (DP_RATIO, searched, insitu, ov or 0, "-" if paired is None else "%.3f" % paired,
                          num(main, "overhead", 0),
                       p["busbw_GBps"][0], p["compute_s"] * 1e3, p["gemm_gflops"], p["layer_efficiency"], p["note"],
                       p["sweep_bytes"][0])))
        res.append(row("DP composition: step - compute against comm, no overlap", "fraction", None, insitu, ov,
                       "not judged" if busy else verdict(ov, insitu), cfg,
                       (busy + "; " if busy else "") + "the documents' model, step = compute + comm, inside one run: "
                       "measured overhead / comm/compute of the same loop = %s; %s" % (
                           fmt(ov / insitu if ov is not None and insitu else None), skew_note(main))))
    else:
        res.append(row("DP overhead (comm/compute, no overlap)", "fraction", DP_RATIO, DP_RATIO, None, "differs", cfg,
                       "%s has no overlap=none row for target ratio %.3f" % (os.path.basename(path), DP_RATIO)))
    if main and bucket:
        hid = 1 - num(bucket, "exposed_us", 0) / num(main, "exposed_us", 1) if num(main, "exposed_us", 0) > 0 else None
        judged, why = bucketing_verdict(hid, *node_cores_and_ranks(out))
        res.append(row("DP bucketing: share of the exposed all-reduce hidden", "fraction", None, None,
                       hid if judged != "not judged" else None, judged, cfg + ", --overlap bucket",
                       "1 - exposed(bucket)/exposed(none)%s; bucket overhead %.3f vs none %.3f; buckets %s of %s MiB"
                       % (": not judged, " + why + ("; it measured %.2f" % hid if hid is not None else "")
                          if judged == "not judged" else "", num(bucket, "overhead", 0), num(main, "overhead", 0),
                          bucket.get("buckets"), p["bucket_mb"])))
    # The scan: x is the comm/compute each row's own loop measured, not the ratio it was sized for.
    pts = [(num(main, "predicted_overhead"), step_overhead(main))] if main else []
    scan_path = manifest.output(out, "documents' DP scan")
    scan_busy = busy_reason(load_of(scan_path)) if os.path.exists(scan_path) else ""
    for r in (read_rows(scan_path) if os.path.exists(scan_path) else []):
        pred, ov = num(r, "predicted_overhead"), step_overhead(r)
        if r.get("overlap") != "none" or pred is None:
            continue
        pts.append((pred, ov))
        eff = 1 / (1 + ov) if ov is not None and ov > -1 else None
        res.append(row("DP 20%% line scan: comm/compute %.2f" % pred, "fraction", None, pred, ov,
                       "not judged" if scan_busy else
                       "reproduced" if ov is not None and (ov < RULE) == (pred < RULE) and pred != RULE else
                       verdict(ov, pred),
                       "grad_bytes=%s on %d ranks" % (r["grad_bytes"], n),
                       (scan_busy + "; " if scan_busy else "") +
                       "measured overhead against the comm/compute of the same loop; scaling efficiency "
                       "1/(1+overhead) = %s; %s the 20%% rule" % (fmt(eff), "under" if ov is not None and ov < RULE
                                                                  else "over")))
    x = crossing([q for q in pts if q[0] is not None and q[1] is not None], RULE)
    why = ("linear between the scan points" if x is not None else
           "measured overhead never reached 20% in the scan" if pts else
           "%s has no rows" % os.path.basename(scan_path))
    busy_any = busy or scan_busy
    res.append(row("DP: comm/compute where measured overhead crosses 20%", "fraction", RULE, RULE, x,
                   "not judged" if busy_any else verdict(x, RULE) if x is not None else "differs",
                   "scan %s" % ",".join("%.3g" % q[0] for q in sorted(pts) if q[0] is not None),
                   (busy_any + "; " if busy_any else "") + why))
    return res


def pp_rows(out, plan, binary_dir):
    p = plan["pp"]["stages"]
    m_doc, m32 = plan["pp"]["micro_batches"]
    rows = [r for r in read_rows(manifest.output(out, "documents' PP")) if r.get("schedule") == "1f1b"]
    by = {int(num(r, "micro_batches")): r for r in rows}
    res = []
    for m, name in ((m_doc, "PP efficiency, m nearest 32/39"), (m32, "PP efficiency, m = 32")):
        r = by.get(m)
        f = pipe_efficiency(m, p)
        e = num(r, "efficiency") if r else None
        v = verdict(e, PP_EFF)
        note = "1f1b; formula m/(m+p-1) = %.3f; measured/formula %s" % (f, fmt(e / f if e else None))
        if m == m32 and p != PP_DOC[0]:
            note += "; p=%d here, not 8: the formula itself gives %.3f" % (p, f)
        res.append(row(name, "fraction", PP_EFF, f, e, v, "p=%d m=%d" % (p, m), note))
    r = by.get(m32) or by.get(m_doc)
    if r and p >= 1:
        # The same model cut in 8 stages instead of p: each stage does p/8 of a stage's work.
        tf, tb = num(r, "t_fwd_us") * p / 8, num(r, "t_bwd_us") * p / 8
        msg = p2p_time_us(out, num(r, "act_bytes", 0))
        sim = run_plan(binary_dir, ["--pp-simulate", "8,32,%.3f,%.3f,%.3f" % (tf, tb, msg), "--schedule", "1f1b"])
        e = sim.get("efficiency")
        res.append(row("PP efficiency p=8 m=32 (simulated)", "fraction", PP_EFF, PP_EFF, e, "simulated",
                       "p=8 m=32 1f1b, stage times from p=%d" % p,
                       "plan --pp-simulate with t_fwd %.1f us, t_bwd %.1f us (measured x %d/8), transfer %.1f us "
                       "(p2p_sweep)" % (tf, tb, p, msg)))
    return res


def p2p_time_us(out, nbytes):
    try:
        pts = [(num(r, "bytes"), num(r, "time_us_median") or num(r, "time_us"))
               for r in read_rows(manifest.output(out, "point-to-point")) if r.get("mode") == "latency"]
        return interp_log(pts, max(1, nbytes)) * max(1.0, nbytes / max(q[0] for q in pts))
    except (OSError, ValueError):
        return 0.0


def run_plan(binary_dir, args):
    text = subprocess.run([os.path.join(binary_dir, "plan")] + args, capture_output=True, text=True, check=True).stdout
    words = text.split()
    return {k: float(v) for k, v in zip(words, words[1:]) if k in ("step_us", "efficiency")}


def tp_rows(out, plan):
    r = read_rows(manifest.output(out, "documents' TP"))[0]
    t, b, s, h, layers = (int(num(r, k)) for k in ("tp", "batch", "seq", "hidden", "layers"))
    dsize = dtype_bytes(r.get("dtype"))
    formula = 8 * b * s * h * (t - 1) / t * dsize  # per layer, as tp_layer's comm_bytes_per_rank
    meas = num(r, "comm_bytes_per_rank")
    cfg = "t=%d b=%d s=%d h=%d layers=%d %s" % (t, b, s, h, layers, r.get("dtype"))
    res = [row("TP bytes per rank per layer, 8bsh(t-1)/t", "B", formula, formula, meas, verdict(meas, formula), cfg,
               "the document states the formula: document_value = formula x %d-byte elements" % dsize)]
    bibw = max((num(q, "bw_GBps", 0) for q in read_rows(manifest.output(out, "point-to-point")) if q.get("mode") == "bibw"),
               default=0)
    ms = 5e9 / (bibw * 1e9) * 1e3 if bibw else None
    res.append(row("TP: 5 GB of activations", "ms", 10.0, 5e9 / 600e9 * 1e3, ms, verdict(ms, 10.0),
                   "5 GB in and out at this machine's p2p bibw %.2f GB/s" % bibw,
                   "document: under 10 ms over NVLink's 600 GB/s aggregate; this machine's link is %.0fx slower"
                   % (600 / bibw if bibw else float("nan"))))
    cl = os.path.join(out, "cluster.txt")
    compute1 = num(r, "unsharded_us", 0) * 1e-6 or num(r, "compute_us", 0) * t * 1e-6
    if os.path.exists(cl) and compute1 > 0:
        c = read_cluster(cl)
        a, bw = float(c["intra_alpha_us"]) * 1e-6, float(c["intra_bw_GBps"]) * 1e9
        # one layer: unsharded_us and compute_us are per layer
        frac = lambda tt: tp_comm_fraction(tt, 1, b, s, h, dsize, a, bw, compute1)  # noqa: E731
        best = largest_t_under(RULE, frac)
        res.append(row("TP: largest t with comm under 20% of compute", "ranks", None, None, best, "simulated",
                       cfg, "model with this run's fitted alpha %.2f us, B %.2f GB/s (cluster.txt) and the measured "
                       "unsharded layer %.0f us / t; measured comm_fraction at t=%d: %.3f (model %.3f)"
                       % (a * 1e6, bw / 1e9, compute1 * 1e6, t, num(r, "comm_fraction", 0), frac(t))))
    else:
        res.append(row("TP: largest t with comm under 20% of compute", "ranks", None, None, None, "skipped", cfg,
                       "needs cluster.txt (plan --calibrate) and the unsharded layer time"))
    return res


def hybrid_rows(out, plan):
    path = manifest.output(out, "3D parallel")
    if plan["nranks"] % 4 or not os.path.exists(path):
        return [row("3D: TP inside a node beats other placements", "rank", 1, 1, None, "skipped", "TP 2 x PP 2 x DP n/4",
                    "needs a world divisible by 4 ranks; this run has %d" % plan["nranks"])]
    rows = read_rows(path)
    measured = sorted(rows, key=lambda q: num(q, "step_us", float("inf")))
    # The model's view: TP on an intra-node link costs least, then PP, then DP.
    inter = lambda q: tuple(q.get(k) != "intra" for k in ("tp_link", "pp_link", "dp_link"))  # noqa: E731
    model = sorted(rows, key=inter)
    rank = [q["placement"] for q in measured].index("tp-inner") + 1 if any(q["placement"] == "tp-inner" for q in rows) else None
    tie = len({inter(q) for q in rows}) == 1
    return [row("3D: TP inside a node beats other placements", "rank", 1, 1, rank,
                "reproduced" if rank == 1 else "differs", "measured: %s; plan: %s" % (
                    " < ".join(q["placement"] for q in measured), " < ".join(q["placement"] for q in model)),
                "every axis intra-node here: the model ties the placements" if tie else "measured step_us ranking")]


def write(out, binary_dir):
    plan = json.load(open(os.path.join(out, "reproduce", "plan.json")))
    rows = []
    for name, fn in (("dp", lambda: dp_rows(out, plan)), ("pp", lambda: pp_rows(out, plan, binary_dir)),
                     ("tp", lambda: tp_rows(out, plan)), ("3d", lambda: hybrid_rows(out, plan))):
        try:
            rows += fn()
        except (OSError, LookupError, ValueError, IndexError, subprocess.CalledProcessError) as e:
            rows.append(row("%s figures" % name.upper(), "", None, None, None, "skipped", "",
                            "its measurement is missing or unreadable: %s" % e))
    path = os.path.join(out, "reproduce.csv")
    with atomic_file.replace(path, newline="") as f:
        f.write("# parabench reproduce\n# date: %s\n# nranks: %d\n"
                % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), plan["nranks"]))
        w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        f.write("# complete\n")
    for r in rows:
        print("%-58s %-10s doc %-10s measured %-10s %s" % (r["figure"][:58], r["verdict"], r["document_value"] or "-",
                                                           r["measured_value"] or "-", r["configuration"]))
    return 0


def main(argv):
    if len(argv) != {"setup": 4, "scan-setup": 3, "write": 4}.get(argv[1] if len(argv) > 1 else "", 0):
        print("usage: reproduce.py setup RESULTS NP | scan-setup RESULTS | write RESULTS BIN_DIR", file=sys.stderr)
        return 2
    out = argv[2]
    if not os.path.isdir(out):
        print("reproduce.py: %s is not a directory" % out, file=sys.stderr)
        return 3
    try:
        if argv[1] == "setup":
            setup(out, int(argv[3]))
            return 0
        if argv[1] == "scan-setup":
            scan_setup(out)
            return 0
        return write(out, argv[3])
    except (OSError, LookupError, ValueError) as e:
        print("reproduce.py: %s: %s" % (argv[1], e), file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
