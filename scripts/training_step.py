"""The training step of the run's model, assembled from what the run measured
(docs/models.md, "The step, predicted from measured parts").

For the model and the job (t, p, d) the run recorded (meta.json "model"), per
micro-batch and per layer, from the run's own rows:
  C  tp_layer's compute_us at the model's h and s (all-reduce mode): forward
     and backward of one layer's shard
  T  tp_layer's comm_us there: the layer's TP all-reduces, exposed (Megatron's
     are on the critical path)
  X  one PP message (b*s*h*es bytes) at p2p_sweep's bandwidth, sent forward and
     its gradient back: 2 a micro-batch a boundary
  R  dp_allreduce's flat all-reduce of a rank's gradient (comm_us, overlap
     none, the largest gradient)
With L_s = ceil(L/p) layers a stage and m micro-batches a pipeline:
  slot     = L_s (C + T) + 2 X          (X only with p > 1)
  pipeline = (m + p - 1) slot           (GPipe and 1F1B have the same bubble)
  DP       = max(0, R - L_s C * 2/3)    (the all-reduce overlaps the backward of
                                         the last micro-batch, as Megatron's
                                         gradient reduction does)
  step     = pipeline + DP
broken down as compute m L_s C, exposed TP m L_s T, PP transfers 2 m X,
bubble (p - 1) slot, exposed DP. MFU = the model's FLOPs a GPU does in a step
(m L_s layer FLOPs / t, scores included, the logit layer left out) over step
x the GPU's bf16 peak; on CPUs over the best GEMM rate compute_probe measured.
"""
import json
import math
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from suite import manifest, models, results_csv, shapes  # noqa: E402


def _rows(out, role):
    """The rows of the step playing ROLE (suite/manifest.py)."""
    return results_csv.rows(manifest.output(out, role), "training_step")


def _num(r, key):
    try:
        v = float(r.get(key, ""))
    except (TypeError, ValueError):
        return float("nan")
    return v


def _meta(out):
    try:
        with open(os.path.join(out, "meta.json")) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _tp_layer(out, m):
    """(C, T) in us at the model's own layer, or None."""
    at = [r for r in _rows(out, "tensor parallel") if r.get("mode") == "allreduce" and _num(r, "hidden") == m["hidden"]
          and _num(r, "seq") == m["seq"]]
    if not at or not all(math.isfinite(_num(at[0], k)) for k in ("compute_us", "comm_us")):
        return None
    return _num(at[0], "compute_us"), _num(at[0], "comm_us")


def _pp_message_us(out, nbytes):
    """One message of nbytes at the bandwidth p2p_sweep measured at the largest size up to it (the
    largest measured when it is larger), inter-node rows first."""
    bw = [r for r in _rows(out, "point-to-point") if r.get("mode") == "bw" and _num(r, "bw_GBps") > 0]
    inter = [r for r in bw if r.get("link_class") == "inter"]
    bw = inter or bw
    if not bw:
        return None
    below = [r for r in bw if _num(r, "bytes") <= nbytes] or bw
    best = max(below, key=lambda r: _num(r, "bytes"))
    return nbytes / (_num(best, "bw_GBps") * 1e9) * 1e6


def _dp_allreduce_us(out):
    rows = [r for r in _rows(out, "data parallel") if r.get("overlap") == "none" and math.isfinite(_num(r, "comm_us"))]
    if not rows:
        return None, None
    big = max(rows, key=lambda r: _num(r, "grad_bytes"))
    return _num(big, "comm_us"), int(_num(big, "grad_bytes"))


def _peak(out, meta):
    """(FLOP/s, what it is): the GPU's bf16 peak on GPUs (meta.json's devices name them), else
    compute_probe's best measured rate."""
    devices = (meta.get("devices") or "").lower()  # "8 GPUs (NVIDIA H100 80GB HBM3, 80 GiB each)", "2 cores"
    for kind, spec in models.GPUS.items():
        if kind in devices:
            return spec["bf16_tflops"] * 1e12, f"{kind.upper()} bf16 peak"
    rates = [_num(r, "rate") for r in _rows(out, "compute rate") if r.get("test") == "gemm"]
    rates = [r for r in rates if math.isfinite(r) and r > 0]
    if not rates:
        return None, "no peak"
    return max(rates) * 1e9, "the best GEMM rate compute_probe measured"


def assemble(out):
    """The step's parts in seconds and its MFU, or None when the run lacks what it needs."""
    meta = _meta(out)
    rec = meta.get("model")
    if not rec:
        return None
    m = dict(rec["shape"], name=rec["name"], micro_batch=1)
    t, p, d = rec["job"]["tp"], rec["job"]["pp"], rec["job"]["dp"]
    es = 2 if rec.get("precision") == "bf16" else 4
    ct = _tp_layer(out, m) if t > 1 else None
    if not ct:
        return None
    C, T = ct
    X = _pp_message_us(out, m["micro_batch"] * m["seq"] * m["hidden"] * es) if p > 1 else 0.0
    R, grad = _dp_allreduce_us(out)
    if X is None or R is None:
        return None
    Ls = -(-m["layers"] // p)
    mb = shapes.micro_batches(m, d, ())[1]
    slot = Ls * (C + T) + 2 * X
    dp = max(0.0, R - Ls * C * 2 / 3)
    parts = {"compute": mb * Ls * C, "tp": mb * Ls * T, "pp_transfers": 2 * mb * X, "bubble": (p - 1) * slot,
             "dp": dp}
    step_us = (mb + p - 1) * slot + dp
    peak, peak_what = _peak(out, meta)
    flops = mb * Ls * models.layer_flops(m) / t
    return {"model": m["name"], "t": t, "p": p, "d": d, "m": mb, "layers_per_stage": Ls, "C_us": C, "T_us": T,
            "X_us": X, "R_us": R, "grad_bytes": grad, "step_us": step_us, "parts_us": parts,
            "mfu": flops / (step_us * 1e-6) / peak if peak else None, "peak_what": peak_what,
            "precision": rec.get("precision")}


def line(s):
    """The summary's first workload line."""
    parts = s["parts_us"]
    share = ", ".join(f"{k.replace('_', ' ')} {100 * v / s['step_us']:.0f}%" for k, v in parts.items())
    mfu = f", MFU {100 * s['mfu']:.1f}% of {s['peak_what']}" if s["mfu"] is not None else ""
    return (f"training step of {s['model']} at TP {s['t']} x PP {s['p']} x DP {s['d']}, {s['m']} micro-batches: "
            f"{s['step_us'] / 1e6:.3f} s from measured parts{mfu} ({share}); per-layer times scaled to a stage's "
            f"{s['layers_per_stage']} layers")


def plan_step(out, s, plan_bin):
    """The planner's step (s) for the same model and job from the run's calibrated cluster file, or None."""
    rec = _meta(out).get("model")
    cluster = os.path.join(out, "cluster.txt")
    if not rec or not os.path.exists(cluster) or not os.access(plan_bin, os.X_OK):
        return None
    spec = ["--model-file", rec["file"]] if rec.get("file") else ["--model", rec["name"]]
    cmd = [plan_bin, *spec, "--cluster", cluster, "--gpus", str(s["t"] * s["p"] * s["d"]), "--tp", str(s["t"]),
           "--pp", str(s["p"]), "--dp", str(s["d"]), "--global-batch", str(s["m"] * s["d"])]
    try:
        text = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.search(r"^\s*step = .* = ([0-9.]+) s$", text, re.M)
    return float(found.group(1)) if found else None
